package latest_test

import (
	"testing"

	"github.com/wacpd/wacpd/internal/deptest"
)

// TestDeps: latest is a helper over Badger; it depends on nothing else of
// this module, and only test files import "testing".
func TestDeps(t *testing.T) {
	deptest.Check(t, "github.com/wacpd/wacpd/internal/latest", deptest.Rules{
		Forbidden: []string{"github.com/wacpd/wacpd/...", "testing/..."},
	})
}
