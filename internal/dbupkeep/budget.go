package dbupkeep

import (
	"github.com/dgraph-io/badger/v4"
)

// MinMemoryBudget is the smallest memory budget OptionsWithin sizes for:
// below it the memtables could not hold one largest checkpoint.
const MinMemoryBudget = 128 << 20

// OptionsWithin returns Options(dir) sized for a process that should stay
// within budget bytes of memory (0: Badger's sizes, as Options). Measured
// at 64 agents (docs/performance.md, docs/operations.md), most of the
// daemon's memory is Badger's: its memtables, its block cache and the
// table builders of compactions, which the Go heap carries. Within a
// budget:
//
//   - memtables of budget/32, at least 8 MiB and at most MemTableSize
//     (a data dir written with larger ones keeps them: MemTableSizeFor),
//     and two of them instead of five;
//   - a block cache of budget/16 and an index cache of budget/32 (table
//     indexes and Bloom filters are then evicted instead of all held, so
//     the figure does not grow with the data);
//   - Badger's own tree shape (a 10 MiB base level in 2 MiB tables, five
//     level-0 tables): a compaction builds its tables on the heap, and
//     Options' larger ones would take more of the budget;
//   - two compactors, as without a budget.
//
// The value threshold stays Badger's (1 MiB, above the largest object), so
// that every value stays in the tables: Badger truncates a damaged value
// log at open and a value that was in the cut part then reads back empty,
// without an error (measured with a flipped byte), which nothing would
// notice. With 8 MiB memtables a transaction may hold 1.2 MiB: the largest
// object and the records of its checkpoint fit.
//
// The rest of the budget is the Go heap's (the daemon sets the Go
// runtime's soft memory limit, see daemon.Config) and what the agents'
// connections and NATS need.
func OptionsWithin(dir string, budget int64) badger.Options {
	o := Options(dir)
	if budget <= 0 {
		return o
	}
	budget = max(budget, MinMemoryBudget)
	mt := min(max(budget/32, 8<<20), MemTableSize)
	d := badger.DefaultOptions(dir)
	return o.WithMemTableSize(memTableSizeFor(dir, mt)).WithNumMemtables(2).
		WithBlockCacheSize(budget / 16).WithIndexCacheSize(budget / 32).WithNumCompactors(2).
		WithBaseLevelSize(d.BaseLevelSize).WithBaseTableSize(d.BaseTableSize).
		WithNumLevelZeroTables(d.NumLevelZeroTables).WithNumLevelZeroTablesStall(d.NumLevelZeroTablesStall)
}
