package datadir

import (
	"fmt"
	"path/filepath"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/trail/traillog"
)

// Quarantine returns the trail entries the recovery procedure moved out of
// the trail of the stopped daemon's data dir dir (docs/operations.md §5.2),
// in trail order, each with why and when, and its stored bytes when it had
// any. The database is opened read-only, so the daemon must be stopped.
func Quarantine(dir string) ([]traillog.Quarantined, error) {
	path := filepath.Join(dir, DatabaseDir)
	db, err := badger.Open(badger.DefaultOptions(path).WithReadOnly(true).WithLogger(nil))
	if err != nil {
		return nil, fmt.Errorf("open database %s read-only (is the daemon stopped?): %w", path, err)
	}
	defer db.Close()
	return traillog.ReadQuarantine(db)
}
