package clock_test

import (
	"testing"

	"github.com/wacpd/wacpd/internal/deptest"
)

// TestDeps enforces the dependency direction of the style guide: clock is a
// leaf that imports nothing from wacpd, and nothing of NATS.
func TestDeps(t *testing.T) {
	deptest.Check(t, "github.com/wacpd/wacpd/clock", deptest.Rules{
		OwnAllowed: nil, // nothing but itself
		Forbidden:  []string{"github.com/nats-io/"},
	})
}

// TestNoTestingImport checks that only _test.go files import testing.
func TestNoTestingImport(t *testing.T) {
	deptest.NoTestingImport(t, ".")
}
