package casstore_test

import (
	"testing"

	"github.com/wacpd/wacpd/internal/deptest"
)

// TestDeps enforces that casstore stays a leaf (style rule 1): its packages
// import only the standard library, blake3, badger, casstore itself and the
// segment files (internal/seglog, where badgerstore keeps the objects' bytes),
// depend on nothing else of this module, never on NATS, and only test code imports
// "testing"; casstore itself, the format a client links, has no Badger.
func TestDeps(t *testing.T) {
	const self = "github.com/wacpd/wacpd/casstore"
	const seglog = "github.com/wacpd/wacpd/internal/seglog"
	deptest.Check(t, self+"/...", deptest.Rules{
		ImportsAllowed: []string{"github.com/zeebo/blake3", "github.com/dgraph-io/badger/v4", self, seglog},
		OwnAllowed:     []string{self + "/...", seglog},
		Forbidden:      []string{"github.com/nats-io/", "testing/..."},
		Exempt:         []string{self + "/casstoretest"}, // a test helper: it imports testing by design
		MinPackages:    3,
	})
}

// TestFormatLinksNoStorage: casstore itself (Ref, the interfaces) links no
// database; the Badger backend is casstore/badgerstore.
func TestFormatLinksNoStorage(t *testing.T) {
	deptest.Check(t, "github.com/wacpd/wacpd/casstore", deptest.Rules{
		OwnAllowed: []string{},
		Forbidden:  []string{"github.com/dgraph-io/", "testing/..."},
	})
}
