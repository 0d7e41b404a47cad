package runtime

import (
	"context"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/internal/seglog"
	"github.com/wacpd/wacpd/principal"
	"github.com/wacpd/wacpd/principal/tokenstore"
	"github.com/wacpd/wacpd/trail"
)

// Grants is the view of an operation's transaction in which the daemon
// writes token records: a new workspace's agent token commits with the
// workspace, a rotated one with the migration, a revocation with its
// user_deactivated entry. Only a token's SHA-256 is stored.
type Grants struct{ txn *seglog.Txn }

// Put stores the token hashed h as p's.
func (g Grants) Put(h [32]byte, p principal.Principal) error { return tokenstore.Put(g.txn, h, p) }

// Delete deletes the token records hashed hs.
func (g Grants) Delete(hs ...[32]byte) error { return tokenstore.Delete(g.txn, hs...) }

// Tokens calls fn with every stored token record: the token's hash and
// its principal.
func (e *Engine) Tokens(fn func(h [32]byte, p principal.Principal)) error {
	return e.db.View(func(txn *badger.Txn) error { return tokenstore.Each(txn, fn) })
}

// RecordAuthSuccess writes a system-level authentication_succeeded entry
// for user id, whose token (method "token") the daemon accepted.
func (e *Engine) RecordAuthSuccess(ctx context.Context, id string) error {
	return e.run(ctx, 0, func() error {
		return e.commit(func(t *tx) error {
			_, err := t.append("", trail.ActorProtocol, trail.EventAuthenticationSucceeded, map[string]any{
				"user_id": id, "method": "token", "timestamp": nil,
			})
			return err
		})
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
