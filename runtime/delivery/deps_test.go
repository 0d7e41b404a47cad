package delivery

import (
	"testing"

	"github.com/wacpd/wacpd/internal/deptest"
)

// TestDeps: delivery is a part of the engine below it; it sees the
// engine only through Tx and knows nothing of NATS or the daemon.
func TestDeps(t *testing.T) {
	deptest.Check(t, "github.com/wacpd/wacpd/runtime/delivery", deptest.Rules{
		OwnAllowed: []string{"github.com/wacpd/wacpd/..."},
		Forbidden: []string{
			"github.com/nats-io/", "github.com/prometheus/",
			"github.com/wacpd/wacpd/runtime", "github.com/wacpd/wacpd/daemon", "github.com/wacpd/wacpd/client",
			"github.com/wacpd/wacpd/auditor", "testing/...",
		},
	})
}
