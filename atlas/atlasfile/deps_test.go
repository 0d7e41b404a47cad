package atlasfile_test

import (
	"testing"

	"github.com/wacpd/wacpd/internal/deptest"
)

const module = "github.com/wacpd/wacpd"

// TestDeps: atlasfile reads files for atlas; nothing of the engine, the
// daemon, NATS or Badger.
func TestDeps(t *testing.T) {
	deptest.Check(t, module+"/atlas/atlasfile", deptest.Rules{
		OwnAllowed: []string{module + "/..."},
		Forbidden: []string{
			"github.com/nats-io/",
			"github.com/dgraph-io/",
			module + "/runtime/...",
			module + "/daemon",
			module + "/client",
			module + "/cmd/",
		},
	})
}

func TestNoTestingImport(t *testing.T) { deptest.NoTestingImport(t, ".") }
