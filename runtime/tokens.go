package runtime

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/trail"
)

// Kind is the kind of principal a token stands for (wire-v1 §2).
type Kind string

// Principal kinds.
const (
	KindCoordinator Kind = "coordinator" // the admin token: the root workspace's agent
	KindAgent       Kind = "agent"       // one workspace's agent
	KindUser        Kind = "user"        // a human user
	KindAuditor     Kind = "auditor"     // reads and verifies the trail
	kindDaemon      Kind = "daemon"      // the daemon's own connection; never leaves the process
)

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

// tokenKey is the Badger key of a token's record: a/<sha256 hex>. Tokens are
// stored hashed only.
func tokenKey(h [32]byte) []byte { return []byte("a/" + hex.EncodeToString(h[:])) }

// tokens maps token hashes to principals. Lookups compare hashes in
// constant time; the tokens themselves are never kept.
type tokens struct {
	mu     sync.RWMutex // guards byHash
	byHash map[[32]byte]Principal
}

func newTokens() *tokens { return &tokens{byHash: map[[32]byte]Principal{}} }

func hashToken(tok string) [32]byte { return sha256.Sum256([]byte(tok)) }

// newToken returns a fresh bearer token: "wacp_" + 32 random bytes, base64url.
func newToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("make token: %w", err)
	}
	return "wacp_" + base64.RawURLEncoding.EncodeToString(b), nil
}

func (ts *tokens) add(tok string, p Principal) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.byHash[hashToken(tok)] = p
}

func (ts *tokens) addHash(h [32]byte, p Principal) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.byHash[h] = p
}

// hashesOf returns the hashes of every token of p.
func (ts *tokens) hashesOf(p Principal) [][32]byte {
	ts.mu.RLock()
	defer ts.mu.RUnlock()
	var out [][32]byte
	for h, q := range ts.byHash {
		if q == p {
			out = append(out, h)
		}
	}
	return out
}

// remove removes the tokens hashed hs.
func (ts *tokens) remove(hs [][32]byte) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for _, h := range hs {
		delete(ts.byHash, h)
	}
}

// lookup returns the principal of tok. The map is keyed by the token's
// SHA-256: a lookup's timing can tell at most something about a digest,
// which gives nothing towards a token.
func (ts *tokens) lookup(tok string) (Principal, bool) {
	if tok == "" {
		return Principal{}, false
	}
	h := hashToken(tok)
	ts.mu.RLock()
	defer ts.mu.RUnlock()
	p, ok := ts.byHash[h]
	return p, ok
}

// putToken writes a token record into txn.
func putToken(txn *badger.Txn, tok string, p Principal) error {
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	return txn.Set(tokenKey(hashToken(tok)), b)
}

// deleteTokens deletes the token records hashed hs from txn.
func deleteTokens(txn *badger.Txn, hs [][32]byte) error {
	for _, h := range hs {
		if err := txn.Delete(tokenKey(h)); err != nil {
			return err
		}
	}
	return nil
}

// loadTokens reads every stored token record.
func loadTokens(db *badger.DB, ts *tokens) error {
	return db.View(func(txn *badger.Txn) error {
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
			ts.addHash(h, p)
		}
		return nil
	})
}

// recordAuthFailure writes a system-level authentication_failed entry for
// n connections from source refused for an unknown token within window.
func (e *Engine) recordAuthFailure(source string, n int, window time.Duration) error {
	return e.run(0, func() error {
		return e.commit(func(t *tx) error {
			_, err := t.append("", trail.ActorProtocol, trail.EventAuthenticationFailed, map[string]any{
				"entity": nil, "context": "nats_connect", "reason": "unknown_token", "source": source,
				"count": n, "window": window.String(),
			})
			return err
		})
	})
}
