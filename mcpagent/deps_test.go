package mcpagent

import (
	"testing"

	"github.com/wacpd/wacpd/internal/deptest"
)

// TestDeps: the MCP server is a pure adapter of the wire contract: it
// imports the contract's names (wire) and its schemas (docs/schema), and
// depends on neither the daemon, the engine, the client, NATS nor storage.
func TestDeps(t *testing.T) {
	deptest.Check(t, "github.com/wacpd/wacpd/mcpagent", deptest.Rules{
		OwnAllowed: []string{"github.com/wacpd/wacpd/..."},
		Forbidden: []string{"github.com/wacpd/wacpd/daemon", "github.com/wacpd/wacpd/runtime", "github.com/wacpd/wacpd/client",
			"github.com/nats-io/", "github.com/dgraph-io/", "testing/..."},
		ImportsAllowed: []string{
			"github.com/wacpd/wacpd/wire", "github.com/wacpd/wacpd/docs/schema",
			"github.com/modelcontextprotocol/go-sdk/mcp", "github.com/google/uuid",
		},
		Required: []string{"github.com/modelcontextprotocol/go-sdk/mcp"},
	})
}
