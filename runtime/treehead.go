package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
	"golang.org/x/mod/sumdb/note"

	"github.com/wacpd/wacpd/clock"
	"github.com/wacpd/wacpd/trace"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/trail/traillog"
	"github.com/wacpd/wacpd/wire"
)

var (
	keySTH      = []byte("m/sth")       // the latest signed tree head (JSON of trail.TreeHead)
	keyTraceSTH = []byte("m/trace-sth") // the TRACE log's, signed with it (JSON of trace.TreeHead)
)

// Origin returns the origin line of this run's tree heads.
func (e *Engine) Origin() string { return "wacpd/" + e.Root() }

// SignTreeHead signs the current size and Merkle root of the global trail
// and stores the result as the latest tree head. It runs on the committer:
// the tree head covers the entries answered so far and is written in the
// next batch, durable with that batch's block (no sync of Badger's own:
// the memtable's msync cost every signing a write of all its dirty pages,
// on the disk the batches sync on).
func (e *Engine) SignTreeHead(signer note.Signer) (trail.TreeHead, error) {
	var th trail.TreeHead
	err := e.runPipelined(context.Background(), 0, func() error {
		size := e.log.Len()
		root, err := e.log.Root(size)
		if err != nil {
			return err
		}
		if th, err = trail.SignTreeHead(signer, "wacpd/"+e.root, size, root, clock.Format(e.clock.Next())); err != nil {
			return err
		}
		b, err := json.Marshal(th)
		if err != nil {
			return err
		}
		// The TRACE log's head, signed at the same moment with the same
		// key (docs/audit.md: a second signed root).
		tth, err := trace.SignTreeHead(signer, "wacpd/"+e.root+"/trace", e.trace.tree.Size(), e.trace.tree.Root(), th.Timestamp)
		if err != nil {
			return err
		}
		tb, err := json.Marshal(tth)
		if err != nil {
			return err
		}
		return e.commit(func(t *tx) error {
			if err := t.step("tree_head"); err != nil {
				return err
			}
			if err := t.txn.Set(keyTraceSTH, tb); err != nil {
				return err
			}
			return t.txn.Set(keySTH, b)
		})
	})
	if err != nil {
		return trail.TreeHead{}, fmt.Errorf("store tree head: %w", err)
	}
	return th, nil
}

// TreeHead returns the latest signed tree head; not_found before the first.
func (e *Engine) TreeHead() (th trail.TreeHead, err error) {
	if err := e.settle(context.Background()); err != nil {
		return trail.TreeHead{}, err
	}
	defer func() {
		// Badger panics on some damaged blocks: an error reply, not a
		// crash (audit.proof.inclusion and audit.sth read this first).
		if p := recover(); p != nil {
			th, err = trail.TreeHead{}, &traillog.DamageError{Op: "read the signed tree head", Panic: p}
		}
	}()
	err = e.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(keySTH)
		if err != nil {
			return err
		}
		return item.Value(func(v []byte) error { return json.Unmarshal(v, &th) })
	})
	if errors.Is(err, badger.ErrKeyNotFound) {
		return th, Refuse(wire.CodeNotFound, "no tree head has been signed yet")
	}
	return th, err
}

// TraceTreeHead returns the TRACE log's latest signed head (signed with
// the trail's); not_found before the first.
func (e *Engine) TraceTreeHead(ctx context.Context) (th trace.TreeHead, err error) {
	if err := e.settle(ctx); err != nil {
		return trace.TreeHead{}, err
	}
	err = e.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(keyTraceSTH)
		if err != nil {
			return err
		}
		return item.Value(func(v []byte) error { return json.Unmarshal(v, &th) })
	})
	if errors.Is(err, badger.ErrKeyNotFound) {
		return th, Refuse(wire.CodeNotFound, "no TRACE tree head has been signed yet")
	}
	return th, err
}
