package daemon

import (
	"testing"

	"github.com/wacpd/wacpd/internal/deptest"
)

// TestDeps: the daemon serves the engine over NATS and never touches its
// storage: it imports no Badger (the engine's seam is typed: runtime.Grants,
// Engine.Tokens, Engine.OutboxLen, Engine.Fingerprint), nor the client.
func TestDeps(t *testing.T) {
	deptest.Check(t, "github.com/wacpd/wacpd/daemon", deptest.Rules{
		OwnAllowed: []string{"github.com/wacpd/wacpd/..."},
		Forbidden:  []string{"github.com/wacpd/wacpd/client", "testing/..."},
		ImportsAllowed: []string{
			"github.com/nats-io/nats-server/v2/server", "github.com/nats-io/nats.go", "github.com/nats-io/nats.go/jetstream",
			"github.com/nats-io/nats.go/micro", "github.com/prometheus/client_golang/...", "golang.org/x/mod/sumdb/note",
			"github.com/wacpd/wacpd/runtime", "github.com/wacpd/wacpd/clock", "github.com/wacpd/wacpd/taxonomy", "github.com/wacpd/wacpd/taxonomy/taxfile", "github.com/wacpd/wacpd/highway/hwfile", "github.com/wacpd/wacpd/principal",
			"github.com/wacpd/wacpd/trail", "github.com/wacpd/wacpd/workspace", "github.com/wacpd/wacpd/wire",
			"github.com/wacpd/wacpd/checkpointchain",                                                                // the checkpoint's wire form (Wire), not its storage
			"github.com/wacpd/wacpd/carp", "github.com/wacpd/wacpd/atlas", "github.com/wacpd/wacpd/atlas/atlasfile", // CARP's messages and the -atlas files
			"github.com/wacpd/wacpd/steward",                                                           // the request of a custom checkpoint's evaluator (EvalContext)
			"github.com/wacpd/wacpd/internal/strictjson", "github.com/wacpd/wacpd/internal/atomicfile", // an evaluator's reply
			"github.com/wacpd/wacpd/mcpagent",                                                           // the MCP server of /mcp
			"github.com/modelcontextprotocol/go-sdk/mcp", "github.com/modelcontextprotocol/go-sdk/auth", // its streamable HTTP transport and Bearer check
			// The web console (console.go) and its users' capabilities.
			"github.com/wacpd/wacpd/console", "github.com/wacpd/wacpd/user",
			"github.com/wacpd/wacpd/envelope",  // the port rights rights.list answers (envelope.Right)
			"github.com/wacpd/wacpd/placement", // several daemons: the partition function and the leases
		},
		Required: []string{"github.com/nats-io/nats-server/v2/server"},
	})
}
