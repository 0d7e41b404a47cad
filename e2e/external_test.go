package e2e

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/wacpd/wacpd/client"
)

// freePort returns a port on 127.0.0.1 that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startNATSServer runs a separate nats-server with JetStream and token auth.
func startNATSServer(t *testing.T, token string) string {
	t.Helper()
	port := freePort(t)
	cmd := exec.Command(bin.natsServer, "-a", "127.0.0.1", "-p", fmt.Sprint(port), "-js",
		"-sd", t.TempDir(), "--auth", token)
	out, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "Server is ready") {
				close(ready)
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		t.Fatal("nats-server did not become ready")
	}
	return fmt.Sprintf("nats://127.0.0.1:%d", port)
}

// TestExternalNATSServer runs wacpd against a separately started
// nats-server (-nats-url). The server's own token admits connections; the
// daemon takes identity from the Wacp-Token header and refuses a request
// without a known one.
func TestExternalNATSServer(t *testing.T) {
	ctx := ctxT(t)
	const srvToken = "s3rv3r-t0ken"
	url := startNATSServer(t, srvToken)
	d := startDaemon(t, t.TempDir(), "-nats-url", url, "-nats-token", srvToken)
	if d.url != url {
		t.Fatalf("wacpd says it listens on %s, want the external %s", d.url, url)
	}
	coord := dial(t, ctx, client.Options{URL: url, Token: d.admin, NATSToken: srvToken})
	signals := watch(t, ctx, coord, "external")
	worker := newWorker(t, ctx, coord, url, true, srvToken)
	cp, err := worker.CreateCheckpoint(ctx, artifact(nil, "final", "over an external server"))
	if err != nil {
		t.Fatal(err)
	}
	waitSignals(t, signals, cp.ID)

	// A connection the server admits, but with a token wacpd does not know.
	_, err = client.Dial(ctx, client.Options{URL: url, Token: "wacp_not-a-real-token", NATSToken: srvToken,
		Workspace: worker.Workspace()})
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Code != "unauthorized" {
		t.Fatalf("Dial with an unknown Wacp-Token = %v, want unauthorized", err)
	}
	if list, err := coord.ListCheckpoints(ctx, worker.Workspace(), "", 10); err != nil || len(list) != 1 {
		t.Fatalf("checkpoints = %d, %v; want 1", len(list), err)
	}
	d.stop()
}
