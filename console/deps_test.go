package console

import (
	"testing"

	"github.com/wacpd/wacpd/internal/deptest"
)

const module = "github.com/wacpd/wacpd"

// TestDeps: the console is pure: it renders what its Backend gives it and
// imports no NATS, no storage, nothing of the engine, the daemon or the
// client.
func TestDeps(t *testing.T) {
	deptest.Check(t, module+"/console", deptest.Rules{
		OwnAllowed: []string{module + "/..."},
		Forbidden: []string{
			"github.com/nats-io/",
			"github.com/dgraph-io/",
			module + "/runtime/...",
			module + "/daemon",
			module + "/client",
			module + "/cmd/",
			"testing/...",
		},
	})
}

// TestNoTestingImport checks that only _test.go files import testing.
func TestNoTestingImport(t *testing.T) {
	deptest.NoTestingImport(t, ".")
}
