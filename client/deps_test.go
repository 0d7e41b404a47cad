package client

import (
	"testing"

	"github.com/wacpd/wacpd/internal/deptest"
)

// TestDeps checks that the client pulls in neither the daemon, the NATS
// server, any storage nor YAML: a program using it stays a small NATS
// client that reads the formats (trail, checkpointchain, casstore,
// auditor) and links no database and no taxonomy file parser.
func TestDeps(t *testing.T) {
	deptest.Check(t, "github.com/wacpd/wacpd/client", deptest.Rules{
		OwnAllowed: []string{"github.com/wacpd/wacpd/..."},
		Forbidden: []string{
			"github.com/wacpd/wacpd/runtime",
			"github.com/wacpd/wacpd/daemon",
			"github.com/wacpd/wacpd/integrity",
			"github.com/wacpd/wacpd/trail/traillog",
			"github.com/wacpd/wacpd/casstore/badgerstore",
			"github.com/wacpd/wacpd/checkpointchain/chainstore",
			"github.com/wacpd/wacpd/workspace/wsstore",
			"github.com/wacpd/wacpd/auditor/datadir",
			"github.com/wacpd/wacpd/envelope/envstore",
			"github.com/wacpd/wacpd/runtime/delivery",
			"github.com/wacpd/wacpd/taxonomy/taxfile",
			"gopkg.in/yaml.v3",
			"github.com/dgraph-io/",
			"testing",
			"github.com/nats-io/nats-server/",
		},
		// If nats.go is missing, the check is not seeing the client's deps.
		Required: []string{"github.com/nats-io/nats.go", "github.com/wacpd/wacpd/trail", "github.com/wacpd/wacpd/auditor"},
	})
}
