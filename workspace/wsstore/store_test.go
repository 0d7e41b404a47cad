package wsstore_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/internal/fixture"
	"github.com/wacpd/wacpd/internal/seglog"
	"github.com/wacpd/wacpd/workspace"
	"github.com/wacpd/wacpd/workspace/wsstore"
)

func openBadger(t *testing.T, dir string) *badger.DB {
	t.Helper()
	db, err := badger.Open(badger.DefaultOptions(dir).WithLogger(nil))
	if err != nil {
		t.Fatalf("badger.Open(%s): %v", dir, err)
	}
	return db
}

// storeFixture returns records that exercise every field kind of Workspace.
func storeFixture(t *testing.T) map[string]*workspace.Workspace {
	t.Helper()
	root := workspace.Root("01ROOT", "operator", now)
	req, err := workspace.DecodeCreateRequest([]byte(fixture.FullCreateRequest))
	if err != nil {
		t.Fatal(err)
	}
	full, err := workspace.Plan(req, root, "01FULL", now)
	if err != nil {
		t.Fatal(err)
	}
	full.State, full.PreState = workspace.Suspended, workspace.Blocked
	full.Directive = "01DIRECTIVE"
	full.UpdatedAt = "2026-11-21T22:50:00.000000001Z"
	full.Meter = workspace.Meter{ActiveSince: now, ActiveNanos: 42, Tokens: 7, Cost: 0.25, Metered: true}
	minimal, err := workspace.Plan(workspace.CreateRequest{Role: "observer"}, root, "01MIN", now)
	if err != nil {
		t.Fatal(err)
	}
	failed, err := workspace.Plan(workspace.CreateRequest{Role: "worker", Owner: "bob"}, full, "01FAILED", now)
	if err != nil {
		t.Fatal(err)
	}
	failed.State, failed.Reason = workspace.Failed, "parent_failed"
	return map[string]*workspace.Workspace{root.ID: root, full.ID: full, minimal.ID: minimal, failed.ID: failed}
}

func TestPutLoadAll_RoundTrip(t *testing.T) {
	dir := t.TempDir()
	want := storeFixture(t)

	db := openBadger(t, dir)
	if got, err := wsstore.LoadAll(db); err != nil || len(got) != 0 {
		t.Fatalf("LoadAll(empty db) = %v, %v, want empty, nil", got, err)
	}
	err := db.Update(func(txn *badger.Txn) error {
		for _, w := range want {
			if err := wsstore.Put(seglog.Direct(txn), w); err != nil {
				return err
			}
		}
		// Keys of other packages, next to and around "w/", are not records.
		for _, k := range []string{"t/01ROOT", "v/x", "w", "wx/01ROOT", "x/01ROOT"} {
			if err := txn.Set([]byte(k), []byte("not a workspace")); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Put: %v", err)
	}
	check := func(stage string, db *badger.DB) {
		t.Helper()
		got, err := wsstore.LoadAll(db)
		if err != nil {
			t.Fatalf("LoadAll (%s) error = %v", stage, err)
		}
		if !reflect.DeepEqual(got, want) {
			for id, w := range want {
				if !reflect.DeepEqual(got[id], w) {
					t.Errorf("LoadAll (%s)[%s] = %+v, want %+v", stage, id, got[id], w)
				}
			}
			if len(got) != len(want) {
				t.Errorf("LoadAll (%s) returned %d records, want %d", stage, len(got), len(want))
			}
		}
	}
	check("open", db)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db = openBadger(t, dir)
	defer db.Close()
	check("reopened", db)

	// Put overwrites: the last write of a record wins.
	next := want["01MIN"].Clone()
	next.State = workspace.Active
	next.UpdatedAt = "2026-11-21T23:00:00.000000000Z"
	if err := db.Update(func(txn *badger.Txn) error { return wsstore.Put(seglog.Direct(txn), next) }); err != nil {
		t.Fatal(err)
	}
	want["01MIN"] = next
	check("overwritten", db)
}

func TestLoadAll_CorruptRecord(t *testing.T) {
	db := openBadger(t, t.TempDir())
	defer db.Close()
	err := db.Update(func(txn *badger.Txn) error { return txn.Set([]byte("w/01BAD"), []byte("{not json")) })
	if err != nil {
		t.Fatal(err)
	}
	got, err := wsstore.LoadAll(db)
	var syntax *json.SyntaxError
	if err == nil || !errors.As(err, &syntax) {
		t.Errorf("LoadAll(db with a corrupt record) = %v, %v, want nil, a wrapped *json.SyntaxError", got, err)
	}
}

// The record format is JSON under w/<id>: pin the field names the rest of
// wacpd (and older data directories) rely on.
func TestPut_Format(t *testing.T) {
	db := openBadger(t, t.TempDir())
	defer db.Close()
	w := workspace.Root("01ROOT", "operator", now)
	if err := db.Update(func(txn *badger.Txn) error { return wsstore.Put(seglog.Direct(txn), w) }); err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	err := db.View(func(txn *badger.Txn) error {
		item, err := txn.Get([]byte("w/01ROOT"))
		if err != nil {
			return err
		}
		return item.Value(func(v []byte) error { return json.Unmarshal(v, &raw) })
	})
	if err != nil {
		t.Fatalf("get w/01ROOT: %v", err)
	}
	for _, k := range []string{"id", "role", "parent", "state", "owner", "originator", "delegate", "visibility", "authority", "priority", "created_at", "updated_at", "meter"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("record w/01ROOT = %v, want field %q", raw, k)
		}
	}
	if raw["parent"] != nil || raw["state"] != "idle" || raw["id"] != "01ROOT" {
		t.Errorf("record w/01ROOT = %v, want id 01ROOT, parent null, state idle", raw)
	}
}

const now = "2026-11-21T22:48:25.123456789Z"
