package hwfile_test

import (
	"testing"

	"github.com/wacpd/wacpd/internal/deptest"
)

// TestDeps: the file reader knows YAML and the highway's rules, nothing of
// storage, NATS or the engine.
func TestDeps(t *testing.T) {
	deptest.Check(t, "github.com/wacpd/wacpd/highway/hwfile", deptest.Rules{
		OwnAllowed: []string{"github.com/wacpd/wacpd/..."},
		Forbidden:  []string{"github.com/nats-io/", "github.com/dgraph-io/", "github.com/wacpd/wacpd/runtime/...", "testing/..."},
		Required:   []string{"gopkg.in/yaml.v3", "github.com/wacpd/wacpd/highway"},
	})
}
