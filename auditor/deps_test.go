package auditor_test

import (
	"testing"

	"github.com/wacpd/wacpd/internal/deptest"
)

const module = "github.com/wacpd/wacpd"

// TestDeps enforces that an auditor can import this package without the
// daemon or storage: from this module it uses only the record packages
// (trail, checkpointchain, casstore, taxonomy); it links neither NATS
// (server or client), Badger, runtime nor client; and only test files
// import "testing". The data dir's verifier is auditor/datadir.
func TestDeps(t *testing.T) {
	deptest.Check(t, module+"/auditor", deptest.Rules{
		OwnAllowed: []string{module + "/trail", module + "/checkpointchain", module + "/casstore", module + "/taxonomy", module + "/internal/canon", module + "/internal/strictjson"},
		Forbidden: []string{
			"github.com/nats-io/",   // no NATS at all: the verifier works offline
			"github.com/dgraph-io/", // no storage: datadir opens data dirs
			"testing/...",           // only _test files may import it
		},
		// If these are missing, the check is not seeing the package's deps.
		Required: []string{module + "/trail", "github.com/transparency-dev/merkle/proof"},
	})
}
