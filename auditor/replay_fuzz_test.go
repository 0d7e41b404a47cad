package auditor_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"testing"

	"github.com/wacpd/wacpd/auditor"
	"github.com/wacpd/wacpd/trail"
)

// FuzzReplay feeds arbitrary input to Replay the two ways wacp reads a
// trail: as a bundle (BundleReader, which checks each line's canonical
// form) and as plain entry lines, which reach Replayer.Apply with any body.
// Nothing may panic, and a bundle that verifies (the golden one) replays
// without contradiction. Seeds: the golden bundle and its entries.
func FuzzReplay(f *testing.F) {
	data, err := os.ReadFile(goldenBundle)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	var entries [][]byte
	for _, l := range lines(data)[1:] {
		var m map[string]json.RawMessage
		if json.Unmarshal(l, &m) == nil && m["entry"] != nil {
			entries = append(entries, append(m["entry"], '\n'))
		}
	}
	f.Add(join(entries))
	f.Add([]byte(`{"event_type":"workspace_created","body":{"workspace_id":"a","parent":"nope"}}`))
	f.Add([]byte(`{"event_type":"checkpoint_created","body":{"workspace":1}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		// As a bundle. Replay checks no hashes, so a bundle may replay and
		// not verify, but not the other way round.
		if _, err := auditor.Replay(bundleEntries(data)); err != nil {
			if rep, verr := auditor.Verify(bytes.NewReader(data)); verr == nil && rep.OK {
				t.Fatalf("a bundle that verifies does not replay: %v", err)
			}
		}
		// As plain entry lines.
		r := auditor.NewReplayer()
		for _, l := range bytes.Split(data, []byte("\n")) {
			var e trail.Entry
			if json.Unmarshal(l, &e) != nil {
				continue
			}
			if err := r.Apply(e); err != nil && !errors.Is(err, auditor.ErrInconsistent) {
				var je *json.UnmarshalTypeError
				var se *json.SyntaxError
				if !errors.As(err, &je) && !errors.As(err, &se) {
					t.Fatalf("Apply(%s) = %v, want nil, ErrInconsistent or a JSON error", l, err)
				}
			}
		}
		if st := r.State(); st.Checkpoints() < 0 {
			t.Fatalf("State().Checkpoints() = %d", st.Checkpoints())
		}
	})
}

// bundleEntries yields the entries of the bundle in data, then the first
// error reading it.
func bundleEntries(data []byte) func(yield func(trail.Entry, error) bool) {
	return func(yield func(trail.Entry, error) bool) {
		br := auditor.NewBundleReader(bytes.NewReader(data))
		if _, err := br.Header(); err != nil {
			yield(trail.Entry{}, err)
			return
		}
		for {
			rec, err := br.Next()
			if err == io.EOF {
				return
			}
			if err != nil {
				yield(trail.Entry{}, err)
				return
			}
			if rec.Entry != nil && !yield(*rec.Entry, nil) {
				return
			}
		}
	}
}
