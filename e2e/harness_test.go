package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	// The tests run a wacpd binary built from this tree; importing its
	// engine makes go test's cache see changes to it.
	_ "github.com/wacpd/wacpd/runtime"
)

// bin holds the binaries TestMain builds once for the package.
var bin struct{ wacpd, wacp, natsServer, tool string }

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "wacpd-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin.wacpd = filepath.Join(dir, "wacpd")
	bin.wacp = filepath.Join(dir, "wacp")
	bin.natsServer = filepath.Join(dir, "nats-server")
	bin.tool = filepath.Join(dir, "toolservice")
	for _, b := range [][2]string{{bin.wacpd, "github.com/wacpd/wacpd/cmd/wacpd"}, {bin.wacp, "github.com/wacpd/wacpd/cmd/wacp"},
		{bin.natsServer, "github.com/nats-io/nats-server/v2"}, {bin.tool, "github.com/wacpd/wacpd/examples/toolservice"}} {
		args := []string{"build", "-o", b[0]}
		if raceEnabled {
			args = append(args, "-race")
		}
		out, err := exec.Command("go", append(args, b[1])...).CombinedOutput()
		if err != nil {
			fmt.Fprintf(os.Stderr, "build %s: %v\n%s", b[1], err, out)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// daemon is a running wacpd process.
type daemon struct {
	t     *testing.T
	dir   string
	cmd   *exec.Cmd
	url   string
	admin string
	done  chan error
	log   *logBuf
}

var listenLine = regexp.MustCompile(`listening on (nats://\S+) \(data .*, root workspace (\S+)\)`)

// startDaemon starts wacpd on dir with a free port and waits for its
// "listening" line.
func startDaemon(t *testing.T, dir string, args ...string) *daemon {
	t.Helper()
	d := &daemon{t: t, dir: dir, done: make(chan error, 1), log: &logBuf{}}
	d.cmd = exec.Command(bin.wacpd, append([]string{"-data", dir, "-listen", "127.0.0.1:0", "-log-level", "info"}, args...)...)
	stdout, err := d.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	d.cmd.Stderr = d.log
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	go func() { d.done <- d.cmd.Wait() }()
	select {
	case line := <-lines:
		m := listenLine.FindStringSubmatch(line)
		if m == nil {
			d.cmd.Process.Kill()
			t.Fatalf("wacpd printed %q, want its listening line", line)
		}
		d.url = m[1]
	case err := <-d.done:
		t.Fatalf("wacpd exited before listening: %v\n%s", err, d.log.String())
	case <-time.After(60 * time.Second):
		d.cmd.Process.Kill()
		t.Fatalf("wacpd did not print its listening line in 60s\n%s", d.log.String())
	}
	// A daemon of a deployment other than the first has no admin.token:
	// it takes the coordinator's by the hash in the deployment's record.
	tok, err := os.ReadFile(filepath.Join(dir, "admin.token"))
	if err != nil && !(errors.Is(err, fs.ErrNotExist) && slices.Contains(args, "-partitions")) {
		t.Fatal(err)
	}
	d.admin = strings.TrimSpace(string(tok))
	t.Cleanup(func() {
		if d.cmd.ProcessState == nil {
			d.cmd.Process.Kill()
			<-d.done
		}
	})
	return d
}

// stop sends SIGTERM and checks the daemon exits 0.
func (d *daemon) stop() {
	d.t.Helper()
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-d.done:
		if err != nil {
			d.t.Fatalf("wacpd exit after SIGTERM: %v\n%s", err, d.log.String())
		}
	case <-time.After(30 * time.Second):
		d.cmd.Process.Kill()
		d.t.Fatalf("wacpd did not exit within 30s of SIGTERM")
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (d *daemon) kill() {
	d.t.Helper()
	d.cmd.Process.Kill()
	<-d.done
}

// logBuf collects the daemon's stderr; the copier goroutine writes while
// tests read.
type logBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}
