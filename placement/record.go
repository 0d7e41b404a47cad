package placement

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// maxHolder bounds a holder id's length in bytes.
const maxHolder = 128

// record is the value of a lease key: who holds the partition, in which
// tenure, and until when by the holder's clock.
//
// Epoch is the fencing token of the tenure the record belongs to: the
// revision of the write that began it. That write cannot know its own
// revision, so it carries 0; its renewals carry the token.
type record struct {
	Holder  string    `json:"holder"`
	Epoch   uint64    `json:"epoch"`
	Expires time.Time `json:"expires"`
}

// encode returns r in the one form decode accepts: the three members in
// this order, no space, Expires in UTC (RFC 3339 with nanoseconds, trailing
// zeros dropped).
func (r record) encode() []byte {
	r.Expires = r.Expires.UTC()
	b, err := json.Marshal(r)
	if err != nil {
		// Only an Expires outside years 0..9999 fails, and validRecord
		// refuses those before anything is written.
		panic(fmt.Sprintf("placement: encode lease record: %v", err))
	}
	return b
}

// decodeRecord decodes the value of a lease key stored at revision rev. A
// value is a lease only if it is exactly what encode writes for a valid
// record (a holder of 1..128 printable ASCII characters other than space,
// '"' and '\', an expiry after 1970 and before 10000, and an epoch before
// rev); anything else, such as unknown or repeated members, other spacing
// or another time zone, is an error wrapping ErrNotLease.
func decodeRecord(b []byte, rev uint64) (record, error) {
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		return record{}, fmt.Errorf("%w: %v", ErrNotLease, err)
	}
	if err := r.valid(); err != nil {
		return record{}, fmt.Errorf("%w: %v", ErrNotLease, err)
	}
	if r.Epoch >= rev && r.Epoch != 0 {
		return record{}, fmt.Errorf("%w: epoch %d is not before the record's revision %d", ErrNotLease, r.Epoch, rev)
	}
	if !bytes.Equal(r.encode(), b) {
		return record{}, fmt.Errorf("%w: not in the form a lease is written", ErrNotLease)
	}
	return r, nil
}

// valid returns an error unless r could have been written by a holder.
func (r record) valid() error {
	if err := checkHolder(r.Holder); err != nil {
		return err
	}
	if y := r.Expires.Year(); y < 1970 || y > 9999 {
		return fmt.Errorf("expiry %s outside years 1970..9999", r.Expires)
	}
	return nil
}

// checkHolder returns an error unless holder is 1..128 printable ASCII
// characters other than space, '"' and '\'.
func checkHolder(holder string) error {
	if holder == "" || len(holder) > maxHolder {
		return fmt.Errorf("holder id of %d bytes, want 1..%d", len(holder), maxHolder)
	}
	for i := 0; i < len(holder); i++ {
		if c := holder[i]; c <= ' ' || c > '~' || c == '"' || c == '\\' {
			return fmt.Errorf("holder id %s: byte %d (0x%02x) is not allowed", strconv.QuoteToASCII(holder), i, c)
		}
	}
	return nil
}
