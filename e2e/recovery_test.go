package e2e

import (
	"bytes"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/internal/daemontest"
)

// TestCorruptTrailRefusesToStart: wacpd refuses to start on a data dir
// whose trail is damaged inside its signed tree head, exits 2 (a failed
// verification, wire-v1 §1) and says what is wrong and what to do; the
// data dir is left as it was, so the refusal repeats.
func TestCorruptTrailRefusesToStart(t *testing.T) {
	ctx := ctxT(t)
	dir := t.TempDir()
	d := startDaemon(t, dir)
	coord := dial(t, ctx, client.Options{URL: d.url, Token: d.admin})
	w := newWorker(t, ctx, coord, d.url, true, "")
	if _, err := w.CreateCheckpoint(ctx, artifact(nil, "provisional", "one")); err != nil {
		t.Fatal(err)
	}
	w.Close()
	coord.Close()
	d.stop() // signs a last tree head over every entry

	daemontest.DamageTrailEntry(t, dir, 3)

	for range 2 {
		var stderr bytes.Buffer
		cmd := exec.Command(bin.wacpd, "-data", dir, "-listen", "127.0.0.1:0", "-full-check")
		cmd.Stderr = &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 {
			t.Fatalf("wacpd on a damaged trail: %v, want exit status 2\n%s", err, stderr.String())
		}
		for _, want := range []string{"trail failed its integrity check", "#3", "inside the signed tree head", "restore the data dir from a backup"} {
			if !strings.Contains(stderr.String(), want) {
				t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
			}
		}
	}
}
