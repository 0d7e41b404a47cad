package runtime

import (
	"context"
	"errors"
	"time"

	"github.com/wacpd/wacpd/integrity"
	"github.com/wacpd/wacpd/internal/dbupkeep"
)

// The running trail check (integrity.Marker.Pass): every
// Config.MarkInterval the engine checks what it wrote since the mark and
// moves the mark, so that the check at the next start reads only the last
// seconds' entries. A full verify moves it too (VerifyTrail).

// defaultMarkInterval is the running check's period when
// Config.MarkInterval is zero.
const defaultMarkInterval = 2 * time.Second

// runMarks runs the running check until the engine stops. Started by
// open, waited for by Close.
func (e *Engine) runMarks(interval time.Duration) {
	defer e.bg.Done()
	dbupkeep.Every(interval, e.stop, func(ctx context.Context) {
		moved, rep, err := e.marker.Pass(ctx)
		switch {
		case ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, integrity.ErrSkipped):
			// Stopping, or a verify cancelled or took the pass.
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
