package checkpointchain_test

import (
	"testing"

	"github.com/wacpd/wacpd/internal/deptest"
)

const module = "github.com/wacpd/wacpd"

// TestDepsDirection enforces style guide §1: from this module checkpointchain
// depends only on casstore, taxonomy and internal/canon, and never on
// NATS.
func TestDepsDirection(t *testing.T) {
	deptest.Check(t, module+"/checkpointchain", deptest.Rules{
		OwnAllowed: []string{module + "/casstore", module + "/taxonomy", module + "/internal/canon", module + "/internal/strictjson"},
		Forbidden:  []string{"github.com/nats-io/", "github.com/dgraph-io/"}, // storage is chainstore's
	})
}

func TestDepsNoTestingInNonTestFiles(t *testing.T) {
	deptest.NoTestingImport(t, ".")
}
