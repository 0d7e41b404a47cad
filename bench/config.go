package bench

import (
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Config configures a Run. The zero value of every field means its default.
type Config struct {
	// URL is a running daemon's NATS URL, or the comma-separated servers
	// of the NATS cluster it (or a deployment of several daemons) runs
	// on; "" starts one in-process on a temporary directory under Dir.
	URL string
	// Token is the coordinator's (admin) token for URL; "" lets the client
	// find it ($WACP_TOKEN, ./wacp-data/admin.token).
	Token string
	// NATSToken authenticates the connections to URL when the daemon runs
	// on an external NATS server (wacpd -nats-url): client.Options.NATSToken;
	// "" lets the client take $WACP_NATS_TOKEN.
	NATSToken string
	// Processes are other processes (with URL: the daemons and NATS
	// servers) whose CPU time over the load the report gives per
	// checkpoint. Linux only: they are read in /proc.
	Processes []Process
	// Dir is the parent of the temporary directories of the daemon's data
	// and the floor's database; default os.TempDir(). Both are removed
	// after the run.
	Dir string
	// Clients is the number of agent workspaces writing at once; default 1.
	Clients int
	// Size is the length in bytes of each checkpoint's payload content and
	// of each floor write; default 1024.
	Size int
	// Duration is how long the load runs; default 10s. N, if set, wins.
	Duration time.Duration
	// N, if positive, is the total number of checkpoints, over all clients.
	N int
	// FloorDuration is how long the floor runs; default 2s. FloorN, if
	// set, wins.
	FloorDuration time.Duration
	// FloorN, if positive, is the number of floor writes.
	FloorN int
	// Bounds, if set, also measures the machine's bounds (see Bounds)
	// after the floor and before the daemon starts, each for
	// BoundsDuration (default 3s) or, if N is set, N requests.
	Bounds         bool
	BoundsDuration time.Duration
	// Window is the number of checkpoints per window of a long load
	// (Report.Windows); default 100,000.
	Window int
	// MemoryLimit is the in-process daemon's memory budget in bytes
	// (daemon.Config.MemoryLimit); 0: none.
	MemoryLimit int64
	// SignalWait bounds the wait, after the last ack, for the
	// coordinator to receive the remaining signals; default 30s.
	SignalWait time.Duration
	// QuietBelow, if positive, makes the run wait first for a quiet
	// machine: until the machine line's computation (calibrate) takes at
	// most QuietBelow twice in a row. QuietWait bounds that wait (default
	// 30m); past it the run fails.
	QuietBelow time.Duration
	QuietWait  time.Duration
	// Logger receives progress; nil discards it.
	Logger *slog.Logger
}

func (c Config) withDefaults() (Config, error) {
	if c.Clients == 0 {
		c.Clients = 1
	}
	if c.Size == 0 {
		c.Size = 1024
	}
	if c.Duration == 0 {
		c.Duration = 10 * time.Second
	}
	if c.FloorDuration == 0 {
		c.FloorDuration = 2 * time.Second
	}
	if c.BoundsDuration == 0 {
		c.BoundsDuration = 3 * time.Second
	}
	if c.Window == 0 {
		c.Window = 100_000
	}
	if c.SignalWait == 0 {
		c.SignalWait = 30 * time.Second
	}
	if c.QuietWait == 0 {
		c.QuietWait = 30 * time.Minute
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	switch {
	case c.Clients < 0:
		return c, errors.New("bench: config: Clients must be positive")
	case c.Size < 0:
		return c, errors.New("bench: config: Size must not be negative")
	case c.Duration < 0 || c.FloorDuration < 0 || c.BoundsDuration < 0 || c.SignalWait < 0:
		return c, errors.New("bench: config: durations must not be negative")
	case c.N < 0 || c.FloorN < 0 || c.Window < 0:
		return c, errors.New("bench: config: N, FloorN and Window must not be negative")
	}
	for _, p := range c.Processes {
		if p.PID <= 0 {
			return c, fmt.Errorf("bench: config: process %q has no pid", p.Name)
		}
	}
	return c, nil
}
