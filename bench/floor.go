package bench

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// Floor measures the disk's limit for one writer under dir: a new Badger
// database with synchronous writes, one transaction per write of a value of
// size bytes, for d or, if n is positive, n writes. The daemon's engine
// opens Badger with the same options.
func Floor(ctx context.Context, dir string, size int, d time.Duration, n int) (FloorReport, error) {
	db, err := badger.Open(badger.DefaultOptions(dir).WithSyncWrites(true).WithLogger(nil))
	if err != nil {
		return FloorReport{}, fmt.Errorf("open floor database %s: %w", dir, err)
	}
	start := time.Now()
	lat, err := floorWrites(ctx, db, size, start.Add(d), n)
	elapsed := time.Since(start)
	if cerr := db.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close floor database: %w", cerr)
	}
	if err != nil {
		return FloorReport{}, err
	}
	return FloorReport{Writes: Summarize(lat), Elapsed: elapsed, Rate: rate(len(lat), elapsed)}, nil
}

// floorWrites writes until end or, if n is positive, n times, and returns
// each write's latency.
func floorWrites(ctx context.Context, db *badger.DB, size int, end time.Time, n int) ([]time.Duration, error) {
	val := payload(size)
	var lat []time.Duration
	for i := uint64(0); ; i++ {
		if n > 0 {
			if len(lat) == n {
				return lat, nil
			}
		} else if !time.Now().Before(end) {
			return lat, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		key := binary.BigEndian.AppendUint64([]byte("floor/"), i)
		t0 := time.Now()
		if err := db.Update(func(txn *badger.Txn) error { return txn.Set(key, val) }); err != nil {
			return nil, fmt.Errorf("floor write %d: %w", i, err)
		}
		lat = append(lat, time.Since(t0))
	}
}

// payload returns size printable bytes that do not compress to nothing.
func payload(size int) []byte {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, size)
	x := uint32(2463534242)
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = alphabet[x%uint32(len(alphabet))]
	}
	return b
}
