package runtime

import (
	"fmt"
	"os"
	goruntime "runtime"
	"strings"
	"testing"
	"time"
)

// TestMain runs the crash test's child writer when asked to, and otherwise
// the tests, followed by a goroutine leak check: every goroutine the engine
// or Badger started must be gone once the tests closed their engines.
func TestMain(m *testing.M) {
	if dir := os.Getenv("WACP_CRASH_CHILD"); dir != "" {
		if err := crashChild(dir); err != nil {
			fmt.Fprintln(os.Stderr, "crash child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	base := goroutines()
	code := m.Run()
	if code == 0 {
		deadline := time.Now().Add(5 * time.Second)
		for goroutines() > base && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if n := goroutines(); n > base {
			buf := make([]byte, 1<<20)
			fmt.Fprintf(os.Stderr, "goroutine leak: %d goroutines after the tests, %d before\n%s\n",
				n, base, buf[:goruntime.Stack(buf, true)])
			code = 1
		}
	}
	os.Exit(code)
}

// goroutines counts the goroutines, less the os/signal loop that the
// fuzzing coordinator (go test -fuzz) starts to catch SIGINT and never
// stops.
func goroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := goruntime.Stack(buf, true)
		if n < len(buf) {
			return goruntime.NumGoroutine() - strings.Count(string(buf[:n]), "\nos/signal.loop()")
		}
		buf = make([]byte, 2*len(buf))
	}
}
