package integrity_test

import (
	"testing"

	"github.com/wacpd/wacpd/internal/deptest"
)

const module = "github.com/wacpd/wacpd"

// TestDeps: the verifier joins the record packages' own checks and nothing
// else of wacpd, so that both the daemon (runtime) and an auditor's program
// (auditor) can import it; no NATS.
func TestDeps(t *testing.T) {
	deptest.Check(t, module+"/integrity", deptest.Rules{
		OwnAllowed: []string{module + "/trail/...", module + "/checkpointchain/...", module + "/casstore/...", module + "/taxonomy", module + "/internal/canon", module + "/internal/strictjson", module + "/internal/seglog", module + "/internal/blake3x", module + "/internal/latest"},
		Forbidden:  []string{"github.com/nats-io/", "testing/..."},
		Required:   []string{module + "/trail", module + "/checkpointchain", "github.com/dgraph-io/badger/v4"},
	})
}
