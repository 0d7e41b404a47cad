package wire

import (
	"testing"

	"github.com/wacpd/wacpd/internal/deptest"
)

// TestDeps: wire names the contract and its bodies; the bodies that are
// records are the record packages' formats. It links no storage, no NATS
// and nothing of the daemon or the client, so that any Go program can
// take the contract without the rest of wacpd.
func TestDeps(t *testing.T) {
	deptest.Check(t, "github.com/wacpd/wacpd/wire", deptest.Rules{
		OwnAllowed: []string{"github.com/wacpd/wacpd/..."},
		Forbidden: []string{
			"github.com/dgraph-io/", "github.com/nats-io/", "gopkg.in/yaml.v3",
			"github.com/wacpd/wacpd/runtime/...", "github.com/wacpd/wacpd/daemon",
			"github.com/wacpd/wacpd/client", "github.com/wacpd/wacpd/auditor/...",
			"github.com/wacpd/wacpd/integrity",
			"testing/...",
		},
		Required: []string{"github.com/wacpd/wacpd/trail", "github.com/wacpd/wacpd/workspace"},
	})
}
