package runtime

import (
	"context"
	"time"

	"github.com/wacpd/wacpd/integrity"
	"github.com/wacpd/wacpd/internal/dbupkeep"
)

// The running trail check (integrity.Mark): every Config.MarkInterval
// the engine checks what it wrote since the mark and moves the mark, so
// that the check at the next start reads only the last seconds' entries.
// A full verify (VerifyTrail) that passes moves the mark too: it read every
// entry. The two never run at once (Engine.marking): they would read the
// same entries twice over. A verify cancels a pass under way and a pass
// does not start while a verify is waiting or running (Engine.verifying,
// Engine.markCancel): the verify does what the pass would.

// defaultMarkInterval is the running check's period when
// Config.MarkInterval is zero.
const defaultMarkInterval = 10 * time.Second

// runMarks runs the running check until the engine stops. Started by
// open, waited for by Close.
func (e *Engine) runMarks(interval time.Duration) {
	defer e.bg.Done()
	dbupkeep.Every(interval, e.stop, func(ctx context.Context) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		select {
		case e.marking <- struct{}{}:
		case <-ctx.Done():
			return
		}
		defer func() { <-e.marking }()
		// A verify sets verifying, then cancels the pass it finds: either
		// it finds this pass's cancel or this pass sees it verifying.
		e.markCancel.Store(&cancel)
		defer e.markCancel.Store(nil)
		if e.verifying.Load() > 0 {
			return
		}
		moved, rep, err := integrity.Mark(ctx, e.db)
		switch {
		case ctx.Err() != nil:
			// Stopping, or a verify cancelled the pass.
		case err != nil:
			e.lg.Warn("running trail check", "err", err)
		case !rep.OK || !rep.Trail.OK():
			e.lg.Error("running trail check failed; the next start handles it (docs/operations.md §5)",
				"step", rep.Step, "first_bad", rep.FirstBad, "violation", rep.Violation, "detail", rep.Detail)
		case moved:
			e.marks.Add(1)
			e.lg.Debug("running trail check", "from", rep.Trail.From, "entries", rep.Trail.Valid)
		}
	})
}
