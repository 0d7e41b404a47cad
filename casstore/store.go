package casstore

import "context"

// Fetcher reads objects.
type Fetcher interface {
	// Get returns the content of ref. It returns an error wrapping
	// ErrNotFound if there is no such object, and a *CorruptError if the
	// stored bytes do not hash to ref. The returned slice belongs to the
	// caller.
	Get(ctx context.Context, ref Ref) ([]byte, error)
}

// Putter stores objects.
type Putter interface {
	// Put stores data and returns RefOf(data). It is idempotent: if the
	// object already exists it is left untouched and Put returns its Ref.
	// The store does not retain data after Put returns.
	Put(ctx context.Context, data []byte) (Ref, error)
}

// Statter checks for objects without reading them.
type Statter interface {
	// Has reports whether an object with the given Ref is stored. It does
	// not verify the content.
	Has(ctx context.Context, ref Ref) (bool, error)
}

// Store is a complete content-addressed store.
type Store interface {
	Fetcher
	Putter
	Statter
}

// Enumerator is an optional ability of a Store, checked with a type
// assertion:
//
//	if e, ok := st.(casstore.Enumerator); ok { ... }
type Enumerator interface {
	// Enumerate calls fn with the Ref and size in bytes of every stored
	// object whose Ref sorts strictly after after (see Ref.Compare), in
	// ascending order. Pass the zero Ref to start from the beginning. If fn
	// returns an error, Enumerate stops and returns that error unchanged, so
	// callers can stop early with a sentinel of their own.
	Enumerate(ctx context.Context, after Ref, fn func(Ref, int64) error) error
}
