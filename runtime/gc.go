package runtime

import (
	"errors"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// Value-log garbage collection. Badger keeps values of at least
// ValueThreshold bytes (1 MiB by default, so large checkpoint objects) in
// its value log, whose files are reclaimed only by RunValueLogGC; keys and
// smaller values live in the LSM tree, which its own compactions keep
// bounded. The engine runs a GC pass every Config.GCInterval (default 10
// minutes): RunValueLogGC until it finds no file worth rewriting (half of
// it discarded). It runs beside the committer: Badger allows it alongside
// writes.

// defaultGCInterval is the GC period when Config.GCInterval is zero.
const defaultGCInterval = 10 * time.Minute

// gcDiscardRatio: a value-log file is rewritten when at least this share
// of it is garbage.
const gcDiscardRatio = 0.5

// runGC runs GC passes until the engine stops. Started by open, waited for
// by Close.
func (e *Engine) runGC(interval time.Duration) {
	defer e.bg.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-e.stop:
			return
		case <-t.C:
		}
		n, err := e.gcPass()
		e.gcPasses.Add(1)
		switch {
		case err != nil:
			e.lg.Warn("value log GC", "err", err)
		case n > 0:
			e.lg.Info("value log GC", "files_rewritten", n)
		}
	}
}

// gcPass rewrites value-log files until none is worth it and returns how
// many it rewrote.
func (e *Engine) gcPass() (int, error) {
	n := 0
	for {
		select {
		case <-e.stop:
			return n, nil
		default:
		}
		err := e.db.RunValueLogGC(gcDiscardRatio)
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
