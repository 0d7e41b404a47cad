package coldstore_test

import (
	"testing"

	"github.com/wacpd/wacpd/internal/deptest"
)

const module = "github.com/wacpd/wacpd"

// TestDeps: the cold tier depends on the trail's format and log and on
// casstore's Ref only; it never links the NATS server; only test files
// import "testing".
func TestDeps(t *testing.T) {
	deptest.Check(t, module+"/trail/coldstore", deptest.Rules{
		OwnAllowed: []string{module + "/trail", module + "/trail/traillog", module + "/casstore", module + "/internal/canon", module + "/internal/seglog", module + "/internal/blake3x", module + "/internal/latest", module + "/internal/atomicfile"},
		Forbidden:  []string{"github.com/nats-io/nats-server/", "testing/..."},
	})
}
