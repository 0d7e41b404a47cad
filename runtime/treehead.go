package runtime

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dgraph-io/badger/v4"
	"golang.org/x/mod/sumdb/note"

	"github.com/wacpd/wacpd/clock"
	"github.com/wacpd/wacpd/trail"
)

// Files of the tree-head signing key, in the data dir.
const (
	KeyFile       = "trail.key" // note signer key (Ed25519), mode 0600
	PublicKeyFile = "trail.pub" // note verifier key, published in system.info
)

var keySTH = []byte("m/sth") // the latest signed tree head (JSON of trail.TreeHead)

// Origin returns the origin line of this run's tree heads.
func (e *Engine) Origin() string { return "wacpd/" + e.Root() }

// SignTreeHead signs the current size and Merkle root of the global trail
// and stores the result as the latest tree head.
func (e *Engine) SignTreeHead(signer note.Signer) (trail.TreeHead, error) {
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
	if err := e.db.Update(func(txn *badger.Txn) error { return txn.Set(keySTH, b) }); err != nil {
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
			th, err = trail.TreeHead{}, &trail.DamageError{Op: "read the signed tree head", Panic: p}
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
		return th, refuse(CodeNotFound, "no tree head has been signed yet")
	}
	return th, err
}

// signingKey loads the data dir's tree-head key, creating it (trail.key
// 0600, trail.pub) on the first start.
func signingKey(dir, root string) (note.Signer, string, error) {
	kpath, ppath := filepath.Join(dir, KeyFile), filepath.Join(dir, PublicKeyFile)
	b, err := os.ReadFile(kpath)
	if errors.Is(err, fs.ErrNotExist) {
		skey, vkey, err := note.GenerateKey(rand.Reader, "wacpd-"+root)
		if err != nil {
			return nil, "", fmt.Errorf("generate tree-head key: %w", err)
		}
		if err := writeFileAtomic(kpath, []byte(skey+"\n"), 0o600); err != nil {
			return nil, "", err
		}
		if err := writeFileAtomic(ppath, []byte(vkey+"\n"), 0o644); err != nil {
			return nil, "", err
		}
		b = []byte(skey)
	} else if err != nil {
		return nil, "", fmt.Errorf("read %s: %w", kpath, err)
	}
	if st, err := os.Stat(kpath); err == nil && st.Mode().Perm()&0o077 != 0 {
		return nil, "", fmt.Errorf("%s is readable by others (mode %v); chmod 600 it", kpath, st.Mode().Perm())
	}
	signer, err := note.NewSigner(strings.TrimSpace(string(b)))
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", kpath, err)
	}
	pub, err := os.ReadFile(ppath)
	if err != nil {
		return nil, "", fmt.Errorf("read %s: %w", ppath, err)
	}
	vkey := strings.TrimSpace(string(pub))
	if _, err := note.NewVerifier(vkey); err != nil {
		return nil, "", fmt.Errorf("%s: %w", ppath, err)
	}
	return signer, vkey, nil
}

// runTreeHeads signs a new tree head whenever the trail has grown, checking
// every interval, until ctx is done (and once more at the end).
func (r *Runtime) runTreeHeads(ctx context.Context, signer note.Signer, interval time.Duration) {
	var signed uint64
	sign := func() {
		if n := r.eng.Trail().Len(); n != signed {
			if _, err := r.eng.SignTreeHead(signer); err != nil {
				r.cfg.Logger.Error("sign tree head", "err", err)
				return
			}
			signed = n
		}
	}
	sign()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			sign()
			return
		case <-tick.C:
			sign()
		}
	}
}
