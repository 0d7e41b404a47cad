package daemon

import "sync/atomic"

// workers runs request handlers, each on a goroutine of its own as before,
// but keeps up to max goroutines that finished one waiting for the next:
// a handler's call chain (decoding, the engine) grows a new goroutine's
// stack by copying it, about 5 µs of each checkpoint's CPU at 64 clients,
// and a goroutine that stays keeps its grown stack. A handler that blocks
// (a long poll) holds its goroutine as before; nothing waits for a free
// one. stop releases the waiting goroutines.
type workers struct {
	work chan func() // unbuffered: a send succeeds only when one waits
	idle atomic.Int32
	max  int32
	stop chan struct{}
}

// maxIdleWorkers bounds the goroutines waiting for a request: a few
// megabytes of stacks at most.
const maxIdleWorkers = 256

func newWorkers(max int) *workers {
	return &workers{work: make(chan func()), max: int32(max), stop: make(chan struct{})}
}

// run runs f on a waiting goroutine, or a new one.
func (w *workers) run(f func()) {
	select {
	case w.work <- f:
	default:
		go w.loop(f)
	}
}

func (w *workers) loop(f func()) {
	for {
		f()
		if w.idle.Add(1) > w.max {
			w.idle.Add(-1)
			return
		}
		select {
		case f = <-w.work:
			w.idle.Add(-1)
		case <-w.stop:
			w.idle.Add(-1)
			return
		}
	}
}

// close releases the waiting goroutines; run must not be called after.
func (w *workers) close() { close(w.stop) }
