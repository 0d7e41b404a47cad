package integrity

import (
	"expvar"

	"github.com/dgraph-io/badger/v4"
)

// Opened is what NoteOpen noted of a database when it was opened: the
// largest version it held, and the bytes this process had written to
// Badger value logs by then (Badger's own counter). With it, Check's
// storage step skips the versions the process wrote itself, which it
// otherwise reads through the merged iterator (the memtables of a running
// daemon: every key written since the last flush) only to find values kept
// in the value log. None of them is there when the counter has not moved:
// a value goes to a value log only when Badger writes it there, and the
// counter counts every such write of the process (the daemon's values of
// more than seglog.MaxInline bytes go to its segment files, so it never
// moves). The versions from before the open are skipped too once a table
// holds one at least as large as the largest of them: memtables are
// flushed in order, so every memtable replayed at the open has then been
// flushed, and its entries are in the tables the table check reads.
// A value-log GC rewrite, which keeps a value's version, is a value-log
// write: it moves the counter.
type Opened struct {
	version uint64
	vlog    int64
}

// vlogWritten is Badger's counter of the bytes the process wrote to value
// logs, and false when Badger does not keep it.
func vlogWritten(db *badger.DB) (int64, bool) {
	if !db.Opts().MetricsEnabled {
		return 0, false
	}
	v, ok := expvar.Get("badger_write_bytes_vlog").(*expvar.Int)
	if !ok {
		return 0, false
	}
	return v.Value(), true
}

// NoteOpen notes db as it is right after badger.Open, before the process
// writes to it; nil when Badger keeps no counter of value-log writes (the
// storage step then reads every version the tables do not hold).
func NoteOpen(db *badger.DB) *Opened {
	n, ok := vlogWritten(db)
	if !ok {
		return nil
	}
	return &Opened{version: db.MaxVersion(), vlog: n}
}

// covers reports whether every version above tables (the largest version
// of the tables the table check read) was written by this process and
// none of its writes went to a value log: nothing newer than those tables
// is kept in a value log.
func (o *Opened) covers(db *badger.DB, tables uint64) bool {
	if o == nil || tables < o.version {
		return false
	}
	n, ok := vlogWritten(db)
	return ok && n == o.vlog
}
