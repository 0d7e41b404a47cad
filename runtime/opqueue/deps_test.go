package opqueue

import (
	"testing"

	"github.com/wacpd/wacpd/internal/deptest"
)

// TestDeps: opqueue is the committer's queue and nothing else: it knows
// neither the engine nor its storage.
func TestDeps(t *testing.T) {
	deptest.Check(t, "github.com/wacpd/wacpd/runtime/opqueue", deptest.Rules{
		OwnAllowed: []string{},
		Forbidden: []string{
			"github.com/dgraph-io/", "github.com/nats-io/", "github.com/wacpd/wacpd/...", "testing/...",
		},
	})
}
