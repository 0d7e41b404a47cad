package daemon

import (
	"encoding/json"
	"fmt"

	"github.com/wacpd/wacpd/runtime"
	"github.com/wacpd/wacpd/wire"
)

// Replies never exceed the server's max payload (issue 11 §2). Every list
// endpoint pages by count (its limit) and by bytes: a page holds items until
// the next one would take it past replyBudget, and says where to go on
// (next). One item is always delivered, alone if need be; serve refuses
// (too_large) a reply that would still not fit, never sending silence.

// maxPayload returns the largest message the connected server carries.
func (r *Daemon) maxPayload() int {
	if r.nc != nil {
		if n := int(r.nc.MaxPayload()); n > 0 {
			return n
		}
	}
	return MaxPayload
}

// replyBudget is the bytes of items a page may hold: half the max payload,
// leaving room for the envelope of the reply and its headers.
func (r *Daemon) replyBudget() int {
	if r.cfg.pageBytes > 0 {
		return r.cfg.pageBytes
	}
	return r.maxPayload() / 2
}

// pageOf returns the longest prefix of items (at most limit) whose JSON
// encodings together fit budget, and whether items remain after it. The
// first item is always taken.
func pageOf[T any](items []T, limit, budget int) ([]T, bool, error) {
	size := 0
	for i, it := range items {
		if i == limit {
			return items[:i], true, nil
		}
		b, err := json.Marshal(it)
		if err != nil {
			return nil, false, fmt.Errorf("encode a list item: %w", err)
		}
		if size += len(b) + 1; i > 0 && size > budget {
			return items[:i], true, nil
		}
	}
	return items, false, nil
}

// tooLarge is the refusal of a reply over the max payload.
func tooLarge(n, max int) error {
	return runtime.Refuse(wire.CodeTooLarge, "reply too large: %d bytes, over the server's max payload of %d bytes; ask for fewer items (limit) and page with after", n, max)
}
