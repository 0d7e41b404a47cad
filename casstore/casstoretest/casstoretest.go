// Package casstoretest is a conformance suite for casstore.Store
// implementations. Every backend's tests call Run.
package casstoretest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/wacpd/wacpd/casstore"
)

// Run tests the behaviour every casstore.Store must have. newStore is called
// once per subtest and must return an empty store; it should register any
// cleanup with t.Cleanup. If the store implements casstore.Enumerator, that
// is tested too.
func Run(t *testing.T, newStore func(t *testing.T) casstore.Store) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(*testing.T, casstore.Store)
	}{
		{"PutGet", testPutGet},
		{"PutIdempotent", testPutIdempotent},
		{"Missing", testMissing},
		{"NoAliasing", testNoAliasing},
		{"Concurrent", testConcurrent},
		{"CanceledContext", testCanceledContext},
		{"Enumerate", testEnumerate},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, newStore(t)) })
	}
}

var payloads = []struct {
	name string
	data []byte
}{
	{"empty", []byte{}},
	{"abc", []byte("abc")},
	{"zeros", make([]byte, 100)},
	{"1KiB", bytes.Repeat([]byte{0xff, 0x00, 'x'}, 342)[:1024]},
	{"64KiB", bytes.Repeat([]byte("0123456789abcdef"), 4096)},
}

func testPutGet(t *testing.T, st casstore.Store) {
	ctx := t.Context()
	for _, p := range payloads {
		ref, err := st.Put(ctx, p.data)
		if want := casstore.RefOf(p.data); ref != want || err != nil {
			t.Fatalf("Put(%s) = %v, %v, want %v, nil", p.name, ref, err, want)
		}
		got, err := st.Get(ctx, ref)
		if err != nil || !bytes.Equal(got, p.data) {
			t.Errorf("Get(%s) = %d bytes, %v, want %d bytes, nil", ref, len(got), err, len(p.data))
		}
		if ok, err := st.Has(ctx, ref); !ok || err != nil {
			t.Errorf("Has(%s) = %v, %v, want true, nil", ref, ok, err)
		}
	}
}

func testPutIdempotent(t *testing.T, st casstore.Store) {
	ctx := t.Context()
	data := []byte("same bytes twice")
	for i := range 3 {
		if ref, err := st.Put(ctx, data); ref != casstore.RefOf(data) || err != nil {
			t.Fatalf("Put #%d = %v, %v, want %v, nil", i, ref, err, casstore.RefOf(data))
		}
	}
	if got, err := st.Get(ctx, casstore.RefOf(data)); err != nil || !bytes.Equal(got, data) {
		t.Errorf("Get after repeated Put = %q, %v, want %q, nil", got, err, data)
	}
}

func testMissing(t *testing.T, st casstore.Store) {
	ctx := t.Context()
	if _, err := st.Put(ctx, []byte("present")); err != nil {
		t.Fatalf("Put: %v", err)
	}
	for _, ref := range []casstore.Ref{{}, casstore.RefOf([]byte("absent"))} {
		if got, err := st.Get(ctx, ref); !errors.Is(err, casstore.ErrNotFound) {
			t.Errorf("Get(%s) = %q, %v, want ErrNotFound", ref, got, err)
		}
		if ok, err := st.Has(ctx, ref); ok || err != nil {
			t.Errorf("Has(%s) = %v, %v, want false, nil", ref, ok, err)
		}
	}
}

// testNoAliasing checks that the store neither keeps the caller's slice nor
// hands out its own.
func testNoAliasing(t *testing.T, st casstore.Store) {
	ctx := t.Context()
	data := []byte("do not alias me")
	want := bytes.Clone(data)
	ref, err := st.Put(ctx, data)
	if err != nil {
		t.Fatalf("Put: %v", err)
	}
	data[0] = 'X'
	got, err := st.Get(ctx, ref)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("Get after caller modified input = %q, %v, want %q, nil", got, err, want)
	}
	got[0] = 'Y'
	if again, err := st.Get(ctx, ref); err != nil || !bytes.Equal(again, want) {
		t.Errorf("Get after caller modified output = %q, %v, want %q, nil", again, err, want)
	}
}

func testConcurrent(t *testing.T, st casstore.Store) {
	ctx := t.Context()
	const workers = 8
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := range 20 {
				shared := fmt.Appendf(nil, "shared %d", i)
				own := fmt.Appendf(nil, "worker %d item %d", w, i)
				for _, data := range [][]byte{shared, own} {
					if ref, err := st.Put(ctx, data); err != nil || ref != casstore.RefOf(data) {
						errs <- fmt.Errorf("Put(%q) = %v, %v, want %v, nil", data, ref, err, casstore.RefOf(data))
						return
					}
					if got, err := st.Get(ctx, casstore.RefOf(data)); err != nil || !bytes.Equal(got, data) {
						errs <- fmt.Errorf("Get(%q) = %q, %v, want same, nil", data, got, err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func testCanceledContext(t *testing.T, st casstore.Store) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	ref := casstore.RefOf([]byte("x"))
	if _, err := st.Put(ctx, []byte("x")); !errors.Is(err, context.Canceled) {
		t.Errorf("Put(canceled ctx) error = %v, want context.Canceled", err)
	}
	if _, err := st.Get(ctx, ref); !errors.Is(err, context.Canceled) {
		t.Errorf("Get(canceled ctx) error = %v, want context.Canceled", err)
	}
	if _, err := st.Has(ctx, ref); !errors.Is(err, context.Canceled) {
		t.Errorf("Has(canceled ctx) error = %v, want context.Canceled", err)
	}
}

func testEnumerate(t *testing.T, st casstore.Store) {
	e, ok := st.(casstore.Enumerator)
	if !ok {
		t.Skip("store does not implement casstore.Enumerator")
	}
	ctx := t.Context()
	sizes := make(map[casstore.Ref]int64)
	var refs []casstore.Ref
	for i := range 10 {
		data := bytes.Repeat([]byte{byte('a' + i)}, i*7)
		ref, err := st.Put(ctx, data)
		if err != nil {
			t.Fatalf("Put: %v", err)
		}
		sizes[ref] = int64(len(data))
		refs = append(refs, ref)
	}
	slices.SortFunc(refs, casstore.Ref.Compare)

	collect := func(after casstore.Ref) []casstore.Ref {
		t.Helper()
		var got []casstore.Ref
		err := e.Enumerate(ctx, after, func(ref casstore.Ref, size int64) error {
			if size != sizes[ref] {
				t.Errorf("Enumerate size of %s = %d, want %d", ref, size, sizes[ref])
			}
			got = append(got, ref)
			return nil
		})
		if err != nil {
			t.Fatalf("Enumerate(%s) error = %v", after, err)
		}
		return got
	}
	tests := []struct {
		name  string
		after casstore.Ref
		want  []casstore.Ref
	}{
		{"from start", casstore.Ref{}, refs},
		{"after first", refs[0], refs[1:]},
		{"after middle", refs[4], refs[5:]},
		{"after absent ref", casstore.RefOf([]byte("absent")), refsAfter(refs, casstore.RefOf([]byte("absent")))},
		{"after last", refs[len(refs)-1], nil},
	}
	for _, tt := range tests {
		if got := collect(tt.after); !slices.Equal(got, tt.want) {
			t.Errorf("Enumerate(%s) %s = %v, want %v", tt.after, tt.name, got, tt.want)
		}
	}

	stop := errors.New("stop")
	calls := 0
	err := e.Enumerate(ctx, casstore.Ref{}, func(casstore.Ref, int64) error { calls++; return stop })
	if err != stop || calls != 1 {
		t.Errorf("Enumerate with fn returning stop = %v after %d calls, want stop after 1", err, calls)
	}
}

func refsAfter(sorted []casstore.Ref, after casstore.Ref) []casstore.Ref {
	i, _ := slices.BinarySearchFunc(sorted, after, casstore.Ref.Compare)
	return sorted[i:]
}
