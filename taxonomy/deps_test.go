package taxonomy

import (
	"testing"

	"github.com/wacpd/wacpd/internal/deptest"
)

// TestDeps_Leaf enforces that taxonomy is a leaf: it depends on nothing of
// github.com/wacpd/wacpd and, outside the standard library, only on these:
// no YAML, which is taxfile's, so that a client links none.
func TestDeps_Leaf(t *testing.T) {
	deptest.Check(t, "github.com/wacpd/wacpd/taxonomy", deptest.Rules{
		OwnAllowed: nil, // nothing but itself
		ExternalAllowed: []string{
			"github.com/zeebo/blake3/...",       // and its internal packages
			"github.com/klauspost/cpuid/v2/...", // blake3's CPU feature detection
		},
	})
}

func TestDeps_NoTestingInNonTestFiles(t *testing.T) {
	deptest.NoTestingImport(t, ".")
}
