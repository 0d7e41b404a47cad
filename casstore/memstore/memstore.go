// Package memstore is an in-memory casstore.Store for tests and examples. It
// is not for production: nothing is persisted and memory is never freed.
package memstore

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/wacpd/wacpd/casstore"
)

var (
	_ casstore.Store      = (*Store)(nil)
	_ casstore.Enumerator = (*Store)(nil)
)

// Store is an in-memory casstore.Store. It is safe for concurrent use.
type Store struct {
	mu      sync.RWMutex            // guards objects
	objects map[casstore.Ref][]byte // never modified after insertion
}

// New returns an empty Store. It is not for production use: objects live
// only in memory, for the life of the Store.
func New() *Store {
	return &Store{objects: make(map[casstore.Ref][]byte)}
}

// Get returns a verified copy of the content of ref.
func (s *Store) Get(ctx context.Context, ref casstore.Ref) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	data, ok := s.objects[ref]
	s.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("get %s: %w", ref, casstore.ErrNotFound)
	}
	if err := casstore.Verify(ref, data); err != nil {
		return nil, err
	}
	return bytes.Clone(data), nil
}

// Put stores a copy of data unless it is already present.
func (s *Store) Put(ctx context.Context, data []byte) (casstore.Ref, error) {
	if err := ctx.Err(); err != nil {
		return casstore.Ref{}, err
	}
	ref := casstore.RefOf(data)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.objects[ref]; !ok {
		s.objects[ref] = bytes.Clone(data)
	}
	return ref, nil
}

// Has reports whether ref is stored.
func (s *Store) Has(ctx context.Context, ref casstore.Ref) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	s.mu.RLock()
	_, ok := s.objects[ref]
	s.mu.RUnlock()
	return ok, nil
}

// Enumerate implements casstore.Enumerator. It works on a snapshot taken
// when it starts, so fn may call other methods of s.
func (s *Store) Enumerate(ctx context.Context, after casstore.Ref, fn func(casstore.Ref, int64) error) error {
	type sized struct {
		ref  casstore.Ref
		size int64
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.RLock()
	var snap []sized
	for ref, data := range s.objects {
		if ref.Compare(after) > 0 {
			snap = append(snap, sized{ref, int64(len(data))})
		}
	}
	s.mu.RUnlock()
	slices.SortFunc(snap, func(a, b sized) int { return a.ref.Compare(b.ref) })
	for _, o := range snap {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(o.ref, o.size); err != nil {
			return err
		}
	}
	return nil
}
