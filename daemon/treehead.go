package daemon

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/wacpd/wacpd/internal/atomicfile"
)

// Files of the tree-head signing key, in the data dir.
const (
	KeyFile       = "trail.key" // note signer key (Ed25519), mode 0600
	PublicKeyFile = "trail.pub" // note verifier key, published in system.info
)

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
		if err := atomicfile.WriteFile(kpath, []byte(skey+"\n"), 0o600); err != nil {
			return nil, "", err
		}
		if err := atomicfile.WriteFile(ppath, []byte(vkey+"\n"), 0o644); err != nil {
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
func (r *Daemon) runTreeHeads(ctx context.Context, signer note.Signer, interval time.Duration) {
	var signed, tsigned uint64
	failing := false // logged once per run of failures (degraded mode refuses every one)
	sign := func() {
		// A new head when either log grew: the trail or TRACE's.
		if n, tn := r.eng.Trail().Len(), r.eng.TraceLen(); n != signed || tn != tsigned {
			if _, err := r.eng.SignTreeHead(signer); err != nil {
				if !failing {
					r.cfg.Logger.Error("sign tree head; retrying every interval", "err", err)
				}
				failing = true
				return
			}
			if failing {
				r.cfg.Logger.Info("signed a tree head again", "size", n)
			}
			signed, tsigned, failing = n, tn, false
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
