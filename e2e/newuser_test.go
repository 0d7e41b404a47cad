package e2e

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPortTakenIsAClearError: with the address taken, wacpd exits 1 at
// once with an error naming the address, why, and -listen, and leaves no
// data dir behind (it used to wait 10 s for the server, say only that it
// did not start, and leave a half-made data dir).
func TestPortTakenIsAClearError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dir := filepath.Join(t.TempDir(), "data")
	out, err := exec.Command(bin.wacpd, "-data", dir, "-listen", ln.Addr().String()).CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("wacpd on a taken port: %v, want exit 1\n%s", err, out)
	}
	for _, want := range []string{ln.Addr().String(), "address already in use", "-listen"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the error does not say %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the data dir was made (%v); want nothing made", err)
	}
}

// TestVersionFlag: wacpd -version prints its version and exits 0.
func TestVersionFlag(t *testing.T) {
	out, err := exec.Command(bin.wacpd, "-version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "wacpd ") {
		t.Fatalf("wacpd -version = %q, %v", out, err)
	}
}
