package wire

import (
	"testing"

	"github.com/wacpd/wacpd/internal/deptest"
)

// TestDeps: wire is a leaf of the standard library, so that any client can
// take the contract's names without the rest of wacpd.
func TestDeps(t *testing.T) {
	deptest.Check(t, "github.com/wacpd/wacpd/wire", deptest.Rules{
		OwnAllowed:      []string{},
		ExternalAllowed: []string{},
		Forbidden:       []string{"testing/..."},
	})
}
