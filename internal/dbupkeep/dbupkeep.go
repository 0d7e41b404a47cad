// Package dbupkeep keeps the engine's Badger database in shape: the
// options it is opened with and value-log garbage collection.
package dbupkeep

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"golang.org/x/sys/unix"
)

// Options returns the options of the database in dir: writes not synced
// (each batch's segment block, written and synced before its transaction
// commits, holds the redo record of its writes, and a start redoes what a
// crash lost: seglog.Replay), no logger, memtables of MemTableSizeFor(dir), and Badger
// checking each table block's checksum when it reads the block (and a
// value-log value's), so that damage at rest is an error, which the
// integrity check reports, instead of wrong data or a panic. Conflict
// detection is off: one committer writes the batches, and the few writes
// beside it (the check mark, the outbox mark at start and close, a token
// store's own Put in tests) each own keys nothing else writes, so no transaction can
// conflict, and tracking every read of every batch costs CPU for nothing.
//
// The tree's shape is chosen for the daemon's writes (docs/operations.md
// §1.1): a checkpoint gives Badger keys spread over the whole key range
// (an object's digest, the heads of many workspaces), so every level-0
// table overlaps most of the level below it, and each compaction into that
// level rewrites most of it. A base level of 256 MiB (Badger's: 10 MiB) in
// tables of 16 MiB (2 MiB) keeps the tree a level or two shallower, up to
// ten level-0 tables (five) wait to be compacted together, and two
// compactors (four) leave a core to the committer. Over a million
// checkpoints at 64 agents, compactions rewrote 0.71 KB per checkpoint on
// average where they rewrote 2.5-2.7 with Badger's shape (issue 13's
// twelfth session).
func Options(dir string) badger.Options {
	return badger.DefaultOptions(dir).WithSyncWrites(false).WithLogger(nil).
		WithMemTableSize(MemTableSizeFor(dir)).WithDetectConflicts(false).
		WithChecksumVerificationMode(options.OnBlockRead).WithVerifyValueChecksum(true).
		WithBaseLevelSize(BaseLevelSize).WithBaseTableSize(BaseTableSize).
		WithNumLevelZeroTables(10).WithNumLevelZeroTablesStall(30).WithNumCompactors(2)
}

// BaseLevelSize and BaseTableSize shape Badger's tree (Options).
const (
	BaseLevelSize = 256 << 20
	BaseTableSize = 16 << 20
)

// MemTableSize is the size of Badger's memtables (its default is 64 MiB).
// Flushing a memtable builds its level-0 table in memory, and with 64 MiB
// memtables that and the memtables themselves made the daemon's peak RSS
// about 0.8 GiB under load; with 32 MiB it is about 0.45 GiB at the same
// throughput (docs/performance.md).
const MemTableSize = 32 << 20

// MemTableSizeFor returns the memtable size to open the database in dir
// with. Badger replays a memtable's write-ahead log (a .mem file, created
// at twice the memtable size) into a memtable of the size it is opened
// with, and a log written with larger memtables may not fit a smaller one.
// So a data dir that has a larger .mem file (written by an earlier build
// that used Badger's default) keeps that size; its new logs are created at
// it too, so such a dir stays at 64 MiB memtables. Checked by hand: a
// daemon of the earlier build killed with SIGKILL under load left two 128
// MiB logs, and this build started on them, verified 60,006 entries and
// wrote recovery_completed.
func MemTableSizeFor(dir string) int64 { return memTableSizeFor(dir, MemTableSize) }

// memTableSizeFor is MemTableSizeFor for a wanted size.
func memTableSizeFor(dir string, size int64) int64 {
	mems, _ := filepath.Glob(filepath.Join(dir, "*.mem"))
	for _, m := range mems {
		if fi, err := os.Stat(m); err == nil && fi.Size()/2 > size {
			size = fi.Size() / 2
		}
	}
	return size
}

// Value-log garbage collection. Badger keeps values of at least
// ValueThreshold bytes (1 MiB by default, so large checkpoint objects) in
// its value log, whose files are reclaimed only by RunValueLogGC; keys and
// smaller values live in the LSM tree, which its own compactions keep
// bounded. RunGC runs a pass every interval: RunValueLogGC until it finds
// no file worth rewriting (half of it discarded). Badger allows it beside
// writes.

// gcDiscardRatio: a value-log file is rewritten when at least this share
// of it is garbage.
const gcDiscardRatio = 0.5

// RunGC runs GC passes on db every interval until stop is closed, and
// reports each pass's rewritten files and error to done.
func RunGC(db *badger.DB, interval time.Duration, stop <-chan struct{}, done func(rewritten int, err error)) {
	Every(interval, stop, func(context.Context) { done(GCPass(db, stop)) })
}

// Every runs pass every interval until stop is closed: the engine's
// background upkeep (value-log GC, the running trail check). The context
// pass gets ends when stop is closed, so that a long pass stops with the
// engine.
func Every(interval time.Duration, stop <-chan struct{}, pass func(context.Context)) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		pass(ctx)
	}
}

// GCPass rewrites value-log files until none is worth it, or stop is
// closed, and returns how many it rewrote.
func GCPass(db *badger.DB, stop <-chan struct{}) (int, error) {
	n := 0
	for {
		select {
		case <-stop:
			return n, nil
		default:
		}
		err := db.RunValueLogGC(gcDiscardRatio)
		switch {
		case err == nil:
			n++
		case errors.Is(err, badger.ErrNoRewrite), errors.Is(err, badger.ErrRejected):
			return n, nil // nothing to rewrite, or another pass is running
		default:
			return n, err
		}
	}
}

// RemoveEmptyValueLogs removes the value log files of zero bytes in dir and
// returns their names. Badger creates a value log file at every open; a
// process killed between creating it and writing its header leaves it
// empty, and Badger then refuses to open the database ("Create a new
// file"). Such a file holds nothing, not even its header. It does so only
// under the lock Badger takes on dir (flock of the directory): while
// another process holds the database it removes nothing (that process may
// be creating the file), and Badger's open then says the database is in
// use.
func RemoveEmptyValueLogs(dir string) ([]string, error) {
	d, err := os.Open(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer d.Close()
	if err := unix.Flock(int(d.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return nil, nil // held by another process: Badger's open reports it
	}
	defer unix.Flock(int(d.Fd()), unix.LOCK_UN)
	ents, err := d.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, e := range ents {
		if e.IsDir() || filepath.Ext(e.Name()) != ".vlog" {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			return removed, err
		}
		if fi.Size() != 0 {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
			return removed, err
		}
		removed = append(removed, e.Name())
	}
	return removed, nil
}
