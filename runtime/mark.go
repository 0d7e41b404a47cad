package runtime

import (
	"context"
	"time"

	"github.com/wacpd/wacpd/integrity"
	"github.com/wacpd/wacpd/trail/traillog"
)

// The running check. The integrity check at start reads the trail entries
// written since the mark the previous check left (traillog.MarkChecked),
// so a daemon that ran long without a restart would read everything it
// wrote at its next start. The engine checks what it wrote as it goes
// instead: every Config.MarkInterval (default 10 s) it runs the same check
// as the start (integrity.Check, from the mark) on a snapshot and, when
// the trail passes, moves the mark. (Not once more at Close: the entries
// of the last seconds are left for the next start to read back, which
// also finds damage done to them while the daemon was stopped.) Soundness
// is that of the mark (see MarkChecked): every entry is read back and
// checked once after it was written, here rather than at the next start. A
// check that fails moves nothing: the next start finds the problem and
// handles it (recovery.go).

// defaultMarkInterval is the running check's period when
// Config.MarkInterval is zero.
const defaultMarkInterval = 10 * time.Second

// runMarks runs the running check every interval until the engine stops.
// Started by open, waited for by Close.
func (e *Engine) runMarks(interval time.Duration) {
	defer e.bg.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-e.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	for {
		select {
		case <-e.stop:
			return
		case <-t.C:
		}
		e.markChecked(ctx)
	}
}

// markChecked runs one pass of the running check.
func (e *Engine) markChecked(ctx context.Context) {
	rep, err := integrity.Check(ctx, e.db, integrity.Options{})
	switch {
	case err != nil && ctx.Err() != nil:
		return // stopping
	case err != nil:
		e.lg.Warn("running trail check", "err", err)
		return
	case !rep.OK || !rep.Trail.OK():
		e.lg.Error("running trail check failed; the next start handles it (docs/operations.md §5)",
			"step", rep.Step, "first_bad", rep.FirstBad, "violation", rep.Violation, "detail", rep.Detail)
		return
	}
	if rep.Trail.Valid <= rep.Trail.From {
		return // nothing new
	}
	if err := traillog.MarkChecked(e.db, rep.Trail); err != nil {
		e.lg.Warn("running trail check", "err", err)
		return
	}
	e.marks.Add(1)
	e.lg.Debug("running trail check", "from", rep.Trail.From, "entries", rep.Trail.Valid)
}
