package workspace_test

import (
	"testing"

	"github.com/wacpd/wacpd/internal/deptest"
)

const module = "github.com/wacpd/wacpd"

// TestDeps enforces the dependency direction of the style guide: workspace
// sits below runtime, signal and envelope, and knows nothing of NATS.
func TestDeps(t *testing.T) {
	deptest.Check(t, module+"/workspace", deptest.Rules{
		OwnAllowed: []string{module + "/..."}, // all but the forbidden ones
		Forbidden: []string{
			"github.com/nats-io/",
			"github.com/dgraph-io/", // storage is wsstore's
			module + "/runtime/...",
			module + "/signal/...",
			module + "/envelope/...",
			module + "/client/...",
			module + "/cmd/",
		},
	})
}

// TestNoTestingImport checks that only _test.go files import testing.
func TestNoTestingImport(t *testing.T) {
	deptest.NoTestingImport(t, ".")
}
