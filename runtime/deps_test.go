package runtime

import (
	"testing"

	"github.com/wacpd/wacpd/internal/deptest"
)

// TestDeps: the engine commits, recovers and verifies; it knows nothing of
// NATS, of the daemon that serves it, or of its clients.
func TestDeps(t *testing.T) {
	deptest.Check(t, "github.com/wacpd/wacpd/runtime", deptest.Rules{
		OwnAllowed: []string{"github.com/wacpd/wacpd/..."},
		Forbidden: []string{
			"github.com/nats-io/", "github.com/prometheus/",
			"github.com/wacpd/wacpd/daemon", "github.com/wacpd/wacpd/client", "github.com/wacpd/wacpd/auditor",
			"testing/...",
		},
		Required: []string{"github.com/dgraph-io/badger/v4"},
	})
}
