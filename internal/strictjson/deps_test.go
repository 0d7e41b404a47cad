package strictjson_test

import (
	"testing"

	"github.com/wacpd/wacpd/internal/deptest"
)

// TestDeps: strictjson is a leaf that imports nothing from wacpd, and
// nothing of NATS or Badger.
func TestDeps(t *testing.T) {
	deptest.Check(t, "github.com/wacpd/wacpd/internal/strictjson", deptest.Rules{
		OwnAllowed: nil,
		Forbidden:  []string{"github.com/nats-io/", "github.com/dgraph-io/", "testing/..."},
	})
}
