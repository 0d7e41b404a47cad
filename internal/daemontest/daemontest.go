// Package daemontest runs the real wacpd in the test process. It is for
// tests only: it imports "testing" and reports failures through a
// testing.TB.
package daemontest

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/wacpd/wacpd/daemon"
)

// Daemon is a wacpd running in the test process.
type Daemon struct {
	Dir        string // the data dir
	URL        string // the NATS URL clients use
	AdminToken string // the coordinator's token, from Dir/admin.token

	t      testing.TB
	cancel context.CancelFunc
	done   chan struct{} // closed when Run has returned
	err    error         // Run's result, set before done closes
	once   sync.Once
}

// Start runs daemon.New(cfg)+Run on a free port of 127.0.0.1 and waits
// until the daemon is ready. cfg.DataDir defaults to t.TempDir(), Listen to
// "127.0.0.1:0" and Stdout to io.Discard. It fails the test if Run returns
// before Ready. At cleanup it stops the daemon and reports an error if Run
// did not return nil.
func Start(t testing.TB, cfg daemon.Config) *Daemon {
	t.Helper()
	if cfg.DataDir == "" {
		cfg.DataDir = t.TempDir()
	}
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	if cfg.Stdout == nil {
		cfg.Stdout = io.Discard
	}
	rt, err := daemon.New(cfg)
	if err != nil {
		t.Fatalf("daemon.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	d := &Daemon{Dir: cfg.DataDir, t: t, cancel: cancel, done: make(chan struct{})}
	go func() {
		d.err = rt.Run(ctx)
		close(d.done)
	}()
	t.Cleanup(d.Stop)
	select {
	case <-rt.Ready():
	case <-d.done:
		d.once.Do(cancel) // reported here, not again by Stop
		t.Fatalf("Run = %v before ready", d.err)
	}
	d.URL = rt.URL()
	b, err := os.ReadFile(filepath.Join(d.Dir, daemon.AdminTokenFile))
	if err != nil {
		t.Fatalf("read admin token: %v", err)
	}
	d.AdminToken = strings.TrimSpace(string(b))
	return d
}

// Stop stops the daemon, waits for Run to return and reports an error if it
// did not return nil. Start registers it as a cleanup; calling it earlier
// (to inspect a stopped daemon's data dir) is fine, and later calls do
// nothing.
func (d *Daemon) Stop() {
	d.once.Do(func() {
		d.cancel()
		<-d.done
		if d.err != nil {
			d.t.Errorf("Run = %v, want nil", d.err)
		}
	})
}
