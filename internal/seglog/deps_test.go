package seglog_test

import (
	"testing"

	"github.com/wacpd/wacpd/internal/deptest"
)

// TestDeps: the segment files are a leaf of storage: they know Badger's
// items and transactions and nothing of this module (no trail, no
// checkpoint), never NATS; only test files import "testing".
func TestDeps(t *testing.T) {
	deptest.Check(t, "github.com/wacpd/wacpd/internal/seglog", deptest.Rules{
		OwnAllowed: []string{},
		Forbidden:  []string{"github.com/nats-io/", "testing/..."},
		Required:   []string{"github.com/dgraph-io/badger/v4", "github.com/klauspost/compress/zstd"},
	})
}
