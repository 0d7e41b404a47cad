package integrity

import (
	"fmt"
	"sync"
	"testing"

	"github.com/dgraph-io/badger/v4"
)

// TestTablesWhileCompacting checks every table of a live database while
// its compactions replace tables, as audit.trail.verify does on a running
// daemon. Badger truncates a table file it deletes; a check that mapped
// the file died of SIGBUS when that happened under it (the crash loop's
// online verify did). Every check must finish, and find nothing, since
// nothing is damaged.
func TestTablesWhileCompacting(t *testing.T) {
	opts := badger.DefaultOptions(t.TempDir()).WithLogger(nil).
		WithMemTableSize(64 << 10).WithBaseTableSize(32 << 10).WithBaseLevelSize(128 << 10).
		WithNumLevelZeroTables(2).WithNumLevelZeroTablesStall(4).WithNumCompactors(2).
		WithValueThreshold(1 << 10)
	db, err := badger.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	write := func(round int) {
		wb := db.NewWriteBatch()
		for i := range 2000 {
			// Overwrite the same keys each round, so compactions drop
			// tables rather than only add them.
			if err := wb.Set(fmt.Appendf(nil, "k%05d", i), fmt.Appendf(nil, "value %d of round %d, padded to make tables fill up quickly", i, round)); err != nil {
				t.Fatal(err)
			}
		}
		if err := wb.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	write(0)

	const rounds = 40
	var wg sync.WaitGroup
	checks := make(chan string, rounds*4)
	done := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			if where, detail := verifyTables(db); detail != "" {
				checks <- where + ": " + detail
				return
			}
		}
	}()
	for round := 1; round <= rounds; round++ {
		write(round)
		if err := db.Flatten(1); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	wg.Wait()
	close(checks)
	for c := range checks {
		t.Errorf("a check of an undamaged live database failed: %s", c)
	}
}
