package daemon_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wacpd/wacpd/daemon"

	"github.com/wacpd/wacpd/internal/daemontest"
)

// TestAdminTokenRotation checks the rotation docs/security.md describes:
// the coordinator's token lives only in DIR/admin.token, so replacing the
// file while the daemon is stopped replaces the token, and the old one is
// refused at connect. A token file others may read stops the start.
func TestAdminTokenRotation(t *testing.T) {
	dir := t.TempDir()
	d := daemontest.Start(t, daemon.Config{DataDir: dir})
	old := d.AdminToken
	d.Stop()

	fresh := randomToken(t)
	path := filepath.Join(dir, daemon.AdminTokenFile)
	if err := os.WriteFile(path, []byte(fresh+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d = daemontest.Start(t, daemon.Config{DataDir: dir})
	if d.AdminToken != fresh {
		t.Fatalf("admin token after restart = %q, want the one written", d.AdminToken)
	}
	srv := server{url: d.URL}
	if got, detail := srv.probe(t, old, "wacp.v1.system.info", `{}`); got != refused {
		t.Errorf("system.info with the replaced admin token = %s, want %s\n%s", got, refused, detail)
	}
	if got, detail := srv.probe(t, fresh, "wacp.v1.system.info", `{}`); got != ok {
		t.Errorf("system.info with the new admin token = %s, want ok\n%s", got, detail)
	}
	d.Stop()

	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	rt, err := daemon.New(daemon.Config{DataDir: dir, Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Run(t.Context()); err == nil || !strings.Contains(err.Error(), "readable by others") {
		t.Errorf("Run with admin.token mode 0640 = %v, want an error saying it is readable by others", err)
	}
}
