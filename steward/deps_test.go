package steward_test

import (
	"testing"

	"github.com/wacpd/wacpd/internal/deptest"
)

// TestDeps: steward is a pure core: no storage, no NATS, nothing of the
// engine, the daemon, the client or CARP's messages (carp uses it).
func TestDeps(t *testing.T) {
	deptest.Check(t, module+"/steward", deptest.Rules{
		OwnAllowed: []string{module + "/atlas", module + "/internal/..."},
		Forbidden: []string{
			"github.com/nats-io/",
			"github.com/dgraph-io/",
			module + "/runtime/...",
			module + "/daemon",
			module + "/client",
			module + "/carp",
			module + "/cmd/",
		},
	})
}

// TestNoTestingImport checks that only _test.go files import testing.
func TestNoTestingImport(t *testing.T) {
	deptest.NoTestingImport(t, ".")
}

const module = "github.com/wacpd/wacpd"
