package placement

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Config says where leases are kept and how long they last. Bucket is the
// one required field; the zero value of every other field means its
// default.
type Config struct {
	// Bucket is the JetStream key-value bucket holding the leases, such as
	// "wacp_leases". OpenLeases creates it, or updates its configuration.
	Bucket string

	// Replicas is the bucket's replica count, 1..5: 1 when zero (a single
	// server), 3 on a cluster of three.
	Replicas int

	// TTL is how long a write holds the lease: the record's expiry is the
	// writer's clock at the write plus TTL. Default 10 s.
	TTL time.Duration

	// Margin is how long before the recorded expiry the holder stops
	// counting its lease as valid. It must exceed the largest difference
	// between the clocks of any two holders (see the package doc).
	// 0 < Margin < TTL; default TTL/5.
	Margin time.Duration

	// RenewEvery is how long after a write the holder renews, by its
	// clock; after a renewal fails for another reason than a lost
	// compare-and-set, it tries again after RenewEvery/4. It must be less
	// than TTL−Margin; default TTL/5.
	RenewEvery time.Duration

	// Clock is the wall clock; nil means time.Now.
	Clock func() time.Time
}

// fill sets the defaults of the zero fields and checks c.
func (c *Config) fill() error {
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	if c.TTL == 0 {
		c.TTL = 10 * time.Second
	}
	if c.Margin == 0 {
		c.Margin = c.TTL / 5
	}
	if c.RenewEvery == 0 {
		c.RenewEvery = c.TTL / 5
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	switch {
	case c.Bucket == "":
		return errors.New("placement: config: no bucket")
	case c.Replicas < 1 || c.Replicas > 5:
		return fmt.Errorf("placement: config: %d replicas, want 1..5", c.Replicas)
	case c.TTL < 0:
		return fmt.Errorf("placement: config: TTL %v, want more than 0", c.TTL)
	case c.Margin <= 0 || c.Margin >= c.TTL:
		return fmt.Errorf("placement: config: margin %v, want more than 0 and less than the TTL %v", c.Margin, c.TTL)
	case c.RenewEvery <= 0 || c.RenewEvery >= c.TTL-c.Margin:
		return fmt.Errorf("placement: config: renewal every %v, want more than 0 and less than TTL−margin %v", c.RenewEvery, c.TTL-c.Margin)
	}
	return nil
}

// Leases hands out the leases of partitions, kept in a JetStream key-value
// bucket under the keys "p<partition>". It is safe for concurrent use.
type Leases struct {
	kv  jetstream.KeyValue
	cfg Config
}

// OpenLeases creates the bucket cfg names, or updates its configuration to
// cfg's (one value per key, file storage, cfg.Replicas), and returns the
// Leases kept in it.
func OpenLeases(ctx context.Context, js jetstream.JetStream, cfg Config) (*Leases, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      cfg.Bucket,
		Description: "wacpd partition leases (placement)",
		History:     1,
		Storage:     jetstream.FileStorage,
		Replicas:    cfg.Replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("placement: open lease bucket %s: %w", cfg.Bucket, err)
	}
	return &Leases{kv: kv, cfg: cfg}, nil
}

// key returns the key of partition p's lease.
func key(p int) string { return "p" + strconv.Itoa(p) }

// Acquire takes the lease of partition p for holder, a daemon id of 1..128
// printable ASCII characters other than space, '"' and '\'. It creates
// the record if there is none (never written, or deleted by a release), and
// takes it over, with a compare-and-set on the revision it read, if the
// record's expiry has passed by the Config's clock. It returns an error
// wrapping ErrHeld if the record has not expired or another writer got
// there first, and one wrapping ErrNotLease if the stored value is not a
// lease: such a partition stays refused until an operator deletes the key.
// A record this holder id wrote in another tenure (a previous run) counts
// as anyone's.
//
// ctx bounds the acquisition and the lease's life: the lease is renewed
// until ctx ends, the lease is lost, or Release. A ctx that ends does not
// release the lease; it lapses at its recorded expiry.
//
// If the reply to the write is lost (a timeout), the record may be this
// holder's even though Acquire returned an error; it then expires as any
// other, after at most TTL.
func (ls *Leases) Acquire(ctx context.Context, holder string, p int) (*Lease, error) {
	if err := checkHolder(holder); err != nil {
		return nil, fmt.Errorf("placement: acquire: %w", err)
	}
	if p < 0 || p >= MaxPartitions {
		return nil, fmt.Errorf("acquire partition %d: %w", p, ErrPartition)
	}
	k := key(p)
	cur, err := ls.kv.Get(ctx, k)
	absent := errors.Is(err, jetstream.ErrKeyNotFound)
	if err != nil && !absent {
		return nil, fmt.Errorf("placement: acquire %s: read: %w", k, err)
	}
	var prev uint64
	var old record
	if !absent {
		prev = cur.Revision()
		if old, err = decodeRecord(cur.Value(), prev); err != nil {
			return nil, fmt.Errorf("acquire %s: revision %d: %w", k, prev, err)
		}
	}
	// One reading of the clock, between the read and the write, decides
	// that the record has expired and gives the new record's expiry: the
	// holder's view of its expiry is never later than the record's.
	now := ls.cfg.Clock()
	if !absent && now.Before(old.Expires) {
		return nil, fmt.Errorf("acquire %s: held by %q until %s: %w", k, old.Holder, old.Expires.Format(time.RFC3339Nano), ErrHeld)
	}
	r := record{Holder: holder, Expires: now.Add(ls.cfg.TTL)}
	if err := r.valid(); err != nil {
		return nil, fmt.Errorf("placement: acquire %s: %w", k, err)
	}
	var rev uint64
	if absent {
		rev, err = ls.kv.Create(ctx, k, r.encode())
	} else {
		rev, err = ls.kv.Update(ctx, k, r.encode(), prev)
	}
	if isConflict(err) {
		return nil, fmt.Errorf("acquire %s: another writer was first: %w", k, ErrHeld)
	}
	if err != nil {
		return nil, fmt.Errorf("placement: acquire %s: write: %w", k, err)
	}
	l := &Lease{
		ls:         ls,
		holder:     holder,
		partition:  p,
		key:        k,
		token:      rev,
		reqs:       make(chan request),
		lost:       make(chan struct{}),
		rev:        rev,
		nextRenew:  now.Add(ls.cfg.RenewEvery),
		validUntil: now.Add(ls.cfg.TTL - ls.cfg.Margin),
	}
	go l.loop(ctx)
	return l, nil
}

// isConflict reports whether err is a failed compare-and-set.
func isConflict(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return true
	}
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) &&
		(apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
			apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}
