package daemon

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"sync"

	"github.com/wacpd/wacpd/principal"
)

// tokens maps token hashes to principals. Lookups compare hashes in
// constant time; the tokens themselves are never kept.
type tokens struct {
	mu     sync.RWMutex // guards byHash
	byHash map[[32]byte]principal.Principal
}

func newTokens() *tokens { return &tokens{byHash: map[[32]byte]principal.Principal{}} }

func hashToken(tok string) [32]byte { return sha256.Sum256([]byte(tok)) }

// newToken returns a fresh bearer token: "wacp_" + 32 random bytes, base64url.
func newToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("make token: %w", err)
	}
	return "wacp_" + base64.RawURLEncoding.EncodeToString(b), nil
}

func (ts *tokens) add(tok string, p principal.Principal) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.byHash[hashToken(tok)] = p
}

func (ts *tokens) addHash(h [32]byte, p principal.Principal) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.byHash[h] = p
}

// hashesOf returns the hashes of every token of p.
func (ts *tokens) hashesOf(p principal.Principal) [][32]byte {
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
func (ts *tokens) lookup(tok string) (principal.Principal, bool) {
	if tok == "" {
		return principal.Principal{}, false
	}
	h := hashToken(tok)
	ts.mu.RLock()
	defer ts.mu.RUnlock()
	p, ok := ts.byHash[h]
	return p, ok
}

// kindDaemon is the daemon's own connection; it never leaves the process.
const kindDaemon principal.Kind = "daemon"
