package traillog

import (
	"context"
	"fmt"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/trail"
)

// entryOverhead bounds what an entry's JSON holds besides its body: ids,
// timestamps, actor, event type and the integrity hashes with their keys.
const entryOverhead = 1024

// Read returns entries of the global trail in global order (global view), and
// the id to pass as After for the next page ("" when there are no more).
func (l *Log) Read(ctx context.Context, q trail.Query) ([]trail.Entry, string, error) {
	var out []trail.Entry
	more := false
	err := view(l.db, "read trail", func(txn *badger.Txn) error {
		after := uint64(0)
		if q.After != "" {
			s, err := seqOf(txn, l.seg, q.After, l.Len())
			if err != nil {
				return err
			}
			after = s
		}
		size := 0
		return l.scan(ctx, txn, q.Workspace, after, func(s stored) bool {
			if !q.Match(s.Entry) {
				return true
			}
			size += len(s.Entry.Body) + entryOverhead
			if len(out) == q.PageSize() || (q.MaxBytes > 0 && len(out) > 0 && size > q.MaxBytes) {
				more = true
				return false
			}
			out = append(out, s.Entry)
			return true
		})
	})
	if err != nil {
		return nil, "", fmt.Errorf("read trail: %w", err)
	}
	next := ""
	if more && len(out) > 0 {
		next = out[len(out)-1].ID
	}
	return out, next, nil
}

// ReadLocal returns workspace ws's local trail (local view: prev_hash and
// entry_hash of the workspace's own chain) after the entry with id after.
func (l *Log) ReadLocal(ctx context.Context, ws, after string, limit int) ([]trail.Entry, error) {
	q := trail.Query{Workspace: ws, After: after, Limit: limit}
	var out []trail.Entry
	err := view(l.db, "read trail", func(txn *badger.Txn) error {
		var from uint64
		if after != "" {
			s, err := seqOf(txn, l.seg, after, l.Len())
			if err != nil {
				return err
			}
			from = s
		}
		return l.scan(ctx, txn, ws, from, func(s stored) bool {
			if len(out) == q.PageSize() {
				return false
			}
			out = append(out, s.local())
			return true
		})
	})
	if err != nil {
		return nil, fmt.Errorf("read local trail %s: %w", ws, err)
	}
	return out, nil
}

// Get returns the entry with the given id in its global view.
func (l *Log) Get(id string) (trail.Entry, error) {
	var e trail.Entry
	err := view(l.db, "read trail", func(txn *badger.Txn) error {
		seq, err := seqOf(txn, l.seg, id, l.Len())
		if err != nil {
			return err
		}
		var s stored
		if err := getStored(txn, l.seg, seq, &s); err != nil {
			return err
		}
		e = s.Entry
		return nil
	})
	return e, err
}

// ScanAfter calls fn with each entry of the global trail after global seq
// after (1-based) and its seq, in order, until fn returns false or the
// trail ends.
func (l *Log) ScanAfter(ctx context.Context, after uint64, fn func(seq uint64, e trail.Entry) bool) error {
	err := view(l.db, "scan trail", func(txn *badger.Txn) error {
		seq := after
		return l.scan(ctx, txn, "", after, func(s stored) bool {
			seq++
			return fn(seq, s.Entry)
		})
	})
	if err != nil {
		return fmt.Errorf("scan trail: %w", err)
	}
	return nil
}

// FirstAfterID returns the seq of the first entry of the global trail
// whose id is greater than id (ids strictly increase along it:
// trail.Rules), or Len()+1 when there is none.
func (l *Log) FirstAfterID(id string) (seq uint64, err error) {
	n := l.Len()
	err = view(l.db, "find trail entry", func(txn *badger.Txn) error {
		seq, err = firstAfterID(txn, l.seg, id, n)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("find the entry after %s: %w", id, err)
	}
	return seq, nil
}

// local returns the local view of a stored entry.
func (s stored) local() trail.Entry { return trail.LocalView(s.Entry, s.LocalPrev) }

// scan calls fn for each stored entry after global seq after, in global
// order, restricted to workspace ws when ws is set, until fn returns false.
func (l *Log) scan(ctx context.Context, txn *badger.Txn, ws string, after uint64, fn func(stored) bool) error {
	if ws == "" {
		g := newGlobalIter(txn, badger.IteratorOptions{PrefetchValues: true, PrefetchSize: 256})
		defer g.close()
		for g.seek(after + 1); g.valid(); g.next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			var s stored
			if err := g.entry().value(l.seg, func(v []byte) (err error) { s, err = decodeStored(v); return err }); err != nil {
				return err
			}
			if !fn(s) {
				return nil
			}
		}
		return nil
	}
	// The workspace's entries, each found from the last (most are in the
	// group the last was in, or a later one).
	g := newGlobalIter(txn, badger.IteratorOptions{})
	defer g.close()
	it := txn.NewIterator(badger.IteratorOptions{Prefix: localPrefix(ws), PrefetchValues: true})
	defer it.Close()
	var v []byte
	for it.Rewind(); it.Valid(); it.Next() {
		if err := ctx.Err(); err != nil {
			return err
		}
		var err error
		if v, err = it.Item().ValueCopy(v[:0]); err != nil {
			return err
		}
		k, err := groupLen(v)
		if err != nil {
			return fmt.Errorf("local index %q: %w", it.Item().Key(), err)
		}
		if groupSeq(v, k-1) <= after {
			continue
		}
		for i := range k {
			seq := groupSeq(v, i)
			if seq <= after {
				continue
			}
			var s stored
			if g.seek(seq); !g.valid() || g.entry().seq != seq {
				return fmt.Errorf("entry #%d: %w", seq, badger.ErrKeyNotFound)
			}
			if err := g.entry().value(l.seg, func(v []byte) (err error) { s, err = decodeStored(v); return err }); err != nil {
				return err
			}
			if !fn(s) {
				return nil
			}
		}
	}
	return nil
}
