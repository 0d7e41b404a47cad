package blake3x_test

import (
	"testing"

	"github.com/wacpd/wacpd/internal/deptest"
)

// TestDeps: blake3x is a leaf: BLAKE3 and the CPU's features, nothing of
// this module; only test files import "testing".
func TestDeps(t *testing.T) {
	deptest.Check(t, "github.com/wacpd/wacpd/internal/blake3x", deptest.Rules{
		OwnAllowed: []string{},
		Forbidden:  []string{"github.com/nats-io/", "github.com/dgraph-io/", "testing/..."},
		Required:   []string{"github.com/zeebo/blake3"},
	})
}
