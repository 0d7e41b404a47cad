package auditor_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/auditor"
	"github.com/wacpd/wacpd/auditor/datadir"
	"github.com/wacpd/wacpd/internal/trailtest"
	"github.com/wacpd/wacpd/runtime"
	"github.com/wacpd/wacpd/trail"
)

// dataDir is a stopped daemon's data dir, laid out as wacpd leaves it:
// the database in dir/db, the public key in dir/trail.pub, the latest
// signed tree head under m/sth.
type dataDir struct {
	dir     string
	entries []trail.Entry
	key     key
	objects int
}

// newDataDir runs an engine on dir/db through the small trail, closes it,
// and signs a tree head over the first signed entries (all when signed < 0).
func newDataDir(t *testing.T, signed int) dataDir {
	t.Helper()
	dir := t.TempDir()
	e, err := runtime.Open(runtime.Config{DataDir: filepath.Join(dir, datadir.DatabaseDir)})
	if err != nil {
		t.Fatal(err)
	}
	smallTrail(t, e)
	entries := readAll(t, e.Trail())
	origin := "wacpd/" + e.Root()
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if signed < 0 {
		signed = len(entries)
	}
	k := newKey(t, "wacpd-test")
	sth := signHead(t, k, origin, entries[:signed], nil)
	update(t, dir, func(txn *badger.Txn) error {
		b, err := json.Marshal(sth)
		if err != nil {
			return err
		}
		return txn.Set([]byte("m/sth"), b)
	})
	if err := os.WriteFile(filepath.Join(dir, datadir.PublicKeyFile), []byte(k.vkey+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dataDir{dir: dir, entries: entries, key: k, objects: 2}
}

// update opens the stopped daemon's database and changes it.
func update(t *testing.T, dir string, fn func(*badger.Txn) error) {
	t.Helper()
	db, err := badger.Open(badger.DefaultOptions(filepath.Join(dir, datadir.DatabaseDir)).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(fn); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// tamperEntry rewrites the stored entry #seq (under t/g/, docs/formats.md),
// as a key of its own.
func tamperEntry(t *testing.T, dir string, seq uint64, fn func(e *trail.Entry)) {
	t.Helper()
	update(t, dir, func(txn *badger.Txn) error {
		var s map[string]json.RawMessage
		v, err := trailtest.StoredValue(filepath.Join(dir, datadir.DatabaseDir), txn, seq)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(v, &s); err != nil {
			return err
		}
		var e trail.Entry
		if err := json.Unmarshal(s["entry"], &e); err != nil {
			return err
		}
		fn(&e)
		if s["entry"], err = json.Marshal(e); err != nil {
			return err
		}
		b, err := json.Marshal(s)
		if err != nil {
			return err
		}
		return trailtest.SetEntry(txn, seq, b)
	})
}

func TestVerifyDataDir(t *testing.T) {
	t.Run("all signed", func(t *testing.T) {
		d := newDataDir(t, -1)
		rep, err := datadir.Verify(d.dir)
		n := len(d.entries)
		if err != nil || !rep.OK || rep.Entries != n || rep.Size != uint64(n) || rep.Objects != 2 || rep.Workspaces != 2 || rep.PublicKey != d.key.vkey {
			t.Errorf("datadir.Verify = %+v, %v; want ok with %d entries, size %d, 2 objects, 2 workspaces", rep, err, n, n)
		}
		// read-only: a second run sees the same
		if again, err := datadir.Verify(d.dir); err != nil || again != rep {
			t.Errorf("datadir.Verify again = %+v, %v; want %+v", again, err, rep)
		}
	})
	t.Run("tail after the signed head", func(t *testing.T) {
		d := newDataDir(t, 5)
		rep, err := datadir.Verify(d.dir)
		if err != nil || !rep.OK || rep.Entries != len(d.entries) || rep.Size != 5 || rep.Objects != 2 {
			t.Errorf("datadir.Verify = %+v, %v; want ok with %d entries, size 5", rep, err, len(d.entries))
		}
	})
	t.Run("tampered tail entry", func(t *testing.T) {
		d := newDataDir(t, 5)
		n := len(d.entries)
		tamperEntry(t, d.dir, uint64(n-1), func(e *trail.Entry) { e.Actor = "forger" })
		rep, err := datadir.Verify(d.dir)
		if err != nil || rep.OK || rep.Violation != auditor.ViolationHashMismatch || rep.FirstBad != d.entries[n-2].ID {
			t.Errorf("datadir.Verify = %+v, %v; want hash_mismatch at %s", rep, err, d.entries[n-2].ID)
		}
	})
	t.Run("tampered signed entry", func(t *testing.T) {
		d := newDataDir(t, -1)
		tamperEntry(t, d.dir, 3, func(e *trail.Entry) { e.Body = []byte(`{"forged":true}`) })
		rep, err := datadir.Verify(d.dir)
		if err != nil || rep.OK || rep.Violation != auditor.ViolationHashMismatch || rep.FirstBad != d.entries[2].ID {
			t.Errorf("datadir.Verify = %+v, %v; want hash_mismatch at %s", rep, err, d.entries[2].ID)
		}
	})
	t.Run("object removed", func(t *testing.T) {
		d := newDataDir(t, -1)
		var entryID string
		update(t, d.dir, func(txn *badger.Txn) error {
			for _, e := range d.entries {
				if e.EventType == trail.EventCheckpointCreated {
					var body struct{ Digest string }
					if err := json.Unmarshal(e.Body, &body); err != nil {
						return err
					}
					raw, err := trail.HashBytes(body.Digest)
					if err != nil {
						return err
					}
					entryID = e.ID
					return txn.Delete(append([]byte("cas/"), raw...))
				}
			}
			return nil
		})
		rep, err := datadir.Verify(d.dir)
		if err != nil || rep.OK || rep.Violation != auditor.ViolationMissingObject || rep.FirstBad != entryID {
			t.Errorf("datadir.Verify = %+v, %v; want missing_object at %s", rep, err, entryID)
		}
	})
	t.Run("no signed tree head", func(t *testing.T) {
		d := newDataDir(t, -1)
		update(t, d.dir, func(txn *badger.Txn) error { return txn.Delete([]byte("m/sth")) })
		rep, err := datadir.Verify(d.dir)
		if err != nil || rep.OK || rep.Violation != auditor.ViolationSignatureInvalid || rep.FirstBad != "sth" {
			t.Errorf("datadir.Verify = %+v, %v; want signature_invalid at sth", rep, err)
		}
	})
	t.Run("another public key", func(t *testing.T) {
		d := newDataDir(t, -1)
		other := newKey(t, "wacpd-test")
		if err := os.WriteFile(filepath.Join(d.dir, datadir.PublicKeyFile), []byte(other.vkey+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		rep, err := datadir.Verify(d.dir)
		if err != nil || rep.OK || rep.Violation != auditor.ViolationSignatureInvalid || rep.FirstBad != "sth" {
			t.Errorf("datadir.Verify = %+v, %v; want signature_invalid at sth", rep, err)
		}
		rep, err = datadir.VerifyWithKey(d.dir, d.key.vkey)
		if err != nil || rep.OK || rep.Violation != auditor.ViolationSignatureInvalid {
			t.Errorf("datadir.VerifyWithKey(the signing key, trail.pub another) = %+v, %v; want signature_invalid", rep, err)
		}
	})
	t.Run("no public key", func(t *testing.T) {
		d := newDataDir(t, -1)
		os.Remove(filepath.Join(d.dir, datadir.PublicKeyFile))
		if rep, err := datadir.Verify(d.dir); err == nil {
			t.Errorf("datadir.Verify(no trail.pub) = %+v, nil; want an error", rep)
		}
	})
	t.Run("not a data dir", func(t *testing.T) {
		if rep, err := datadir.Verify(t.TempDir()); err == nil {
			t.Errorf("datadir.Verify(empty dir) = %+v, nil; want an error", rep)
		}
	})
	t.Run("daemon still running", func(t *testing.T) {
		d := newDataDir(t, -1)
		e := openEngine(t, filepath.Join(d.dir, datadir.DatabaseDir))
		_ = e
		if rep, err := datadir.Verify(d.dir); err == nil {
			t.Errorf("datadir.Verify(open database) = %+v, nil; want an error", rep)
		}
	})
}
