package principal

import (
	"testing"

	"github.com/wacpd/wacpd/internal/deptest"
)

// TestDeps: principal is a format a client may link: no storage, no NATS.
func TestDeps(t *testing.T) {
	deptest.Check(t, "github.com/wacpd/wacpd/principal", deptest.Rules{
		OwnAllowed:      []string{},
		ExternalAllowed: []string{},
		Forbidden:       []string{"testing/..."},
	})
}
