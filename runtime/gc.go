package runtime

import (
	"time"

	"github.com/wacpd/wacpd/internal/dbupkeep"
)

// Value-log garbage collection (dbupkeep.RunGC): the engine runs a pass
// every Config.GCInterval (default 10 minutes), beside the committer.

// defaultGCInterval is the GC period when Config.GCInterval is zero.
const defaultGCInterval = 10 * time.Minute

// runGC runs GC passes until the engine stops. Started by open, waited for
// by Close.
func (e *Engine) runGC(interval time.Duration) {
	defer e.bg.Done()
	dbupkeep.RunGC(e.db, interval, e.stop, func(n int, err error) {
		e.gcPasses.Add(1)
		switch {
		case err != nil:
			e.lg.Warn("value log GC", "err", err)
		case n > 0:
			e.lg.Info("value log GC", "files_rewritten", n)
		}
	})
}
