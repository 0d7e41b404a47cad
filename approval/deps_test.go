package approval_test

import (
	"testing"

	"github.com/wacpd/wacpd/internal/deptest"
)

const module = "github.com/wacpd/wacpd"

// TestDeps: approval is a pure core: no storage, no NATS, nothing of the
// engine, the daemon or the client.
func TestDeps(t *testing.T) {
	deptest.Check(t, module+"/approval", deptest.Rules{
		OwnAllowed: []string{module + "/..."},
		Forbidden: []string{
			"github.com/nats-io/",
			"github.com/dgraph-io/",
			module + "/runtime/...",
			module + "/daemon",
			module + "/client",
			module + "/cmd/",
		},
	})
}

// TestNoTestingImport checks that only _test.go files import testing.
func TestNoTestingImport(t *testing.T) {
	deptest.NoTestingImport(t, ".")
}
