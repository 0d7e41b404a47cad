package tokenstore_test

import (
	"crypto/sha256"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/internal/seglog"
	"github.com/wacpd/wacpd/principal"
	"github.com/wacpd/wacpd/principal/tokenstore"
)

func all(t *testing.T, db *badger.DB) map[[32]byte]principal.Principal {
	t.Helper()
	got := map[[32]byte]principal.Principal{}
	err := db.View(func(txn *badger.Txn) error {
		return tokenstore.Each(txn, func(h [32]byte, p principal.Principal) { got[h] = p })
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestTokens: records read back by hash, a deleted one is gone, and a
// record under a malformed key is an error naming it rather than a
// principal nobody granted.
func TestTokens(t *testing.T) {
	db, err := badger.Open(badger.DefaultOptions(t.TempDir()).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	agent := sha256.Sum256([]byte("agent token"))
	user := sha256.Sum256([]byte("user token"))
	err = db.Update(func(txn *badger.Txn) error {
		if err := tokenstore.Put(seglog.Direct(txn), agent, principal.Principal{Kind: principal.KindAgent, Workspace: "w1"}); err != nil {
			return err
		}
		return tokenstore.Put(seglog.Direct(txn), user, principal.Principal{Kind: principal.KindUser, Name: "ada"})
	})
	if err != nil {
		t.Fatal(err)
	}
	got := all(t, db)
	if len(got) != 2 || got[agent].String() != "agent:w1" || got[user].String() != "user:ada" {
		t.Fatalf("records = %v", got)
	}
	if err := db.Update(func(txn *badger.Txn) error { return tokenstore.Delete(seglog.Direct(txn), agent) }); err != nil {
		t.Fatal(err)
	}
	if got := all(t, db); len(got) != 1 || got[user].Name != "ada" {
		t.Fatalf("after deleting the agent's token: %v", got)
	}
	if err := db.Update(func(txn *badger.Txn) error { return txn.Set([]byte("a/zz"), []byte(`{}`)) }); err != nil {
		t.Fatal(err)
	}
	err = db.View(func(txn *badger.Txn) error {
		return tokenstore.Each(txn, func([32]byte, principal.Principal) {})
	})
	if err == nil || !strings.Contains(err.Error(), "a/zz") {
		t.Fatalf("a malformed key: %v, want an error naming it", err)
	}
}

func TestString(t *testing.T) {
	for p, want := range map[principal.Principal]string{
		{Kind: principal.KindCoordinator, Workspace: "root"}: "coordinator:root",
		{Kind: principal.KindAuditor, Name: "eve"}:           "auditor:eve",
		{Kind: principal.KindAuditor}:                        "auditor",
	} {
		if got := p.String(); got != want {
			t.Errorf("%+v.String() = %q, want %q", p, got, want)
		}
	}
}
