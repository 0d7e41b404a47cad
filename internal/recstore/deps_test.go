package recstore_test

import (
	"testing"

	"github.com/wacpd/wacpd/internal/deptest"
)

// TestDeps: records are stored knowing nothing of what they hold: Badger
// and the segment files' transaction only, never NATS.
func TestDeps(t *testing.T) {
	deptest.Check(t, "github.com/wacpd/wacpd/internal/recstore", deptest.Rules{
		OwnAllowed: []string{"github.com/wacpd/wacpd/internal/seglog"},
		Forbidden:  []string{"github.com/nats-io/", "testing/..."},
		Required:   []string{"github.com/dgraph-io/badger/v4"},
	})
}
