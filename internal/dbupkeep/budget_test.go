package dbupkeep

import (
	"bytes"
	"testing"

	"github.com/dgraph-io/badger/v4"
)

// TestOptionsWithinBudget: Options shapes Badger's tree for the daemon's
// writes; a budget sizes Badger's memtables, caches and compactors from it,
// goes back to Badger's tree shape (smaller tables to build on the heap),
// keeps every value in the tables, and the database
// opens with them and takes the largest object the daemon stores (1 MiB -
// 1) in one transaction, beside the records a checkpoint writes; no budget
// leaves Options as they are.
func TestOptionsWithinBudget(t *testing.T) {
	dir := t.TempDir()
	if o := Options(dir); o.BaseLevelSize != BaseLevelSize || o.BaseTableSize != BaseTableSize || o.NumLevelZeroTables != 10 || o.NumLevelZeroTablesStall != 30 || o.NumCompactors != 2 {
		t.Fatalf("Options: base level %d, tables %d, %d (stall %d) level-0 tables, %d compactors; want %d, %d, 10 (30), 2",
			o.BaseLevelSize, o.BaseTableSize, o.NumLevelZeroTables, o.NumLevelZeroTablesStall, o.NumCompactors, BaseLevelSize, BaseTableSize)
	}
	if got, want := OptionsWithin(dir, 0), Options(dir); got.MemTableSize != want.MemTableSize ||
		got.BlockCacheSize != want.BlockCacheSize || got.NumCompactors != want.NumCompactors {
		t.Fatalf("OptionsWithin(0) differs from Options")
	}
	for _, tt := range []struct {
		budget          int64
		memtable, cache int64
	}{
		{64 << 20, 8 << 20, 8 << 20}, // raised to the minimum budget
		{256 << 20, 8 << 20, 16 << 20},
		{512 << 20, 16 << 20, 32 << 20},
		{8 << 30, MemTableSize, 512 << 20},
	} {
		o := OptionsWithin(dir, tt.budget)
		if o.MemTableSize != tt.memtable || o.BlockCacheSize != tt.cache || o.NumMemtables != 2 || o.NumCompactors != 2 || o.IndexCacheSize <= 0 {
			t.Errorf("budget %d MiB: memtable %d, %d of them, block cache %d, index cache %d, %d compactors; want memtable %d, 2, cache %d, an index cache, 2",
				tt.budget>>20, o.MemTableSize, o.NumMemtables, o.BlockCacheSize, o.IndexCacheSize, o.NumCompactors, tt.memtable, tt.cache)
		}
		if d := badger.DefaultOptions(dir); o.BaseLevelSize != d.BaseLevelSize || o.BaseTableSize != d.BaseTableSize || o.NumLevelZeroTables != d.NumLevelZeroTables {
			t.Errorf("budget %d MiB: base level %d, tables %d, %d level-0 tables; want Badger's %d, %d, %d",
				tt.budget>>20, o.BaseLevelSize, o.BaseTableSize, o.NumLevelZeroTables, d.BaseLevelSize, d.BaseTableSize, d.NumLevelZeroTables)
		}
		if o.ValueThreshold != Options(dir).ValueThreshold {
			t.Errorf("budget %d MiB: value threshold %d, want Badger's %d (every value in the tables)", tt.budget>>20, o.ValueThreshold, Options(dir).ValueThreshold)
		}
	}
	db, err := badger.Open(OptionsWithin(dir, 256<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	big := bytes.Repeat([]byte("x"), 1<<20-1)
	err = db.Update(func(txn *badger.Txn) error {
		if err := txn.Set([]byte("cas/big"), big); err != nil {
			return err
		}
		for i := range 40 { // a checkpoint's other records, generously
			if err := txn.Set([]byte{'r', byte(i)}, bytes.Repeat([]byte("y"), 1024)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("the largest object in one transaction: %v", err)
	}
}
