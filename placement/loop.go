package placement

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Lease is a holder's lease of one partition. One goroutine, started by
// Acquire, owns its record: it renews it every RenewEvery and ends when
// Acquire's ctx ends, when the lease is lost (taken or lapsed), or on
// Release; Lost is closed when it has ended. The methods of Lease are
// safe for concurrent use.
type Lease struct {
	ls        *Leases
	holder    string
	partition int
	key       string
	token     uint64

	reqs chan request  // to the loop; it replies to every request it receives
	lost chan struct{} // closed when the loop has ended

	mu         sync.Mutex // guards validUntil, err and released; the loop alone writes validUntil
	validUntil time.Time  // by the holder's clock: the last write's expiry less the margin
	err        error      // why the loop ended
	released   bool

	// The loop owns rev and nextRenew while it runs; once lost is closed,
	// release reads rev under releaseMu.
	rev       uint64    // the revision of the holder's last write
	nextRenew time.Time // by the holder's clock

	releaseMu sync.Mutex // serialises release after the loop has ended
}

// request asks the loop to renew or to release.
type request struct {
	release bool
	ctx     context.Context // bounds a release's delete
	reply   chan error      // buffered: the loop never waits to reply
}

// Token returns the lease's fencing token: the bucket's revision after the
// write that began this holder's tenure. Tokens strictly increase from one
// tenure to the next, whoever the holders; renewals keep the token. A
// resource that records the highest token it has seen and refuses lower
// ones cannot be written by a holder that was superseded.
func (l *Lease) Token() uint64 { return l.token }

// Partition returns the leased partition.
func (l *Lease) Partition() int { return l.partition }

// Holder returns the holder's id.
func (l *Lease) Holder() string { return l.holder }

// Valid reports whether the holder may act as the partition's owner at now,
// a reading of the Config's clock: the lease was not lost or released, and
// now is before the last recorded expiry less the margin. Another holder
// takes the lease only once the recorded expiry has passed by its own
// clock, so Valid turns false before anyone else can take it, as long as
// no two clocks differ by Margin or more.
func (l *Lease) Valid(now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.released && now.Before(l.validUntil)
}

// Lost returns a channel closed when the lease is no longer renewed: it
// was taken (ErrTaken, and Valid is false at once), it lapsed (ErrLapsed),
// it was released (ErrReleased), or Acquire's ctx ended (its error; Valid
// stays true until the validity runs out, and nobody can take the lease
// before). Err says which.
func (l *Lease) Lost() <-chan struct{} { return l.lost }

// Err returns why Lost was closed, nil before.
func (l *Lease) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Renew renews the lease now, through its goroutine, and returns the
// outcome: nil, or an error wrapping ErrTaken or ErrLapsed when the lease
// is lost, or another error (the bucket did not answer in time) after
// which the goroutine keeps trying. ctx bounds the wait only; after Lost is
// closed Renew returns Err.
func (l *Lease) Renew(ctx context.Context) error {
	r := request{reply: make(chan error, 1)}
	select {
	case l.reqs <- r:
	case <-l.lost:
		return l.Err()
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-r.reply:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Release gives the lease up on a clean stop: Valid reports false from
// then on, the goroutine ends, and the record is deleted with a
// compare-and-set on the holder's last revision, so that a successor need
// not wait for its expiry. ctx bounds the delete. If the record turns out
// to be another writer's, Release returns an error wrapping ErrTaken; if
// the delete fails otherwise, the record stays until it expires. Release
// may be called after Lost is closed (to delete the record of a lease
// whose ctx ended), and more than once.
func (l *Lease) Release(ctx context.Context) error {
	r := request{release: true, ctx: ctx, reply: make(chan error, 1)}
	select {
	case l.reqs <- r:
		return <-r.reply
	case <-l.lost:
	case <-ctx.Done():
		return ctx.Err()
	}
	l.releaseMu.Lock()
	defer l.releaseMu.Unlock()
	l.mu.Lock()
	done := l.released || errors.Is(l.err, ErrTaken)
	l.released = true
	l.mu.Unlock()
	if done {
		return nil
	}
	return l.delete(ctx)
}

// loop renews the lease until ctx ends, it is lost or released.
func (l *Lease) loop(ctx context.Context) {
	defer close(l.lost)
	timer := time.NewTimer(l.wait())
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			l.end(ctx.Err())
			return
		case <-timer.C:
			now := l.ls.cfg.Clock()
			if !now.Before(l.nextRenew) || !now.Before(l.validUntil) {
				if err := l.renew(ctx, now); fatal(err) {
					l.end(err)
					return
				}
			}
		case r := <-l.reqs:
			if r.release {
				l.mu.Lock()
				l.released = true
				l.mu.Unlock()
				err := l.delete(r.ctx)
				l.end(ErrReleased)
				r.reply <- err
				return
			}
			err := l.renew(ctx, l.ls.cfg.Clock())
			if fatal(err) {
				l.end(err) // before the reply, so that Valid is false when it arrives
				r.reply <- err
				return
			}
			r.reply <- err
		}
		timer.Reset(l.wait())
	}
}

// wait returns how long the loop may sleep: until the next renewal or the
// end of the validity, whichever is first.
func (l *Lease) wait() time.Duration {
	next := l.nextRenew
	if l.validUntil.Before(next) {
		next = l.validUntil
	}
	return max(next.Sub(l.ls.cfg.Clock()), 0)
}

// fatal reports whether err ends the lease.
func fatal(err error) bool {
	return errors.Is(err, ErrTaken) || errors.Is(err, ErrLapsed)
}

// end records why the loop ends; a lease that was taken is invalid at once.
func (l *Lease) end(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.err = err
	if errors.Is(err, ErrTaken) {
		l.validUntil = time.Time{}
	}
}

// renew writes the record again with a compare-and-set on the holder's
// last revision, if the lease is still valid at now. Called by the loop.
func (l *Lease) renew(ctx context.Context, now time.Time) error {
	cfg := &l.ls.cfg
	if !now.Before(l.validUntil) {
		return fmt.Errorf("renew %s at %s, valid until %s: %w", l.key, now.Format(time.RFC3339Nano), l.validUntil.Format(time.RFC3339Nano), ErrLapsed)
	}
	// A renewal that ends after the validity is of no use.
	opCtx, cancel := context.WithTimeout(ctx, min(cfg.RenewEvery, l.validUntil.Sub(now)))
	defer cancel()
	b := record{Holder: l.holder, Epoch: l.token, Expires: now.Add(cfg.TTL)}.encode()
	for try := 0; ; try++ {
		rev, err := l.ls.kv.Update(opCtx, l.key, b, l.rev)
		switch {
		case err == nil:
			l.rev = rev
			l.nextRenew = now.Add(cfg.RenewEvery)
			l.setValidUntil(now.Add(cfg.TTL - cfg.Margin))
			return nil
		case !isConflict(err):
			l.nextRenew = now.Add(cfg.RenewEvery / 4)
			return fmt.Errorf("placement: renew %s: %w", l.key, err)
		case try > 0:
			return fmt.Errorf("renew %s: the record changed again after revision %d: %w", l.key, l.rev, ErrTaken)
		}
		// Someone wrote the record after the holder's last known write:
		// another writer, or one of the holder's renewals whose reply was
		// lost.
		if err := l.adopt(opCtx); err != nil {
			if !fatal(err) {
				l.nextRenew = now.Add(cfg.RenewEvery / 4)
			}
			return err
		}
	}
}

// adopt reads the record after a failed compare-and-set and takes its
// revision as the holder's last write if the holder wrote it in this
// tenure (a renewal whose reply was lost). It returns an error wrapping
// ErrTaken if another writer wrote it, or another error if the read fails.
func (l *Lease) adopt(ctx context.Context) error {
	cur, err := l.ls.kv.Get(ctx, l.key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("renew %s: the record was deleted: %w", l.key, ErrTaken)
	}
	if err != nil {
		return fmt.Errorf("placement: renew %s: read after a failed compare-and-set: %w", l.key, err)
	}
	if cur.Revision() <= l.rev {
		// A replica behind the one that refused the write (direct gets
		// may be served by any replica): try again later.
		return fmt.Errorf("placement: renew %s: read revision %d after a failed compare-and-set on %d", l.key, cur.Revision(), l.rev)
	}
	r, err := decodeRecord(cur.Value(), cur.Revision())
	if err != nil {
		return fmt.Errorf("renew %s: revision %d: %v: %w", l.key, cur.Revision(), err, ErrTaken)
	}
	if r.Holder != l.holder || r.Epoch != l.token {
		return fmt.Errorf("renew %s: revision %d is held by %q in epoch %d: %w", l.key, cur.Revision(), r.Holder, r.Epoch, ErrTaken)
	}
	l.rev = cur.Revision()
	l.setValidUntil(r.Expires.Add(-l.ls.cfg.Margin))
	return nil
}

// setValidUntil publishes the validity computed by the loop.
func (l *Lease) setValidUntil(t time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.validUntil = t
}

// delete deletes the record if the holder's last write is still the latest.
func (l *Lease) delete(ctx context.Context) error {
	err := l.ls.kv.Delete(ctx, l.key, jetstream.LastRevision(l.rev))
	if isConflict(err) {
		return fmt.Errorf("release %s: the record changed after revision %d: %w", l.key, l.rev, ErrTaken)
	}
	if err != nil {
		return fmt.Errorf("placement: release %s: %w", l.key, err)
	}
	return nil
}
