package seglog

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// Txn is a transaction of the batch being built: Badger's, with every
// write the Log also records in the batch's block (its redo record), so
// that the block alone can redo the batch's writes (Replay). Badger is then
// opened without synchronous writes: the block's sync is the batch's only
// one (docs/design.md, "One write per batch").
//
// Reads (Get, NewIterator) are Badger's. Every write of the committer's
// transaction must go through Txn: a write made on the *badger.Txn
// underneath is not redone after a crash that lost Badger's unsynced
// writes. On a nil Log (a database in memory) writes go to Badger only.
type Txn struct {
	*badger.Txn
	l *Log
}

// Txn returns txn with its writes recorded in the block being built.
func (l *Log) Txn(txn *badger.Txn) *Txn { return &Txn{Txn: txn, l: l} }

// Direct returns txn with writes no block records, for a transaction
// committed on its own whose durability its caller sees to (db.Sync, or
// Badger's Close, which writes its memtables out).
func Direct(txn *badger.Txn) *Txn { return &Txn{Txn: txn} }

// Set sets key to value in Badger (the value is kept in Badger's tree).
func (t *Txn) Set(key, value []byte) error { return t.SetEntry(badger.NewEntry(key, value)) }

// SetEntry sets e in Badger. An entry with an expiry is refused: its redo
// would not expire it at the same moment. So is a value of MaxInline bytes
// or more: Badger would keep it in its value log, which it does not sync,
// and a crash could leave Badger's tree pointing at bytes it lost, past
// any redo (store it with SetValue).
func (t *Txn) SetEntry(e *badger.Entry) error {
	if e.ExpiresAt != 0 {
		return errors.New("segments: an entry with an expiry cannot be redone")
	}
	if t.l != nil && len(e.Value) >= MaxInline {
		return fmt.Errorf("segments: a value of %d bytes set in Badger's tree (limit %d): %w", len(e.Value), MaxInline, ErrInlineTooLarge)
	}
	if err := t.Txn.SetEntry(e); err != nil {
		return err
	}
	t.l.record(opSet, e.UserMeta, e.Key, e.Value)
	return nil
}

// MaxInline bounds a value kept in Badger's tree: Badger's ValueThreshold
// (its default, which the engine keeps), from which it keeps values in its
// value log instead.
const MaxInline = 1 << 20

// ErrInlineTooLarge is wrapped by SetEntry's error for a value of
// MaxInline bytes or more.
var ErrInlineTooLarge = errors.New("value too large for Badger's tree")

// Value calls fn with item's value, read through the Log if it is a
// pointer (Log.Value).
func (t *Txn) Value(item *badger.Item, fn func([]byte) error) error { return t.l.Value(item, fn) }

// Delete deletes key.
func (t *Txn) Delete(key []byte) error {
	if err := t.Txn.Delete(key); err != nil {
		return err
	}
	t.l.record(opDelete, 0, key, nil)
	return nil
}

// Add adds value to the block without a key of its own and returns the
// pointer to it (PtrSize bytes), for the caller to keep in a value it sets
// (a group of pointers). ok is false on a nil Log and for an empty value:
// the caller then sets the value in Badger itself. Like SetValue, it
// keeps value until the block is sealed.
func (t *Txn) Add(value []byte) (ptr []byte, ok bool) {
	if t.l == nil || len(value) == 0 {
		return nil, false
	}
	return t.l.add(value, nil), true
}

// SetValue sets key to value kept in the block, with a pointer in Badger.
// On a nil Log, and for an empty value, value is set in Badger itself.
// Like badger.Txn.Set, it keeps value until the block is sealed.
func (t *Txn) SetValue(key, value []byte) error { return t.SetValueExtra(key, value, nil) }

// SetValueExtra is SetValue with extra bytes kept in Badger after the
// pointer, which Extra returns without reading the segments. Without a
// pointer (a nil Log, an empty value) extra is not kept.
func (t *Txn) SetValueExtra(key, value, extra []byte) error {
	if t.l == nil || len(value) == 0 {
		return t.Set(key, value)
	}
	return t.SetEntry(badger.NewEntry(key, t.l.add(value, extra)).WithMeta(Meta))
}

// The redo record. The second frame of a block of format 2 holds the
// batch's writes to Badger, the last of each key only, in the order they
// were made (docs/formats.md). Each write is
//
//	op     1 byte: opSet or opDelete
//	meta   1 byte: the entry's user meta (0 for a delete)
//	klen   uvarint, then the key
//	vlen   uvarint, then the value (0 for a delete)
const (
	opDead   byte = 0 // a write a later one of its key replaced (never written out)
	opSet    byte = 1
	opDelete byte = 2
)

// record appends one write to the redo record of the block being built;
// an earlier write of the same key in it is marked dead (compact drops
// it): only the last write of a key matters to the redo.
func (l *Log) record(op, meta byte, key, value []byte) {
	if l == nil {
		return
	}
	l.mu.Lock()
	if l.last == nil {
		l.last = map[string]int{}
	}
	if prev, ok := l.last[string(key)]; ok {
		l.ops[prev] = opDead
		l.dead = true
	}
	l.last[string(key)] = len(l.ops)
	if l.ops == nil {
		l.ops, l.spare = l.spare, nil
	}
	l.ops = appendWrite(l.ops, op, meta, key, value)
	l.mu.Unlock()
}

// appendWrite appends one write of a redo record to b.
func appendWrite(b []byte, op, meta byte, key, value []byte) []byte {
	b = grow(b, 2+2*binary.MaxVarintLen64+len(key)+len(value))
	b = append(b, op, meta)
	b = binary.AppendUvarint(b, uint64(len(key)))
	b = append(b, key...)
	b = binary.AppendUvarint(b, uint64(len(value)))
	return append(b, value...)
}

// forget empties the redo record being built. Caller holds mu.
func (l *Log) forget() {
	l.ops = nil
	clear(l.last)
	l.dead = false
}

// compact returns ops without its dead writes (in place).
func compact(ops []byte) []byte {
	out := ops[:0]
	for len(ops) > 0 {
		n := 2
		for range 2 {
			v, k := binary.Uvarint(ops[n:])
			n += k + int(v)
		}
		if ops[0] != opDead {
			out = append(out, ops[:n]...)
		}
		ops = ops[n:]
	}
	return out
}

// ErrRedo is wrapped by the error of a redo record that does not decode.
var ErrRedo = errors.New("malformed redo record")

// decodeRedo calls fn with each write of the redo record b, in order. It
// returns an error wrapping ErrRedo if b does not decode; fn's error as it
// is.
func decodeRedo(b []byte, fn func(op, meta byte, key, value []byte) error) error {
	for i := 0; len(b) > 0; i++ {
		if len(b) < 2 {
			return fmt.Errorf("%w: write %d is torn", ErrRedo, i)
		}
		op, meta := b[0], b[1]
		b = b[2:]
		if op != opSet && op != opDelete {
			return fmt.Errorf("%w: write %d has op %d", ErrRedo, i, op)
		}
		key, rest, err := lenPrefixed(b)
		if err != nil || len(key) == 0 {
			return fmt.Errorf("%w: write %d: key: %v", ErrRedo, i, cmpErr(err, "empty"))
		}
		value, rest, err := lenPrefixed(rest)
		if err != nil {
			return fmt.Errorf("%w: write %d: value: %v", ErrRedo, i, err)
		}
		if op == opDelete && (meta != 0 || len(value) != 0) {
			return fmt.Errorf("%w: write %d deletes with a value or meta", ErrRedo, i)
		}
		b = rest
		if err := fn(op, meta, key, value); err != nil {
			return err
		}
	}
	return nil
}

func lenPrefixed(b []byte) (field, rest []byte, err error) {
	n, k := binary.Uvarint(b)
	switch {
	case k <= 0:
		return nil, nil, errors.New("bad length")
	case k != len(binary.AppendUvarint(nil, n)):
		return nil, nil, errors.New("length not in its shortest form")
	case n > uint64(len(b)-k):
		return nil, nil, fmt.Errorf("length %d past the record's end", n)
	}
	return b[k : k+int(n)], b[k+int(n):], nil
}

func cmpErr(err error, otherwise string) any {
	if err != nil {
		return err
	}
	return otherwise
}
