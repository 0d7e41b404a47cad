// Package envstore keeps envelopes (package envelope) and their place in
// the inboxes in Badger. The runtime calls it inside its transactions; what
// a change means (trail entries, signals, transitions) stays the runtime's.
//
// # Keys
//
//	e/e/<envelope id>                 the envelope's JSON record
//	e/i/<ws>/<rank byte><envelope id> its place in ws's inbox; the value is
//	                                  its delivery record (empty before the
//	                                  first hand-over)
//	e/q/<ws>/<envelope id>            queued for ws while it is suspended or
//	                                  migrating (empty value)
//	e/x/<deadline><envelope id>       a lease's deadline (8 bytes, big-endian
//	                                  Unix ns); the value is the inbox key
//
// The rank byte (envelope.Rank) orders an inbox blocking > urgent > normal
// and envelope ids (UUIDv7) order it FIFO within a rank. The deadline keys
// let the expiry pass read the due leases in deadline order.
package envstore

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/clock"
	"github.com/wacpd/wacpd/envelope"
	"github.com/wacpd/wacpd/internal/seglog"
)

// ErrNotFound is returned (wrapped) by Get for an id with no record.
var ErrNotFound = errors.New("envstore: no such envelope")

var (
	recordPrefix = []byte("e/e/")
	leasePrefix  = []byte("e/x/")
)

func recordKey(id string) []byte { return append(bytes.Clone(recordPrefix), id...) }

func inboxPrefix(ws string) []byte { return append(append([]byte("e/i/"), ws...), '/') }

// InboxKey is the key of envelope id, of priority rank rank, in ws's inbox.
func InboxKey(ws string, rank byte, id string) []byte {
	return append(append(inboxPrefix(ws), rank), id...)
}

func queuePrefix(ws string) []byte { return append(append([]byte("e/q/"), ws...), '/') }

func leaseKey(deadline time.Time, id string) []byte {
	k := binary.BigEndian.AppendUint64(bytes.Clone(leasePrefix), uint64(deadline.UnixNano()))
	return append(k, id...)
}

// largeRecord is the size from which a record goes into the segment block
// (a pointer in Badger) rather than into Badger's tree: an envelope may be
// as large as a request (4 MiB), and Badger keeps values of 1 MiB and more
// in its value log, which it does not sync (seglog.Txn.SetEntry).
const largeRecord = 64 << 10

// Put writes env's record.
func Put(txn *seglog.Txn, env envelope.Envelope) error {
	b, err := json.Marshal(env)
	if err != nil {
		return fmt.Errorf("encode envelope %s: %w", env.ID, err)
	}
	if len(b) >= largeRecord {
		return txn.SetValue(recordKey(env.ID), b)
	}
	return txn.Set(recordKey(env.ID), b)
}

// Get reads envelope id's record; ErrNotFound when there is none.
func Get(txn *seglog.Txn, id string) (envelope.Envelope, error) {
	var env envelope.Envelope
	item, err := txn.Get(recordKey(id))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return env, fmt.Errorf("envelope %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return env, fmt.Errorf("envelope %s: %w", id, err)
	}
	err = txn.Value(item, func(v []byte) error { return json.Unmarshal(v, &env) })
	if err != nil {
		return env, fmt.Errorf("decode envelope %s: %w", id, err)
	}
	return env, nil
}

// Queue records envelope id as queued for ws.
func Queue(txn *seglog.Txn, ws, id string) error {
	return txn.Set(append(queuePrefix(ws), id...), nil)
}

// Dequeue removes the envelopes queued for ws and returns their ids in
// the order they were queued.
func Dequeue(txn *seglog.Txn, ws string) ([]string, error) {
	prefix := queuePrefix(ws)
	var ids []string
	it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
	for it.Rewind(); it.Valid(); it.Next() {
		ids = append(ids, string(it.Item().Key()[len(prefix):]))
	}
	it.Close()
	for _, id := range ids {
		if err := txn.Delete(append(prefix, id...)); err != nil {
			return nil, err
		}
	}
	return ids, nil
}

// Deliver puts env into the inbox of its receiver, not leased.
func Deliver(txn *seglog.Txn, env envelope.Envelope) error {
	return txn.Set(InboxKey(env.To, envelope.Rank(env.Priority), env.ID), nil)
}

// Delivery is the lease state of an envelope in an inbox (WACP Envelope
// §7, redelivery).
type Delivery struct {
	// Attempt counts the hand-overs so far.
	Attempt int `json:"attempt"`
	// Until is the end of the current lease; empty when the envelope is
	// not leased (it may be handed out).
	Until string `json:"until,omitempty"`
}

// DecodeDelivery decodes an inbox key's value: empty (never handed out)
// or a JSON delivery record.
func DecodeDelivery(v []byte) (Delivery, error) {
	var d Delivery
	if len(v) == 0 {
		return d, nil
	}
	if err := json.Unmarshal(v, &d); err != nil {
		return Delivery{}, fmt.Errorf("decode delivery record: %w", err)
	}
	if d.Attempt < 0 {
		return Delivery{}, fmt.Errorf("decode delivery record: attempt %d is negative", d.Attempt)
	}
	if d.Until != "" {
		if _, err := clock.Parse(d.Until); err != nil {
			return Delivery{}, fmt.Errorf("decode delivery record: until: %w", err)
		}
	}
	return d, nil
}

// Entry is an envelope's place in an inbox.
type Entry struct {
	Key      []byte // its inbox key
	ID       string // the envelope's id
	Delivery Delivery
}

// scan calls fn with each entry of ws's inbox, in delivery order, until fn
// returns false.
func scan(txn *badger.Txn, ws string, fn func(Entry) bool) error {
	prefix := inboxPrefix(ws)
	it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix, PrefetchValues: true, PrefetchSize: 16})
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		k := it.Item().KeyCopy(nil)
		v, err := it.Item().ValueCopy(nil)
		if err != nil {
			return err
		}
		d, err := DecodeDelivery(v)
		if err != nil {
			return fmt.Errorf("inbox key %q: %w", k, err)
		}
		if !fn(Entry{Key: k, ID: string(k[len(prefix)+1:]), Delivery: d}) {
			return nil
		}
	}
	return nil
}

// FirstUnleased returns the first entry of ws's inbox that is not leased;
// ok is false when every envelope is leased or the inbox is empty.
func FirstUnleased(txn *badger.Txn, ws string) (e Entry, ok bool, err error) {
	err = scan(txn, ws, func(x Entry) bool {
		if x.Delivery.Until == "" {
			e, ok = x, true
		}
		return !ok
	})
	return e, ok, err
}

// Leased returns the entries of ws's inbox that are leased.
func Leased(txn *badger.Txn, ws string) ([]Entry, error) {
	var out []Entry
	err := scan(txn, ws, func(x Entry) bool {
		if x.Delivery.Until != "" {
			out = append(out, x)
		}
		return true
	})
	return out, err
}

// Lookup returns envelope env's entry in its receiver's inbox; ok is false
// when it is not there (acknowledged, undeliverable or still queued).
func Lookup(txn *badger.Txn, env envelope.Envelope) (e Entry, ok bool, err error) {
	return entryAt(txn, InboxKey(env.To, envelope.Rank(env.Priority), env.ID), env.ID)
}

// entryAt reads the inbox entry at key, of envelope id; ok is false when
// there is none.
func entryAt(txn *badger.Txn, key []byte, id string) (e Entry, ok bool, err error) {
	item, err := txn.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return Entry{}, false, nil
	}
	if err != nil {
		return Entry{}, false, err
	}
	v, err := item.ValueCopy(nil)
	if err != nil {
		return Entry{}, false, err
	}
	d, err := DecodeDelivery(v)
	if err != nil {
		return Entry{}, false, fmt.Errorf("envelope %s: %w", id, err)
	}
	return Entry{Key: key, ID: id, Delivery: d}, true, nil
}

// Lease records hand-over e.Delivery.Attempt+1 of the entry's envelope, a
// lease until until, and returns the new delivery record.
func Lease(txn *seglog.Txn, e Entry, until time.Time) (Delivery, error) {
	d := Delivery{Attempt: e.Delivery.Attempt + 1, Until: clock.Format(until)}
	if err := setDelivery(txn, e.Key, d); err != nil {
		return Delivery{}, err
	}
	if err := txn.Set(leaseKey(until, e.ID), e.Key); err != nil {
		return Delivery{}, err
	}
	return d, nil
}

func setDelivery(txn *seglog.Txn, key []byte, d Delivery) error {
	b, err := json.Marshal(d)
	if err != nil {
		return err
	}
	return txn.Set(key, b)
}

// Remove takes the entry's envelope out of its inbox, with its lease's
// deadline key if it is leased.
func Remove(txn *seglog.Txn, e Entry) error {
	if err := dropLease(txn, e); err != nil {
		return err
	}
	return txn.Delete(e.Key)
}

func dropLease(txn *seglog.Txn, e Entry) error {
	if e.Delivery.Until == "" {
		return nil
	}
	until, err := clock.Parse(e.Delivery.Until)
	if err != nil {
		return fmt.Errorf("envelope %s: lease deadline: %w", e.ID, err)
	}
	return txn.Delete(leaseKey(until, e.ID))
}

// Release ends the entry's lease and leaves the envelope in its inbox at
// its old place, to be handed out again; its attempts are kept.
func Release(txn *seglog.Txn, e Entry) error {
	if err := dropLease(txn, e); err != nil {
		return err
	}
	return setDelivery(txn, e.Key, Delivery{Attempt: e.Delivery.Attempt})
}

// Due is a lease whose deadline has come.
type Due struct {
	ID       string // the envelope's id
	InboxKey []byte
	key      []byte // the deadline key
}

// DueBy returns the leases whose deadline is not after now, earliest
// first.
func DueBy(txn *badger.Txn, now time.Time) ([]Due, error) {
	var out []Due
	it := txn.NewIterator(badger.IteratorOptions{Prefix: leasePrefix, PrefetchValues: true, PrefetchSize: 16})
	defer it.Close()
	limit := leaseKey(now, "")
	for it.Rewind(); it.Valid(); it.Next() {
		k := it.Item().KeyCopy(nil)
		if len(k) < len(limit) {
			return nil, fmt.Errorf("lease key %q is shorter than a deadline", k)
		}
		if bytes.Compare(k[:len(limit)], limit) > 0 {
			break
		}
		v, err := it.Item().ValueCopy(nil)
		if err != nil {
			return nil, err
		}
		out = append(out, Due{ID: string(k[len(limit):]), InboxKey: v, key: k})
	}
	return out, nil
}

// Expire looks at due lease u inside txn: it removes its deadline key and
// returns the envelope's inbox entry; ok is false when the envelope left
// the inbox meanwhile (nothing more to do).
func Expire(txn *seglog.Txn, u Due) (e Entry, ok bool, err error) {
	if err := txn.Delete(u.key); err != nil {
		return Entry{}, false, err
	}
	e, ok, err = entryAt(txn.Txn, u.InboxKey, u.ID)
	// The deadline key is gone already: Release and Remove must not
	// delete it again from a record that still names it.
	e.Delivery.Until = ""
	return e, ok, err
}

// NextDeadline returns the earliest lease deadline; ok is false when no
// envelope is leased.
func NextDeadline(txn *badger.Txn) (at time.Time, ok bool) {
	it := txn.NewIterator(badger.IteratorOptions{Prefix: leasePrefix})
	defer it.Close()
	it.Rewind()
	if !it.Valid() {
		return time.Time{}, false
	}
	k := it.Item().Key()
	if len(k) < len(leasePrefix)+8 {
		return time.Time{}, false
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(k[len(leasePrefix):]))), true
}
