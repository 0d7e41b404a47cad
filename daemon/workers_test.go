package daemon

import (
	goruntime "runtime"
	"sync"
	"testing"
	"time"
)

// waitIdle waits until n goroutines of w wait for work.
func waitIdle(t *testing.T, w *workers, n int32) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for w.idle.Load() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines wait, want %d", w.idle.Load(), n)
		}
		goruntime.Gosched()
	}
}

// TestWorkers: a handler that blocks does not hold up the next (each runs
// at once, on a goroutine of its own); goroutines that finished wait for
// the next handler, up to max, and run it; close releases them.
func TestWorkers(t *testing.T) {
	w := newWorkers(3)
	release := make(chan struct{})
	var done sync.WaitGroup
	for range 10 {
		done.Add(1)
		w.run(func() { defer done.Done(); <-release }) // returns although none finished
	}
	close(release)
	done.Wait()
	waitIdle(t, w, 3)

	// A waiting goroutine takes the next handler: one fewer waits while it
	// runs.
	started, hold := make(chan struct{}), make(chan struct{})
	w.run(func() { close(started); <-hold })
	<-started
	if got := w.idle.Load(); got != 2 {
		t.Fatalf("%d goroutines wait while one runs the next handler, want 2", got)
	}
	close(hold)
	waitIdle(t, w, 3) // it waits again

	before := goruntime.NumGoroutine()
	w.close()
	waitIdle(t, w, 0)
	deadline := time.Now().Add(10 * time.Second)
	for goruntime.NumGoroutine() > before-3 {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines after close, %d before: the waiting ones did not end", goruntime.NumGoroutine(), before)
		}
		goruntime.Gosched()
	}
}
