package trail_test

import (
	"testing"

	"github.com/wacpd/wacpd/internal/deptest"
)

const module = "github.com/wacpd/wacpd"

// TestDeps enforces the dependency direction of style rule 1: trail is a
// format, so a client can read entries without linking storage. From this
// module it depends only on casstore (for the Ref type) and internal/canon;
// it never links Badger, YAML or the NATS server; and only test files
// import "testing".
func TestDeps(t *testing.T) {
	deptest.Check(t, module+"/trail", deptest.Rules{
		OwnAllowed: []string{module + "/casstore", module + "/internal/canon"},
		Forbidden: []string{
			"github.com/dgraph-io/badger/", // storage is trail/traillog's
			"gopkg.in/yaml.v3",
			"github.com/nats-io/nats-server/",
			"testing/...", // only _test files may import it
		},
	})
}
