package runtime

import (
	"context"

	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/wire"
)

// Reading what was answered. A batch's callers are answered once its block
// is durable (committer.go, durableLocked), and its effects are then the
// engine's state in memory, while Badger's commit of it is still on its
// way through Badger's write goroutine. A caller that was answered may ask
// at once for what it wrote, and so may anyone it told (a coordinator
// following the signal): every read of Badger that can reach what a batch
// wrote settles first, waiting for the commit of the batch answered last.
// Only one batch is in flight at a time, so that one wait is enough: the
// batches answered before it have landed.
//
// If Badger's commit fails after the callers were answered, the batch is
// durable all the same and the engine enters degraded mode; until its probe
// has redone the block, reads are refused with unavailable rather than
// answered without what was acknowledged.

// settle waits until Badger holds every batch whose callers were answered,
// or ctx ends, or the engine stops.
func (e *Engine) settle(ctx context.Context) error {
	e.mu.Lock()
	ch, lost := e.unsettled, e.unsettledLost
	e.mu.Unlock()
	switch {
	case ch == nil:
		return nil
	case lost:
		return Refuse(wire.CodeUnavailable, "degraded mode: an acknowledged batch is not yet readable; retry later")
	}
	e.settleWaits.Add(1)
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-e.loopDone:
		select {
		case <-ch:
			return nil
		default:
			return ErrClosed
		}
	}
}

// settledLocked ends the wait of settle: Badger holds every batch answered.
// Caller holds e.mu.
func (e *Engine) settledLocked() {
	if e.unsettled != nil {
		close(e.unsettled)
		e.unsettled, e.unsettledLost = nil, false
	}
}

// settledTrail is the trail as TrailReader hands it out: each read settles
// first. Len needs no wait: it counts the entries answered.
type settledTrail struct{ e *Engine }

func (t settledTrail) Len() uint64 { return t.e.log.Len() }

func (t settledTrail) At(seq uint64) (trail.Entry, error) {
	if err := t.e.settle(context.Background()); err != nil {
		return trail.Entry{}, err
	}
	return t.e.log.At(seq)
}

func (t settledTrail) Seq(id string) (uint64, error) {
	if err := t.e.settle(context.Background()); err != nil {
		return 0, err
	}
	return t.e.log.Seq(id)
}

func (t settledTrail) Read(ctx context.Context, q trail.Query) ([]trail.Entry, string, error) {
	if err := t.e.settle(ctx); err != nil {
		return nil, "", err
	}
	return t.e.log.Read(ctx, q)
}

func (t settledTrail) ReadLocal(ctx context.Context, ws, after string, limit int) ([]trail.Entry, error) {
	if err := t.e.settle(ctx); err != nil {
		return nil, err
	}
	return t.e.log.ReadLocal(ctx, ws, after, limit)
}

func (t settledTrail) Root(size uint64) ([]byte, error) {
	if err := t.e.settle(context.Background()); err != nil {
		return nil, err
	}
	return t.e.log.Root(size)
}

func (t settledTrail) InclusionProof(index, size uint64) ([][]byte, error) {
	if err := t.e.settle(context.Background()); err != nil {
		return nil, err
	}
	return t.e.log.InclusionProof(index, size)
}

func (t settledTrail) ConsistencyProof(size1, size2 uint64) ([][]byte, error) {
	if err := t.e.settle(context.Background()); err != nil {
		return nil, err
	}
	return t.e.log.ConsistencyProof(size1, size2)
}
