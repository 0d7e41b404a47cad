package strictjson_test

import (
	"testing"

	"github.com/wacpd/wacpd/internal/deptest"
)

// TestDeps: strictjson is a leaf that imports nothing from wacpd, and
// nothing of NATS or Badger.
func TestDeps(t *testing.T) {
	deptest.Check(t, "github.com/wacpd/wacpd/internal/strictjson", deptest.Rules{
		OwnAllowed: []string{"github.com/wacpd/wacpd/internal/canon"}, // its scan of plain bytes
		Forbidden:  []string{"github.com/nats-io/", "github.com/dgraph-io/", "testing/..."},
	})
}
