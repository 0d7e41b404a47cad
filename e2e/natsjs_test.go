package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wacpd/wacpd/client"
)

// TestNatsJSExample runs examples/natsjs/demo.mjs, a client in JavaScript
// over the stock nats.js, against a real wacpd: it connects as the
// coordinator and as a worker, reads a signal from a durable consumer and
// verifies an inclusion proof and the tree head's signature itself. The Go
// client then reads the checkpoint it wrote. It skips, saying why, without
// node or without the example's node_modules (npm ci; .ci/run does both).
func TestNatsJSExample(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed; .ci/run installs it")
	}
	dir, err := filepath.Abs(filepath.Join("..", "examples", "natsjs"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "nats")); err != nil {
		t.Skipf("run npm ci in %s first (.ci/run does)", dir)
	}
	d := startDaemon(t, t.TempDir())
	ctx := ctxT(t)
	cmd := exec.CommandContext(ctx, node, "demo.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "WACP_URL="+d.url, "WACP_TOKEN="+d.admin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node demo.mjs: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var res struct {
		OK         bool   `json:"ok"`
		Workspace  string `json:"workspace"`
		Checkpoint string `json:"checkpoint"`
		Entry      string `json:"entry"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil || !res.OK {
		t.Fatalf("demo.mjs's last line is not its ok summary (%v):\n%s", err, out)
	}

	// What the JavaScript client wrote is there for the Go client too, and
	// the Go auditor proves the same checkpoint.
	coord, err := client.Dial(ctx, client.Options{URL: d.url, Token: d.admin})
	if err != nil {
		t.Fatal(err)
	}
	defer coord.Close()
	cp, err := coord.AuditCheckpoint(ctx, res.Checkpoint)
	if err != nil || cp.Workspace != res.Workspace || cp.Payload.Content != "written by nats.js" {
		t.Fatalf("AuditCheckpoint(%s) = %+v, %v; want the nats.js worker's checkpoint", res.Checkpoint, cp, err)
	}
	p, err := coord.ProveCheckpoint(ctx, res.Checkpoint, "", 0)
	if err != nil || p.Entry != res.Entry {
		t.Fatalf("ProveCheckpoint(%s) = %+v, %v; want it proved by entry %s", res.Checkpoint, p, err, res.Entry)
	}
}
