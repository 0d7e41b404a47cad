package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
	"golang.org/x/mod/sumdb/note"

	"github.com/wacpd/wacpd/clock"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/trail/traillog"
	"github.com/wacpd/wacpd/wire"
)

var keySTH = []byte("m/sth") // the latest signed tree head (JSON of trail.TreeHead)

// Origin returns the origin line of this run's tree heads.
func (e *Engine) Origin() string { return "wacpd/" + e.Root() }

// SignTreeHead signs the current size and Merkle root of the global trail
// and stores the result as the latest tree head.
func (e *Engine) SignTreeHead(signer note.Signer) (trail.TreeHead, error) {
	if err := e.settle(context.Background()); err != nil {
		return trail.TreeHead{}, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return trail.TreeHead{}, ErrClosed
	}
	size := e.log.Len()
	root, err := e.log.Root(size)
	if err != nil {
		return trail.TreeHead{}, err
	}
	th, err := trail.SignTreeHead(signer, "wacpd/"+e.root, size, root, clock.Format(e.clock.Next()))
	if err != nil {
		return trail.TreeHead{}, err
	}
	b, err := json.Marshal(th)
	if err != nil {
		return trail.TreeHead{}, err
	}
	err = e.db.Update(func(txn *badger.Txn) error { return txn.Set(keySTH, b) })
	if err == nil {
		err = e.db.Sync() // Badger writes without syncing
	}
	if err != nil {
		return trail.TreeHead{}, fmt.Errorf("%w: store tree head: %v", ErrStorage, err)
	}
	return th, nil
}

// TreeHead returns the latest signed tree head; not_found before the first.
func (e *Engine) TreeHead() (th trail.TreeHead, err error) {
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
