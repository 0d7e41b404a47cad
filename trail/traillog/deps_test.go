package traillog_test

import (
	"testing"

	"github.com/wacpd/wacpd/internal/deptest"
)

const module = "github.com/wacpd/wacpd"

// TestDeps enforces the dependency direction of style rule 1: traillog
// stores the trail; from this module it depends only on its format (trail),
// casstore, internal/canon, the segment files (internal/seglog) and the
// side-by-side hashing of its check (internal/blake3x) and the reading of
// rewritten keys (internal/latest), never on runtime or the packages above it;
// it never links the NATS server; and only test files import "testing".
func TestDeps(t *testing.T) {
	deptest.Check(t, module+"/trail/traillog", deptest.Rules{
		OwnAllowed: []string{module + "/trail", module + "/casstore", module + "/internal/canon", module + "/internal/seglog", module + "/internal/blake3x", module + "/internal/latest"},
		Forbidden: []string{
			"github.com/nats-io/nats-server/",
			"testing/...",
		},
	})
}
