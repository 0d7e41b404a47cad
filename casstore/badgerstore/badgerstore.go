// Package badgerstore is casstore's Badger backend: a casstore.Store, plus
// PutTxn, GetTxn and HasTxn for callers that need an object to commit
// atomically with their own records. The key layout is in package
// casstore's documentation (Format).
package badgerstore

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/casstore"
	"github.com/wacpd/wacpd/internal/seglog"
)

var (
	_ casstore.Store      = (*Store)(nil)
	_ casstore.Enumerator = (*Store)(nil)
)

// KeyPrefix is the Badger key prefix owned by this package. See the Format
// section of package casstore's documentation.
const KeyPrefix = "cas/"

// Store is a casstore.Store backed by a Badger database. It is safe for
// concurrent use.
type Store struct {
	db  *badger.DB
	seg *seglog.Log
	mu  sync.Mutex // with seg, one Put at a time: seg builds one block at a time
}

// New returns a Store that keeps objects in db under KeyPrefix, their
// bytes in seg's segment files (in Badger itself when seg is nil). It does
// not open db or seg, and the caller still owns them and must close them
// after the last use of the Store. With seg, every Put is a block of its
// own, written before its transaction commits.
func New(db *badger.DB, seg *seglog.Log) *Store { return &Store{db: db, seg: seg} }

// Get returns the verified content of ref; see Fetcher.
func (b *Store) Get(ctx context.Context, ref casstore.Ref) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var data []byte
	err := b.db.View(func(txn *badger.Txn) error {
		var err error
		data, err = GetTxn(txn, b.seg, ref)
		return err
	})
	return data, err
}

// Put stores data unless it is already present; see Putter. Objects larger
// than Store's value limit return an error wrapping ErrTooLarge.
func (b *Store) Put(ctx context.Context, data []byte) (casstore.Ref, error) {
	if err := ctx.Err(); err != nil {
		return casstore.Ref{}, err
	}
	if err := b.checkSize(len(data)); err != nil {
		return casstore.Ref{}, err
	}
	if b.seg != nil {
		b.mu.Lock()
		defer b.mu.Unlock()
	}
	var ref casstore.Ref
	put := func(txn *badger.Txn) error {
		var err error
		if ref, err = PutTxn(b.seg.Txn(txn), data); err != nil {
			return err
		}
		blk, err := b.seg.Seal(txn)
		if err != nil || blk == nil {
			return err
		}
		if err := b.seg.Write(blk); err != nil {
			b.seg.Abort()
			return err
		}
		return nil
	}
	err := b.db.Update(put)
	if errors.Is(err, badger.ErrConflict) {
		// The only key read was ref's, so another transaction committed
		// this very object first. Once more finds it present. (The block
		// written for the first attempt stays: its redo sets the object
		// that is there.)
		err = b.db.Update(put)
	}
	if err != nil {
		return casstore.Ref{}, err
	}
	return ref, nil
}

// Has reports whether ref is stored; see Statter.
func (b *Store) Has(ctx context.Context, ref casstore.Ref) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	var ok bool
	err := b.db.View(func(txn *badger.Txn) error {
		var err error
		ok, err = HasTxn(txn, ref)
		return err
	})
	return ok, err
}

// Enumerate implements Enumerator. It runs inside one read transaction and
// reads each value to report its exact size, so fn should be quick: a long
// enumeration holds back Store's garbage collection.
func (b *Store) Enumerate(ctx context.Context, after casstore.Ref, fn func(casstore.Ref, int64) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return b.db.View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.PrefetchValues = false
		opts.Prefix = []byte(KeyPrefix)
		it := txn.NewIterator(opts)
		defer it.Close()
		start := Key(after)
		for it.Seek(start); it.Valid(); it.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			item := it.Item()
			ref, err := casstore.FromBytes(item.Key()[len(KeyPrefix):])
			if err != nil {
				return fmt.Errorf("enumerate: key %q: %w", item.Key(), err)
			}
			if ref == after {
				continue
			}
			var size int64
			if err := b.seg.Value(item, func(v []byte) error { size = int64(len(v)); return nil }); err != nil {
				return fmt.Errorf("enumerate %s: %w", ref, err)
			}
			if err := fn(ref, size); err != nil {
				return err
			}
		}
		return nil
	})
}

// maxInMemory is the largest object Put accepts when Store runs in memory.
// There Store keeps every value in its LSM tree and refuses values over its
// initial ValueThreshold, at most 1 MiB; v4.9.6 panics on a value of exactly
// that size, so stop one byte short.
const maxInMemory = 1<<20 - 1

// checkSize returns an error wrapping ErrTooLarge if Store would refuse a
// value of n bytes with b.db's options.
func (b *Store) checkSize(n int) error {
	opts := b.db.Opts()
	limit := opts.ValueLogFileSize
	if opts.InMemory {
		limit = min(limit, maxInMemory)
	}
	if int64(n) > limit {
		return fmt.Errorf("put %d bytes, limit %d: %w", n, limit, casstore.ErrTooLarge)
	}
	return nil
}

// PutTxn stores data within txn, which must be a read-write transaction, and
// returns its Ref. With a Log under txn, the bytes go into its block being
// built, which the caller seals and writes before it commits txn. If the object already exists, or txn has already written
// it, PutTxn writes nothing. The object becomes visible only when the caller
// commits txn, together with anything else txn writes. Like badger.Txn.Set,
// PutTxn keeps a reference to data until txn ends.
func PutTxn(txn *seglog.Txn, data []byte) (casstore.Ref, error) {
	ref := casstore.RefOf(data)
	ok, err := HasTxn(txn.Txn, ref)
	if err != nil {
		return casstore.Ref{}, err
	}
	if ok {
		return ref, nil
	}
	if err := PutSealedTxn(txn, ref, data); err != nil {
		return casstore.Ref{}, err
	}
	return ref, nil
}

// PutSealedTxn stores data under ref within txn, for an object the caller
// knows is new (a checkpoint's bytes hold a fresh id) and whose ref it has
// checked is RefOf(data). Unlike PutTxn it does not look the object up
// first: writing identical bytes twice is harmless, and every read verifies
// the hash. Like PutTxn it keeps a reference to data until txn ends.
func PutSealedTxn(txn *seglog.Txn, ref casstore.Ref, data []byte) error {
	if err := txn.SetValue(Key(ref), data); err != nil {
		return fmt.Errorf("put %s: %w", ref, err)
	}
	return nil
}

// GetTxn returns a verified copy of the content of ref as seen by txn. It
// returns an error wrapping ErrNotFound if there is none, and a
// *CorruptError if the stored bytes do not hash to ref.
func GetTxn(txn *badger.Txn, seg *seglog.Log, ref casstore.Ref) ([]byte, error) {
	item, err := txn.Get(Key(ref))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, fmt.Errorf("get %s: %w", ref, casstore.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", ref, err)
	}
	data, err := seg.ValueCopy(item)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", ref, err)
	}
	if err := casstore.Verify(ref, data); err != nil {
		return nil, err
	}
	return data, nil
}

// HasTxn reports whether ref is stored as seen by txn. It does not read or
// verify the content.
func HasTxn(txn *badger.Txn, ref casstore.Ref) (bool, error) {
	_, err := txn.Get(Key(ref))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, badger.ErrKeyNotFound):
		return false, nil
	}
	return false, fmt.Errorf("has %s: %w", ref, err)
}

// Key returns the Badger key of ref: KeyPrefix followed by the raw sum.
func Key(ref casstore.Ref) []byte {
	sum := ref.Sum()
	return append([]byte(KeyPrefix), sum[:]...)
}
