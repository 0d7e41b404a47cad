package daemon

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/wacpd/wacpd/internal/clocktest"
	"github.com/wacpd/wacpd/runtime"
	"github.com/wacpd/wacpd/workspace"
)

// The engine the daemon's own tests serve, made through the engine's
// exported API only.

var ctx = context.Background()

// openTest opens an engine on a fresh temp dir (real Badger). Its running
// trail check is off: these tests compare the whole database before and
// after a request (runtime.Fingerprint), and the check's mark, written
// every few seconds on its own, would move it under them (the running
// check has its tests in package runtime).
func openTest(t testing.TB, mod ...func(*runtime.Config)) *runtime.Engine {
	t.Helper()
	cfg := runtime.Config{DataDir: t.TempDir(), MarkInterval: -1}
	for _, m := range mod {
		m(&cfg)
	}
	e, err := runtime.Open(cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// newWorker creates a worker under the root and activates it with a directive.
func newWorker(t testing.TB, e *runtime.Engine) *workspace.Workspace {
	t.Helper()
	w, err := e.CreateWorkspace(ctx, e.Root(), mustJSON(map[string]any{"role": "worker"}))
	if err != nil {
		t.Fatalf("CreateWorkspace: %v", err)
	}
	_, err = e.SendEnvelope(ctx, e.Root(), mustJSON(map[string]any{
		"to": w.ID, "type": "directive", "payload": map[string]any{"content": "do the work"},
	}))
	if err != nil {
		t.Fatalf("SendEnvelope directive: %v", err)
	}
	return w
}

// wantCode fails the test unless runtime.Code(err) is want ("" = success).
func wantCode(t testing.TB, what string, err error, want string) {
	t.Helper()
	if got := runtime.Code(err); got != want {
		t.Fatalf("%s: Code(%v) = %q, want %q", what, err, got, want)
	}
}

// fakeClock is a settable wall clock for Config.Now.
type fakeClock = clocktest.Fake

func newFakeClock() *fakeClock { return clocktest.New() }

func withFakeClock(c *fakeClock) func(*runtime.Config) {
	return func(cfg *runtime.Config) { cfg.Now = c.Now }
}
