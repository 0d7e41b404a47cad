package signal_test

import (
	"testing"

	"github.com/wacpd/wacpd/internal/deptest"
)

const module = "github.com/wacpd/wacpd"

// TestDeps enforces the dependency direction of style rule 1: from this
// module signal depends only on taxonomy; it never links the NATS server
// (the nats.go client is allowed); and only test files import "testing".
func TestDeps(t *testing.T) {
	deptest.Check(t, module+"/signal", deptest.Rules{
		OwnAllowed: []string{module + "/taxonomy", module + "/internal/strictjson", module + "/internal/canon"}, // canon through strictjson
		Forbidden: []string{
			"github.com/nats-io/nats-server/", // only runtime may import the NATS server
			"testing/...",                     // only _test files may import it
		},
	})
}
