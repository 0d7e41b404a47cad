package client

import (
	"testing"

	"github.com/wacpd/wacpd/internal/deptest"
)

// TestDeps checks that the client pulls in neither the daemon nor the NATS
// server: a program using it stays a small NATS client.
func TestDeps(t *testing.T) {
	deptest.Check(t, "github.com/wacpd/wacpd/client", deptest.Rules{
		OwnAllowed: []string{"github.com/wacpd/wacpd/..."},
		Forbidden: []string{
			"github.com/wacpd/wacpd/runtime",
			"testing",
			"github.com/nats-io/nats-server/",
		},
		// If nats.go is missing, the check is not seeing the client's deps.
		Required: []string{"github.com/nats-io/nats.go"},
	})
}
