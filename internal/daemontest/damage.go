package daemontest

import (
	"path/filepath"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/internal/trailtest"
)

// DamageTrailEntry flips one byte inside the body of trail entry #seq in the
// stopped daemon's data dir dir: the stored value stays JSON, but the entry
// no longer hashes to its entry_hash (trailtest.FlipBody).
func DamageTrailEntry(t testing.TB, dir string, seq uint64) {
	t.Helper()
	db, err := badger.Open(badger.DefaultOptions(filepath.Join(dir, "db")).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(trailtest.FlipBody(filepath.Join(dir, "db"), seq))
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatalf("damage trail entry #%d: %v", seq, err)
	}
}
