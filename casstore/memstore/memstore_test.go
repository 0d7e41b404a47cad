package memstore_test

import (
	"testing"

	"github.com/wacpd/wacpd/casstore"
	"github.com/wacpd/wacpd/casstore/casstoretest"
	"github.com/wacpd/wacpd/casstore/memstore"
)

func TestConformance(t *testing.T) {
	casstoretest.Run(t, func(*testing.T) casstore.Store { return memstore.New() })
}
