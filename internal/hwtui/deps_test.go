package hwtui

import (
	"testing"

	"github.com/wacpd/wacpd/internal/deptest"
)

const module = "github.com/wacpd/wacpd"

// TestDeps: the UI is a pure model over a Source; it reaches the daemon
// only through one (cmd/wacp adapts the client), so it links no client,
// no NATS, nothing of the daemon or the engine.
func TestDeps(t *testing.T) {
	deptest.Check(t, module+"/internal/hwtui", deptest.Rules{
		OwnAllowed: []string{module + "/..."},
		Forbidden: []string{
			"github.com/nats-io/",
			module + "/client",
			module + "/daemon",
			module + "/runtime/...",
			module + "/cmd/",
		},
		Required: []string{"github.com/charmbracelet/bubbletea", module + "/highway"},
	})
}

// TestNoTestingImport checks that only _test.go files import testing.
func TestNoTestingImport(t *testing.T) {
	deptest.NoTestingImport(t, ".")
}
