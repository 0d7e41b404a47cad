package integrity

import (
	"fmt"
	"slices"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/casstore"
	"github.com/wacpd/wacpd/checkpointchain/chainstore"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/trail/traillog"
)

const claimSeed = `{"checkpoint_id":"cp-1","confidence":"high","digest":"blake3:` +
	`af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262","parent":null,` +
	`"status":"provisional","timestamp":"2026-11-25T00:00:00.000000001Z","type":"progress","workspace":"w-1"}`

// TestClaimFields: the body the daemon writes takes the fast path, and
// reads as the full decoder reads it; other forms do not take it.
func TestClaimFields(t *testing.T) {
	for _, body := range []string{claimSeed, `{"checkpoint_id":"c","parent":"p","workspace":"w"}`} {
		got, ok := claimFields([]byte(body))
		want, err := claimFull([]byte(body))
		if !ok || err != nil || got != want {
			t.Errorf("claimFields(%s) = %+v %v, full decode %+v %v", body, got, ok, want, err)
		}
	}
	for _, body := range []string{`{"checkpoint_id":1}`, `{"workspace":null}`, `{"checkpoint_id":"c", "type":"t"}`, `{"checkpoint_id":"\u0063"}`} {
		if got, ok := claimFields([]byte(body)); ok {
			t.Errorf("claimFields(%s) = %+v, want the full decoder", body, got)
		}
	}
	// claimOf reads both forms.
	for _, body := range []string{claimSeed, `{"checkpoint_id":"\u0063","digest":"blake3:af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"}`} {
		if cl, err := claimOf("e", []byte(body)); err != nil || cl.ID == "" {
			t.Errorf("claimOf(%s) = %+v, %v", body, cl, err)
		}
	}
}

// FuzzClaimOf: when the fast path reads a body, the full decoder reads the
// same claim from it.
func FuzzClaimOf(f *testing.F) {
	f.Add([]byte(claimSeed))
	f.Add([]byte(`{"checkpoint_id":"c","parent":"p","parent":"q"}`))
	f.Add([]byte(`{"workspace":null,"type":7}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		got, ok := claimFields(body)
		if !ok {
			return
		}
		want, err := claimFull(body)
		if err != nil || got != want {
			t.Fatalf("claimFields(%q) = %+v, full decode %+v %v", body, got, want, err)
		}
	})
}

// TestClaimWalkStartsAgain: when the trail's walk starts again from an
// entry it visited, the claims taken before it stay, in order, and those
// from it on are taken again, not twice.
func TestClaimWalkStartsAgain(t *testing.T) {
	db, err := badger.Open(badger.DefaultOptions("").WithInMemory(true).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	txn := db.NewTransaction(false)
	defer txn.Discard()
	w := &claimWalk{sc: chainstore.NewStoreCheck(txn, nil)}
	defer w.sc.Close()
	entry := func(seq uint64) traillog.Visited {
		body := fmt.Sprintf(`{"checkpoint_id":"cp-%d","digest":"%s","parent":null,"status":"final","type":"progress","workspace":"w"}`,
			seq, casstore.RefOf(fmt.Appendf(nil, "%d", seq)))
		return traillog.Visited{ID: fmt.Appendf(nil, "e%d", seq), EventType: []byte(trail.EventCheckpointCreated), Body: []byte(body)}
	}
	for _, seq := range []uint64{1, 2, 3, 4, 5, 3, 4, 5, 6} {
		w.visit(seq, entry(seq))
	}
	var got []string
	for _, cl := range w.sc.Claims() {
		got = append(got, cl.ID)
	}
	if want := []string{"cp-1", "cp-2", "cp-3", "cp-4", "cp-5", "cp-6"}; !slices.Equal(got, want) || !slices.Equal(w.seqs, []uint64{1, 2, 3, 4, 5, 6}) {
		t.Errorf("claims after a walk that starts again at 3 = %v at %v, want %v at 1..6", got, w.seqs, want)
	}
}
