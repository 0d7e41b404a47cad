package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/wacpd/wacpd/daemon"
)

// daemon is a wacpd running in this process.
type inProcess struct {
	url, token string
	cancel     context.CancelFunc
	done       chan error // receives Run's result
}

// startDaemon runs a daemon on dir, listening on a free TCP port, and
// returns once it accepts requests.
func startDaemon(ctx context.Context, dir string, memoryLimit int64) (*inProcess, error) {
	cfg := daemon.Config{DataDir: dir, Listen: "127.0.0.1:0", Stdout: io.Discard}
	cfg.MemoryLimit = memoryLimit
	rt, err := daemon.New(cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	d := &inProcess{cancel: cancel, done: make(chan error, 1)}
	go func() { d.done <- rt.Run(ctx) }()
	select {
	case <-rt.Ready():
	case err := <-d.done:
		cancel()
		if err == nil {
			err = errors.New("stopped before it was ready")
		}
		return nil, fmt.Errorf("start daemon: %w", err)
	}
	b, err := os.ReadFile(filepath.Join(dir, daemon.AdminTokenFile))
	if err != nil {
		d.stop()
		return nil, fmt.Errorf("read admin token: %w", err)
	}
	d.url, d.token = rt.URL(), strings.TrimSpace(string(b))
	return d, nil
}

// stop shuts the daemon down and returns Run's error.
func (d *inProcess) stop() error {
	d.cancel()
	return <-d.done
}
