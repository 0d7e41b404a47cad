package canon_test

import (
	"testing"

	"github.com/wacpd/wacpd/internal/deptest"
)

// TestDeps: canon is a leaf that imports nothing from wacpd, and nothing of
// NATS or Badger.
func TestDeps(t *testing.T) {
	deptest.Check(t, "github.com/wacpd/wacpd/internal/canon", deptest.Rules{
		OwnAllowed: nil, // nothing but itself
		Forbidden:  []string{"github.com/nats-io/", "github.com/dgraph-io/"},
	})
}

// TestNoTestingImport checks that only _test.go files import testing.
func TestNoTestingImport(t *testing.T) {
	deptest.NoTestingImport(t, ".")
}
