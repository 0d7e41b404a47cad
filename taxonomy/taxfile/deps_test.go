package taxfile

import (
	"testing"

	"github.com/wacpd/wacpd/internal/deptest"
)

// TestDeps: taxfile reads files into taxonomy and needs nothing else of
// wacpd; YAML is its own dependency.
func TestDeps(t *testing.T) {
	deptest.Check(t, "github.com/wacpd/wacpd/taxonomy/taxfile", deptest.Rules{
		OwnAllowed: []string{"github.com/wacpd/wacpd/taxonomy"},
		ExternalAllowed: []string{
			"gopkg.in/yaml.v3/...",
			"github.com/zeebo/blake3/...",
			"github.com/klauspost/cpuid/v2/...",
		},
		Forbidden: []string{"testing/..."},
	})
}
