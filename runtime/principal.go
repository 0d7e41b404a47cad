package runtime

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/trail"
)

// Principal kinds.
const (
	KindCoordinator Kind = "coordinator" // the admin token: the root workspace's agent
	KindAgent       Kind = "agent"       // one workspace's agent
	KindUser        Kind = "user"        // a human user
	KindAuditor     Kind = "auditor"     // reads and verifies the trail
)

// Kind is the kind of principal a token stands for (wire-v1 §2).
type Kind string

// Principal is who a token authenticates.
type Principal struct {
	Kind      Kind   `json:"kind"`
	Workspace string `json:"workspace,omitempty"` // coordinator and agent
	Name      string `json:"name,omitempty"`      // user and auditor
}

// String names the principal in logs and as the NATS user name; it never
// contains the token.
func (p Principal) String() string {
	switch {
	case p.Workspace != "":
		return string(p.Kind) + ":" + p.Workspace
	case p.Name != "":
		return string(p.Kind) + ":" + p.Name
	}
	return string(p.Kind)
}

// Grants is the view of an operation's transaction in which the daemon
// writes token records: a new workspace's agent token commits with the
// workspace, a rotated one with the migration, a revocation with its
// user_deactivated entry. Only a token's SHA-256 is stored.
type Grants struct{ txn *badger.Txn }

// Put stores the token hashed h as p's.
func (g Grants) Put(h [32]byte, p Principal) error {
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	return g.txn.Set(tokenKey(h), b)
}

// Delete deletes the token records hashed hs.
func (g Grants) Delete(hs ...[32]byte) error {
	for _, h := range hs {
		if err := g.txn.Delete(tokenKey(h)); err != nil {
			return err
		}
	}
	return nil
}

// tokenKey is the Badger key of a token's record: a/<sha256 hex>. Tokens are
// stored hashed only.
func tokenKey(h [32]byte) []byte { return []byte("a/" + hex.EncodeToString(h[:])) }

// Tokens calls fn with every stored token record: the token's hash and
// its principal.
func (e *Engine) Tokens(fn func(h [32]byte, p Principal)) error {
	return e.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte("a/"), PrefetchValues: true})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			var h [32]byte
			if n, err := hex.Decode(h[:], it.Item().Key()[2:]); err != nil || n != 32 {
				return fmt.Errorf("token record %q: bad key", it.Item().Key())
			}
			var p Principal
			if err := it.Item().Value(func(v []byte) error { return json.Unmarshal(v, &p) }); err != nil {
				return err
			}
			fn(h, p)
		}
		return nil
	})
}

// RecordAuthFailure writes a system-level authentication_failed entry for
// n connections from source refused for an unknown token within window.
func (e *Engine) RecordAuthFailure(ctx context.Context, source string, n int, window time.Duration) error {
	return e.run(ctx, 0, func() error {
		return e.commit(func(t *tx) error {
			_, err := t.append("", trail.ActorProtocol, trail.EventAuthenticationFailed, map[string]any{
				"entity": nil, "context": "nats_connect", "reason": "unknown_token", "source": source,
				"count": n, "window": window.String(),
			})
			return err
		})
	})
}
