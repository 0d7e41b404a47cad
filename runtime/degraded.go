package runtime

import (
	"fmt"
	"slices"
	"time"

	"github.com/wacpd/wacpd/clock"
	"github.com/wacpd/wacpd/runtime/opqueue"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/wire"
)

// Degraded mode (WACP Recovery §2.4). When a batch's durable write fails (or
// the disk's free space falls below the reserve, diskspace.go), its
// operations get unavailable and the engine stops admitting work:
// every operation that would change anything is refused with unavailable
// at once, while reads go on. The committer then probes the disk with
// backoff: it reloads its state from the database (the failed write may
// have reached the disk after all) and tries to write one entry,
// system_degraded (scope trail_storage), which marks in the trail where the
// degraded period ended. A failed batch whose segment block was written
// and synced is redone first (seglog.Replay): the block is the batch's
// durable record, which the next start would redo too, so its operations,
// answered unavailable, may have taken effect, as when a write reached
// the disk although it reported an error. When that write is durable the engine admits work
// again. No operation takes effect without its trail entry, and nothing
// acknowledged is lost: an operation is acknowledged only after its batch
// is durable.

// Backoff between probes.
const (
	probeFirst = 20 * time.Millisecond
	probeMax   = 2 * time.Second
)

// degradedState is what the committer knows of a degraded period.
type degradedState struct {
	since    time.Time
	reason   string          // the first failure
	failures int             // failed writes, probes included
	affected map[string]bool // workspaces touched by the failed batches
	wait     time.Duration   // until the next probe
	timer    *time.Timer
}

// Degraded reports whether the engine is in degraded mode, and since when.
func (e *Engine) Degraded() (bool, time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.degradedSince.IsZero() {
		return false, time.Time{}
	}
	return true, e.degradedSince
}

// failed notes a failed batch (b nil: a failed reload): the engine enters
// (or stays in) degraded mode and the next probe is scheduled. Caller holds
// e.mu.
func (c *committer) failed(b *openBatch, err error) {
	e := c.e
	// Blocks not written are forgotten; the next goes where the last
	// written one ends. Not while a batch is in flight (a failed space
	// check): its block is being written; if it fails, it comes here.
	if c.inflight == nil {
		if err := e.seg.Abort(); err != nil {
			e.lg.Error("segments: cut what a failed batch left", "err", err)
		}
	}
	d := c.degraded
	if d == nil {
		d = &degradedState{since: e.cfg.Now(), reason: err.Error(), affected: map[string]bool{}, wait: probeFirst}
		c.degraded = d
		e.lg.Error("storage unusable: degraded mode, admitting no work until writes succeed", "err", err)
		e.degradedSince = d.since
	} else {
		d.wait = min(2*d.wait, probeMax)
	}
	d.failures++
	if b != nil {
		for id := range b.tx.dirty {
			d.affected[id] = true
		}
		for id := range b.tx.chains {
			d.affected[id] = true
		}
	}
	if d.timer == nil {
		d.timer = time.NewTimer(d.wait)
	} else {
		d.timer.Reset(d.wait)
	}
}

// probeC is the channel of the next probe, nil when not degraded or while
// a batch is in flight.
func (c *committer) probeC() <-chan time.Time {
	if c.degraded == nil || c.inflight != nil || c.degraded.timer == nil {
		return nil
	}
	return c.degraded.timer.C
}

// refusal is the error of an operation refused in degraded mode.
func (c *committer) refusal() error {
	return Refuse(wire.CodeUnavailable, "degraded mode since %s: storage is unusable (%s); nothing was done; retry later",
		c.degraded.since.UTC().Format(time.RFC3339), c.degraded.reason)
}

// probe reloads the engine's state from the database and returns the
// request that writes system_degraded; if its batch is durable, the engine
// leaves degraded mode (recovered).
func (c *committer) probe() (*opqueue.Op, error) {
	e := c.e
	if err := c.space.check(true); err != nil {
		return nil, err
	}
	// A failed batch whose block was written is durable all the same (a
	// start would redo it): redo it now, so that the state reloaded is
	// the one a restart would find.
	if _, err := e.seg.Replay(e.db); err != nil {
		return nil, err
	}
	e.mu.Lock()
	e.settledLocked() // Badger holds the batch whose callers were answered
	err := e.reload()
	e.mu.Unlock()
	if err != nil {
		return nil, err
	}
	d := c.degraded
	affected := make([]string, 0, len(d.affected))
	for id := range d.affected {
		affected = append(affected, id)
	}
	slices.Sort(affected)
	reason := fmt.Sprintf("storage unusable from %s to %s (%d failed attempts): %s",
		clock.Format(d.since), clock.Format(c.e.cfg.Now()), d.failures, d.reason)
	r := opqueue.New(func() error {
		return e.commit(func(t *tx) error {
			_, err := t.append("", trail.ActorProtocol, trail.EventSystemDegraded, map[string]any{
				"reason": reason, "scope": "trail_storage", "affected_workspaces": affected,
				"coordinator_action": "wait",
			})
			return err
		})
	}, 0, false)
	r.Probe = true
	return r, nil
}

// recovered leaves degraded mode after the probe's write was durable.
// Caller holds e.mu.
func (c *committer) recovered() {
	e, d := c.e, c.degraded
	c.degraded = nil
	d.timer.Stop()
	e.degradedSince = time.Time{}
	e.lg.Info("storage writes succeed again: left degraded mode", "since", d.since, "failed_writes", d.failures)
}

// reload reads the engine's state from the database again: a failed write
// may have reached the disk. Caller holds e.mu; no batch is open or in
// flight.
func (e *Engine) reload() error {
	if err := e.log.Reload(); err != nil {
		return err
	}
	return e.loadState()
}
