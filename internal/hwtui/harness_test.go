package hwtui

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/wacpd/wacpd/highway"
)

// fakeSource is a Source in memory. Its methods are safe for concurrent
// use (Run calls them from several goroutines).
type fakeSource struct {
	mu         sync.Mutex
	gates      []highway.Gate
	queueErr   error
	queueCalls int
	resolveErr error
	resolved   []resolution
	requests   []highway.ResolveRequest // every Resolve request, whole
	inspect    []string
	inspectErr error
	// changes, when set, is what Changes does: Run tests script it.
	changes func(ctx context.Context, fn func()) error
	feeds   int // Changes calls
}

// resolution is one call of Resolve.
type resolution struct {
	id     string
	action highway.Action
	mods   string
}

func (f *fakeSource) Queue(ctx context.Context) ([]highway.Gate, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queueCalls++
	if f.queueErr != nil {
		return nil, f.queueErr
	}
	return slices.Clone(f.gates), nil
}

func (f *fakeSource) Resolve(ctx context.Context, req highway.ResolveRequest) (highway.Gate, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id, a, mods := req.GateID, req.Action, req.Modifications
	f.resolved = append(f.resolved, resolution{id, a, string(mods)})
	f.requests = append(f.requests, req)
	if f.resolveErr != nil {
		return highway.Gate{}, f.resolveErr
	}
	i := slices.IndexFunc(f.gates, func(g highway.Gate) bool { return g.ID == id })
	if i < 0 {
		return highway.Gate{}, fmt.Errorf("invalid_transition: gate %s is not pending", id)
	}
	g := f.gates[i]
	f.gates = slices.Delete(f.gates, i, i+1)
	g.Resolution = &highway.Resolution{Action: a, Modifications: mods, Actor: "operator"}
	return g, nil
}

func (f *fakeSource) Inspect(ctx context.Context, g highway.Gate) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.inspect, f.inspectErr
}

func (f *fakeSource) Changes(ctx context.Context, fn func()) error {
	f.mu.Lock()
	f.feeds++
	changes := f.changes
	f.mu.Unlock()
	if changes == nil {
		<-ctx.Done()
		return nil
	}
	return changes(ctx, fn)
}

func (f *fakeSource) calls() []resolution {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.resolved)
}

func (f *fakeSource) set(fn func(f *fakeSource)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

// harness drives a model by hand: each message goes through Update, and
// the commands it returns run at once, their messages fed back, until
// none is left. Timers (model.after) are not run but kept, to be fired
// by the test.
type harness struct {
	t      *testing.T
	m      *model
	src    *fakeSource
	timers []tea.Msg
	quit   bool
}

// testNow is the harness's clock.
var testNow = time.Date(2026, 1, 1, 0, 5, 0, 0, time.UTC)

func newHarness(t *testing.T, src *fakeSource, width, height int) *harness {
	t.Helper()
	h := &harness{t: t, src: src}
	h.m = newModel(context.Background(), src)
	h.m.now = func() time.Time { return testNow }
	h.m.after = func(d time.Duration, msg tea.Msg) tea.Cmd {
		h.timers = append(h.timers, msg)
		return nil
	}
	h.run(h.m.Init())
	h.send(tea.WindowSizeMsg{Width: width, Height: height})
	return h
}

func (h *harness) send(msg tea.Msg) {
	h.t.Helper()
	_, cmd := h.m.Update(msg)
	h.run(cmd)
}

func (h *harness) run(cmd tea.Cmd) {
	h.t.Helper()
	if cmd == nil {
		return
	}
	switch msg := cmd().(type) {
	case nil:
	case tea.BatchMsg:
		for _, c := range msg {
			h.run(c)
		}
	case tea.QuitMsg:
		h.quit = true
	default:
		h.send(msg)
	}
}

// keys presses keys: "ctrl+s", "esc", "enter", "up", "down", "end",
// "backspace", or text typed as is.
func (h *harness) keys(keys ...string) {
	h.t.Helper()
	named := map[string]tea.KeyType{
		"ctrl+c": tea.KeyCtrlC, "ctrl+s": tea.KeyCtrlS, "esc": tea.KeyEsc, "enter": tea.KeyEnter,
		"up": tea.KeyUp, "down": tea.KeyDown, "end": tea.KeyEnd, "backspace": tea.KeyBackspace,
	}
	for _, k := range keys {
		if typ, ok := named[k]; ok {
			h.send(tea.KeyMsg{Type: typ})
			continue
		}
		for _, r := range k {
			h.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}})
		}
	}
}

// keyMsg is the message of a key typed as text.
func keyMsg(s string) tea.KeyMsg { return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(s)} }

// teaSize is a window size message.
func teaSize(w, h int) tea.WindowSizeMsg { return tea.WindowSizeMsg{Width: w, Height: h} }

// fire fires the timers set so far that hold a message like msg.
func (h *harness) fire(msg tea.Msg) int {
	h.t.Helper()
	var due []tea.Msg
	h.timers = slices.DeleteFunc(h.timers, func(m tea.Msg) bool {
		if fmt.Sprintf("%T", m) == fmt.Sprintf("%T", msg) {
			due = append(due, m)
			return true
		}
		return false
	})
	for _, m := range due {
		h.send(m)
	}
	return len(due)
}

// pendingTimers counts the timers set that hold a message like msg.
func (h *harness) pendingTimers(msg tea.Msg) int {
	n := 0
	for _, m := range h.timers {
		if fmt.Sprintf("%T", m) == fmt.Sprintf("%T", msg) {
			n++
		}
	}
	return n
}

func (h *harness) view() string { return h.m.View() }

// mustShow fails unless the screen holds each of want.
func (h *harness) mustShow(want ...string) {
	h.t.Helper()
	v := h.view()
	for _, w := range want {
		if !strings.Contains(v, w) {
			h.t.Fatalf("the screen does not show %q:\n%s", w, v)
		}
	}
}

// mustNotShow fails if the screen holds any of bad.
func (h *harness) mustNotShow(bad ...string) {
	h.t.Helper()
	v := h.view()
	for _, b := range bad {
		if strings.Contains(v, b) {
			h.t.Fatalf("the screen shows %q:\n%s", b, v)
		}
	}
}

// gate returns a pending gate; n orders the gates (trigger time).
func gate(n int, id string, typ highway.GateType, subject string, irreversible bool) highway.Gate {
	return highway.Gate{
		ID: id, Type: typ, Subject: json.RawMessage(subject), SubjectID: "subj-" + id,
		SubjectDigest: "sha256:" + strings.Repeat("ab", 32),
		Timestamp:     fmt.Sprintf("2026-01-01T00:00:%02d.000000000Z", n),
		Irreversible:  irreversible,
	}
}

const taskSubject = `{"description":"build it","id":"T1","name":"the thing","priority":"normal","resource_estimate":null,"status":"draft"}`

const integrationSubject = `{"checkpoint_ref":"C9","decision":"accept","mode":"normal","source":"W1","strategy":"","target":"ROOT"}`
