package checkpointchain_test

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/wacpd/wacpd/casstore"
	"github.com/wacpd/wacpd/checkpointchain"
)

// FuzzDecodeCheckpoint checks that Decode accepts exactly the canonical
// encodings: whatever it accepts re-encodes to the same bytes and carries
// their digest, and whatever it refuses is ErrNotCanonical. The seed corpus
// is in testdata/fuzz/FuzzDecodeCheckpoint (the golden encodings and broken
// variants); the golden files are added here too so a format change reaches
// the fuzzer at once.
func FuzzDecodeCheckpoint(f *testing.F) {
	for _, tt := range goldenCases {
		b, _ := readGolden(f, tt.name)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := checkpointchain.Decode(b)
		if err != nil {
			if !errors.Is(err, checkpointchain.ErrNotCanonical) {
				t.Fatalf("Decode(%q) error = %v, want one wrapping ErrNotCanonical", b, err)
			}
			return
		}
		again, err := checkpointchain.Encode(c)
		if err != nil {
			t.Fatalf("Encode(Decode(%q)) error = %v", b, err)
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("Encode(Decode(%q)) = %q, want the input", b, again)
		}
		if c.Digest != casstore.RefOf(b) {
			t.Fatalf("Decode(%q).Digest = %v, want %v", b, c.Digest, casstore.RefOf(b))
		}
		d, err := checkpointchain.Decode(again)
		if err != nil || !reflect.DeepEqual(d, c) {
			t.Fatalf("Decode is not stable on %q: %+v, %v, want %+v", b, d, err, c)
		}
	})
}

// FuzzDecodeRequest checks that DecodeRequest never panics and refuses only
// with invalid_structure, and that a decoded request either builds (into a
// checkpoint whose bytes decode back to it) or is rejected with one of the
// spec's reasons, never another error.
func FuzzDecodeRequest(f *testing.F) {
	f.Add([]byte(okReq("")))
	tax := loadReviewTaxonomy(f)
	reasons := map[checkpointchain.Reason]bool{
		checkpointchain.ReasonPermissionDenied: true, checkpointchain.ReasonInvalidType: true,
		checkpointchain.ReasonInvalidStructure: true, checkpointchain.ReasonInvalidParent: true,
		checkpointchain.ReasonWorkspaceNotActive: true,
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := checkpointchain.DecodeRequest(data)
		if err != nil {
			var rj *checkpointchain.Rejection
			if !errors.As(err, &rj) || rj.Reason != checkpointchain.ReasonInvalidStructure {
				t.Fatalf("DecodeRequest(%q) error = %v, want a %s rejection", data, err, checkpointchain.ReasonInvalidStructure)
			}
			return
		}
		for _, a := range []checkpointchain.Author{worker, reviewer} {
			c, b, err := checkpointchain.Build(r, a, checkpointchain.Chain{}, tax, cpID1, ts1)
			if err != nil {
				var rj *checkpointchain.Rejection
				if !errors.As(err, &rj) || !reasons[rj.Reason] {
					t.Fatalf("Build(DecodeRequest(%q)) error = %v, want a *Rejection with a spec reason", data, err)
				}
				if rj.Reason == checkpointchain.ReasonWorkspaceNotActive {
					t.Fatalf("Build(DecodeRequest(%q)) by an active workspace = %v", data, err)
				}
				continue
			}
			checkBuilt(t, r, a, c, b, cpID1, ts1)
		}
	})
}
