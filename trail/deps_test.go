package trail_test

import (
	"testing"

	"github.com/wacpd/wacpd/internal/deptest"
)

const module = "github.com/wacpd/wacpd"

// TestDeps enforces the dependency direction of style rule 1: from this
// module trail depends only on casstore (for the Ref type), taxonomy and
// internal/canon,
// never on runtime, workspace, checkpointchain, signal or envelope; it never
// links the NATS server; and only test files import "testing".
func TestDeps(t *testing.T) {
	deptest.Check(t, module+"/trail", deptest.Rules{
		OwnAllowed: []string{module + "/casstore", module + "/taxonomy", module + "/internal/canon"},
		Forbidden: []string{
			"github.com/nats-io/nats-server/", // only runtime may import the NATS server
			"testing/...",                     // only _test files may import it
		},
	})
}
