package recstore

import (
	"reflect"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/internal/seglog"
)

type rec struct {
	ID string `json:"id"`
	N  int    `json:"n"`
}

func TestPutLoadAll(t *testing.T) {
	db, err := badger.Open(badger.DefaultOptions(t.TempDir()).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	write := func(fn func(*seglog.Txn) error) {
		t.Helper()
		txn := seglog.Direct(db.NewTransaction(true))
		defer txn.Discard()
		if err := fn(txn); err != nil {
			t.Fatal(err)
		}
		if err := txn.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	write(func(txn *seglog.Txn) error {
		for _, r := range []rec{{"a", 1}, {"b", 2}} {
			if err := Put(txn, "x/", r.ID, &r); err != nil {
				return err
			}
		}
		return txn.Set([]byte("y/c"), []byte(`{"id":"c"}`)) // another prefix
	})
	got, err := LoadAll[rec](db, "x/")
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]*rec{"a": {"a", 1}, "b": {"b", 2}}; !reflect.DeepEqual(got, want) {
		t.Errorf("LoadAll = %v, want %v", got, want)
	}
	write(func(txn *seglog.Txn) error { return txn.Set([]byte("x/bad"), []byte(`{"id":`)) })
	if _, err := LoadAll[rec](db, "x/"); err == nil || !strings.Contains(err.Error(), "x/bad") {
		t.Errorf("LoadAll with a damaged record = %v, want an error naming x/bad", err)
	}
}
