package auditor_test

import (
	"testing"

	"github.com/wacpd/wacpd/internal/deptest"
)

const module = "github.com/wacpd/wacpd"

// TestDeps enforces that an auditor can import this package without the
// daemon: from this module it uses only the record packages (trail,
// checkpointchain, casstore, taxonomy); it links neither NATS (server or
// client), nor runtime or client; and only test files import "testing".
func TestDeps(t *testing.T) {
	deptest.Check(t, module+"/auditor", deptest.Rules{
		OwnAllowed: []string{module + "/integrity", module + "/trail", module + "/checkpointchain", module + "/casstore", module + "/taxonomy", module + "/internal/canon", module + "/internal/strictjson"},
		Forbidden: []string{
			"github.com/nats-io/", // no NATS at all: the verifier works offline
			"testing/...",         // only _test files may import it
		},
		// If these are missing, the check is not seeing the package's deps.
		Required: []string{module + "/trail", "github.com/dgraph-io/badger/v4", "github.com/transparency-dev/merkle/proof"},
	})
}
