package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Terminal programs are tested in a real terminal: a detached tmux
// session, driven with send-keys and read with capture-pane.

// tmuxSession is a detached tmux session running one program, on a tmux
// server of its own (-L): nothing of the user's tmux is seen or touched.
type tmuxSession struct {
	t      *testing.T
	socket string
}

// tmuxSockets numbers the sessions of this process.
var tmuxSockets atomic.Int64

// newTmux starts argv in a detached tmux session of width x height cells,
// with env added to the environment, and kills the session's server at
// cleanup (and removes its socket). The pane stays after the program exits (remain-on-exit), so
// its last screen and exit status can be read. It skips the test when
// tmux is not installed.
func newTmux(t *testing.T, width, height int, env []string, argv ...string) *tmuxSession {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed; the terminal UI tests need it (apt-get install tmux; .ci/run installs it)")
	}
	s := &tmuxSession{t: t, socket: fmt.Sprintf("wacp-e2e-%d-%d", os.Getpid(), tmuxSockets.Add(1))}
	cmd := "exec env"
	for _, kv := range env {
		cmd += " " + shellQuote(kv)
	}
	for _, a := range argv {
		cmd += " " + shellQuote(a)
	}
	// The session is made first with a shell that waits, so that
	// remain-on-exit is set before the program can exit.
	if out, err := s.tmux("new-session", "-d", "-s", "main", "-x", strconv.Itoa(width), "-y", strconv.Itoa(height),
		"sh", "-c", "read _"); err != nil {
		t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	path, _ := s.tmux("display-message", "-p", "#{socket_path}")
	t.Cleanup(func() {
		s.tmux("kill-server")
		if path = strings.TrimSpace(path); path != "" {
			os.Remove(path) // tmux leaves it
		}
	})
	if out, err := s.tmux("set-option", "-t", "main", "remain-on-exit", "on"); err != nil {
		t.Fatalf("tmux set-option remain-on-exit: %v\n%s", err, out)
	}
	if out, err := s.tmux("respawn-pane", "-k", "-t", "main", cmd); err != nil {
		t.Fatalf("tmux respawn-pane %s: %v\n%s", cmd, err, out)
	}
	return s
}

// tmux runs a tmux command on the session's server.
func (s *tmuxSession) tmux(args ...string) (string, error) {
	cmd := exec.Command("tmux", append([]string{"-f", "/dev/null", "-L", s.socket}, args...)...)
	cmd.Env = append(os.Environ(), "TMUX=") // not nested in the tmux the tests may run in
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// send sends keys with tmux send-keys: tmux key names ("Enter", "Escape",
// "C-s", "Down", "BSpace") or single characters ("y", "Y", "?").
func (s *tmuxSession) send(keys ...string) {
	s.t.Helper()
	if out, err := s.tmux(append([]string{"send-keys", "-t", "main"}, keys...)...); err != nil {
		s.t.Fatalf("tmux send-keys %q: %v\n%s", keys, err, out)
	}
}

// sendText types text as is (send-keys -l).
func (s *tmuxSession) sendText(text string) {
	s.t.Helper()
	if out, err := s.tmux("send-keys", "-t", "main", "-l", text); err != nil {
		s.t.Fatalf("tmux send-keys -l %q: %v\n%s", text, err, out)
	}
}

// capture returns what the pane shows now, one line per row.
func (s *tmuxSession) capture() string {
	s.t.Helper()
	out, err := s.tmux("capture-pane", "-p", "-t", "main")
	if err != nil {
		s.t.Fatalf("tmux capture-pane: %v\n%s", err, out)
	}
	return out
}

// waitFor polls the pane until it shows substr and returns that capture;
// after timeout it fails the test with the last capture.
func (s *tmuxSession) waitFor(t *testing.T, substr string, timeout time.Duration) string {
	t.Helper()
	return s.waitUntil(t, fmt.Sprintf("show %q", substr), func(c string) bool { return strings.Contains(c, substr) }, timeout)
}

// waitGone polls the pane until it no longer shows substr.
func (s *tmuxSession) waitGone(t *testing.T, substr string, timeout time.Duration) string {
	t.Helper()
	return s.waitUntil(t, fmt.Sprintf("stop showing %q", substr), func(c string) bool { return !strings.Contains(c, substr) }, timeout)
}

// waitUntil polls the pane until cond holds for a capture and returns it;
// after timeout it fails the test, saying what it waited for (want) and
// what the pane showed last.
func (s *tmuxSession) waitUntil(t *testing.T, want string, cond func(capture string) bool, timeout time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		c := s.capture()
		if cond(c) {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("the terminal did not %s within %s; it shows:\n%s", want, timeout, c)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// resize makes the window w x h cells (the program gets SIGWINCH).
func (s *tmuxSession) resize(w, h int) {
	s.t.Helper()
	if out, err := s.tmux("resize-window", "-t", "main", "-x", strconv.Itoa(w), "-y", strconv.Itoa(h)); err != nil {
		s.t.Fatalf("tmux resize-window %dx%d: %v\n%s", w, h, err, out)
	}
}

// exited reports whether the program has exited, and its exit status.
func (s *tmuxSession) exited() (bool, int) {
	s.t.Helper()
	out, err := s.tmux("display-message", "-p", "-t", "main", "#{pane_dead} #{pane_dead_status}")
	if err != nil {
		s.t.Fatalf("tmux display-message: %v\n%s", err, out)
	}
	var dead, status int
	fmt.Sscan(out, &dead, &status)
	return dead == 1, status
}

// waitExit waits for the program to exit and returns its exit status.
func (s *tmuxSession) waitExit(t *testing.T, timeout time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if dead, status := s.exited(); dead {
			return status
		}
		if time.Now().After(deadline) {
			t.Fatalf("the program did not exit within %s; the terminal shows:\n%s", timeout, s.capture())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
