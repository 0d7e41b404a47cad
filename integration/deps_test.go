package integration_test

import (
	"testing"

	"github.com/wacpd/wacpd/internal/deptest"
)

const module = "github.com/wacpd/wacpd"

// TestDeps: integration is a pure core over records: no storage, no NATS,
// nothing of the engine.
func TestDeps(t *testing.T) {
	deptest.Check(t, module+"/integration", deptest.Rules{
		OwnAllowed: []string{module + "/workspace", module + "/casstore", module + "/taxonomy", module + "/internal/..."},
		Forbidden: []string{
			"github.com/nats-io/",
			"github.com/dgraph-io/",
			module + "/runtime/...",
			module + "/daemon",
			module + "/client/...",
		},
	})
}

// TestNoTestingImport checks that only _test.go files import testing.
func TestNoTestingImport(t *testing.T) {
	deptest.NoTestingImport(t, ".")
}
