package placement

import (
	"errors"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// TestRecord: a record decodes to itself; anything but the form encode
// writes, or a record no holder could write, is not a lease.
func TestRecord(t *testing.T) {
	r := record{Holder: "d1", Epoch: 7, Expires: t0.Add(1500 * time.Millisecond)}
	b := r.encode()
	if want := `{"holder":"d1","epoch":7,"expires":"2026-03-01T12:00:01.5Z"}`; string(b) != want {
		t.Fatalf("encode = %s, want %s", b, want)
	}
	got, err := decodeRecord(b, 8)
	if err != nil || got.Holder != r.Holder || got.Epoch != r.Epoch || !got.Expires.Equal(r.Expires) {
		t.Fatalf("decodeRecord(%s) = %+v, %v; want %+v", b, got, err, r)
	}
	if _, err := decodeRecord([]byte(`{"holder":"d1","epoch":0,"expires":"2026-03-01T12:00:00Z"}`), 1); err != nil {
		t.Errorf("first write of a tenure: %v", err)
	}

	bad := []string{
		``,
		`null`,
		`[]`,
		`"d1"`,
		`{}`,
		`{"holder":"d1","epoch":7}`,
		`{"holder":"","epoch":7,"expires":"2026-03-01T12:00:01.5Z"}`,
		`{"holder":"d 1","epoch":7,"expires":"2026-03-01T12:00:01.5Z"}`,
		`{"holder":"d\u00e91","epoch":7,"expires":"2026-03-01T12:00:01.5Z"}`,
		`{"holder":"` + strings.Repeat("d", 129) + `","epoch":7,"expires":"2026-03-01T12:00:01.5Z"}`,
		`{"holder":"d1","epoch":-1,"expires":"2026-03-01T12:00:01.5Z"}`,
		`{"holder":"d1","epoch":1.5,"expires":"2026-03-01T12:00:01.5Z"}`,
		`{"holder":"d1","epoch":8,"expires":"2026-03-01T12:00:01.5Z"}`, // not before revision 8
		`{"holder":"d1","epoch":7,"expires":"0001-01-01T00:00:00Z"}`,
		`{"holder":"d1","epoch":7,"expires":"yesterday"}`,
		`{"holder":"d1","epoch":7,"expires":"2026-03-01T13:00:01.5+01:00"}`,
		`{"holder":"d1","epoch":7,"expires":"2026-03-01T12:00:01.500Z"}`,
		`{"holder":"d1","epoch":7,"expires":"2026-03-01T12:00:01.5Z","extra":1}`,
		`{"holder":"d1","holder":"d2","epoch":7,"expires":"2026-03-01T12:00:01.5Z"}`,
		`{"epoch":7,"holder":"d1","expires":"2026-03-01T12:00:01.5Z"}`,
		`{"holder":"d1", "epoch":7,"expires":"2026-03-01T12:00:01.5Z"}`,
		`{"holder":"d1","epoch":7,"expires":"2026-03-01T12:00:01.5Z"} `,
		`{"holder":"d1","epoch":7,"expires":"2026-03-01T12:00:01.5Z"}{}`,
	}
	for _, v := range bad {
		if r, err := decodeRecord([]byte(v), 8); !errors.Is(err, ErrNotLease) {
			t.Errorf("decodeRecord(%s) = %+v, %v; want ErrNotLease", v, r, err)
		}
	}
}

// FuzzDecodeRecord: decoding never panics; what decodes is exactly what
// encode writes for it, and is a record a holder could write.
func FuzzDecodeRecord(f *testing.F) {
	f.Add([]byte(`{"holder":"d1","epoch":7,"expires":"2026-03-01T12:00:01.5Z"}`), uint64(8))
	f.Add([]byte(`{"holder":"d1","epoch":0,"expires":"2026-03-01T12:00:00Z"}`), uint64(1))
	f.Add([]byte(`{"holder":"d1","epoch":7,"expires":"2026-03-01T13:00:01.5+01:00"}`), uint64(8))
	f.Add([]byte(`{"holder":"d\u00e91","epoch":18446744073709551615,"expires":"9999-12-31T23:59:59.999999999Z"}`), uint64(1))
	f.Add([]byte(`{"holder":"d1","holder":"d2","epoch":7,"expires":"2026-03-01T12:00:01.5Z"}`), uint64(8))
	f.Add([]byte(`null`), uint64(0))
	f.Fuzz(func(t *testing.T, b []byte, rev uint64) {
		r, err := decodeRecord(b, rev)
		if err != nil {
			if !errors.Is(err, ErrNotLease) {
				t.Fatalf("decodeRecord(%q) = %v, not ErrNotLease", b, err)
			}
			return
		}
		if e := r.encode(); string(e) != string(b) {
			t.Fatalf("decodeRecord(%q) = %+v, which encodes as %q", b, r, e)
		}
		if err := r.valid(); err != nil {
			t.Fatalf("decodeRecord(%q) = %+v, invalid: %v", b, r, err)
		}
		if r.Epoch != 0 && r.Epoch >= rev {
			t.Fatalf("decodeRecord(%q, %d): epoch %d not before the revision", b, rev, r.Epoch)
		}
	})
}
