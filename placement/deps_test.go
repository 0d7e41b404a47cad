package placement_test

import (
	"testing"

	"github.com/wacpd/wacpd/internal/deptest"
)

const module = "github.com/wacpd/wacpd"

// TestDeps: placement is a building block of the daemon, not a part of it:
// it imports the standard library and nats.go's jetstream package only,
// nothing of wacpd, never the NATS server; only test files import
// "testing".
func TestDeps(t *testing.T) {
	deptest.Check(t, module+"/placement", deptest.Rules{
		ImportsAllowed: []string{"github.com/nats-io/nats.go/jetstream"},
		ExternalAllowed: []string{
			"github.com/nats-io/nats.go/...", "github.com/nats-io/nkeys", "github.com/nats-io/nuid",
			"github.com/klauspost/compress/...", "golang.org/x/crypto/...", "golang.org/x/sys/...",
		},
		Forbidden: []string{"github.com/nats-io/nats-server/", "testing/..."},
		Required:  []string{"github.com/nats-io/nats.go/jetstream"},
	})
	deptest.NoTestingImport(t, ".")
}
