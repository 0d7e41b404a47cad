package hwtui

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wacpd/wacpd/highway"
)

// screen collects what the program writes; the renderer writes while the
// test reads.
type screen struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// waitFor polls until the output since mark holds want, and returns the
// new mark.
func (s *screen) waitFor(t *testing.T, mark int, want string) int {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		s.mu.Lock()
		out := s.b.String()
		s.mu.Unlock()
		if i := strings.Index(out[mark:], want); i >= 0 {
			return mark + i + len(want)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the program did not write %q in 20s; it wrote since:\n%s", want, out[mark:])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitUntil polls cond.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 20s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// runUI runs Run on src with a pipe for its keyboard; the returned stop
// quits with q and checks Run returned nil.
func runUI(t *testing.T, src Source) (*screen, *io.PipeWriter, func()) {
	t.Helper()
	inR, inW := io.Pipe()
	out := &screen{}
	done := make(chan error, 1)
	go func() { done <- Run(context.Background(), src, inR, out) }()
	stop := func() {
		t.Helper()
		if _, err := io.WriteString(inW, "q"); err != nil {
			t.Fatalf("type q: %v", err)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("Run after q = %v, want nil", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("Run did not return within 20s of q")
		}
		inW.Close()
	}
	return out, inW, stop
}

// TestRunFollowsChanges: each event of the feed reads the queue again,
// and the screen shows the gate it brought.
func TestRunFollowsChanges(t *testing.T) {
	events := make(chan struct{})
	src := &fakeSource{gates: []highway.Gate{gate(1, "GATE-ONE", highway.TaskApproval, taskSubject, false)}}
	src.changes = func(ctx context.Context, fn func()) error {
		fn()
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-events:
				fn()
			}
		}
	}
	out, _, stop := runUI(t, src)
	mark := out.waitFor(t, 0, "GATE-ONE")
	src.set(func(f *fakeSource) {
		f.gates = append(f.gates, gate(2, "GATE-TWO", highway.TaskApproval, taskSubject, false))
	})
	events <- struct{}{}
	out.waitFor(t, mark, "2 gates pending")
	stop()
}

// TestRunReconnects: when the feed breaks the screen says the daemon is
// unreachable; Run starts the feed again, and once it follows the queue
// is read again and the screen shows it.
func TestRunReconnects(t *testing.T) {
	breakFeed := make(chan struct{})
	src := &fakeSource{gates: []highway.Gate{gate(1, "GATE-ONE", highway.TaskApproval, taskSubject, false)}}
	src.changes = func(ctx context.Context, fn func()) error {
		fn() // following
		select {
		case <-ctx.Done():
			return nil
		case <-breakFeed:
			return errors.New("the daemon does not answer")
		}
	}
	out, _, stop := runUI(t, src)
	mark := out.waitFor(t, 0, "● connected")
	src.set(func(f *fakeSource) { f.queueErr = errors.New("no reply in time") })
	breakFeed <- struct{}{}
	mark = out.waitFor(t, mark, "daemon unreachable, reconnecting…")
	// The feed is started again after its backoff.
	waitUntil(t, "the feed is restarted", func() bool {
		src.mu.Lock()
		defer src.mu.Unlock()
		return src.feeds >= 2
	})
	src.set(func(f *fakeSource) {
		f.queueErr = nil
		f.gates = append(f.gates, gate(2, "GATE-TWO", highway.TaskApproval, taskSubject, false))
	})
	out.waitFor(t, mark, "● connected")
	out.waitFor(t, mark, "2 gates pending")
	stop()
}

// TestRunEndsWithContext: Run returns nil when its context ends.
func TestRunEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	inR, inW := io.Pipe()
	defer inW.Close()
	out := &screen{}
	done := make(chan error, 1)
	go func() { done <- Run(ctx, &fakeSource{}, inR, out) }()
	out.waitFor(t, 0, "no gate pending")
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run after its context ended = %v, want nil", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return within 20s of its context's end")
	}
}
