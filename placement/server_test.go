package placement

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// runServer starts a nats-server from the configuration conf, written to a
// file in t.TempDir(), listening on 127.0.0.1 at a random port, and stops
// it when the test ends.
func runServer(t *testing.T, conf string) *server.Server {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "nats.conf")
	conf = "host: 127.0.0.1\nport: -1\n" + conf
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(path)
	if err != nil {
		t.Fatalf("config %s:\n%s\n%v", path, conf, err)
	}
	opts.NoSigs, opts.NoLog = true, true
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	if !s.ReadyForConnections(30 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	return s
}

// connect connects to s and closes the connection when the test ends.
func connect(t *testing.T, s *server.Server, opts ...nats.Option) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(s.ClientURL(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}
