package runtime

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/wacpd/wacpd/checkpointchain"
	"github.com/wacpd/wacpd/internal/clocktest"
	agentsignal "github.com/wacpd/wacpd/signal"
	"github.com/wacpd/wacpd/taxonomy"
	"github.com/wacpd/wacpd/taxonomy/taxfile"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/workspace"
)

// Helpers shared by the engine test files.

// openVerified opens a test engine and checks the whole trail when the test ends.
func openVerified(t *testing.T, mod ...func(*Config)) *Engine {
	t.Helper()
	e := openTest(t, mod...)
	t.Cleanup(func() { verify(t, e) })
	return e
}

// openAt opens an engine on dir (so a test can reopen it); it is closed at cleanup.
func openEngineAt(t *testing.T, dir string, mod ...func(*Config)) *Engine {
	t.Helper()
	cfg := Config{DataDir: dir}
	for _, m := range mod {
		m(&cfg)
	}
	e, err := Open(cfg)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func withTaxonomy(tax *taxonomy.Taxonomy) func(*Config) {
	return func(c *Config) { c.Taxonomy = tax }
}

func withFakeClock(c *fakeClock) func(*Config) {
	return func(cfg *Config) { cfg.Now = c.Now }
}

// confTaxonomy is a taxonomy with a derived role, a checkpoint type with a
// required field, and an envelope type that workers may send to workers.
func confTaxonomy(t testing.TB) *taxonomy.Taxonomy {
	t.Helper()
	tax, err := taxfile.Parse("conformance.yaml", []byte(`taxonomy:
  id: conformance-test
  version: 1.0.0
  protocol_version: "0.1"
  roles:
    reviewer:
      extends: worker
  envelope_types:
    - name: handoff
      permissions:
        - {sender_role: worker, receiver_role: worker}
  checkpoint_types:
    - name: review
      permitted_roles: [reviewer]
      required_fields: [verdict]
`))
	if err != nil {
		t.Fatalf("taxonomy.Parse: %v", err)
	}
	return tax
}

// activeWorkspace creates a workspace of role under the root and makes it
// active: a directive for workers, its own started signal for observers
// (observers receive no envelopes).
func activeWorkspace(t testing.TB, e *Engine, role string) *workspace.Workspace {
	t.Helper()
	if e.Taxonomy().BaseOf(role) != taxonomy.RoleObserver {
		w := newWorker(t, e, map[string]any{"role": role})
		if got := wsState(t, e, w.ID); got != workspace.Active {
			t.Fatalf("%s after a directive is %s, want active", role, got)
		}
		return w
	}
	w, err := e.CreateWorkspace(ctx, e.Root(), mustJSON(map[string]any{"role": role}))
	if err != nil {
		t.Fatalf("CreateWorkspace(%s): %v", role, err)
	}
	emitOK(t, e, w.ID, `{"type":"started"}`)
	if got := wsState(t, e, w.ID); got != workspace.Active {
		t.Fatalf("%s after started is %s, want active", role, got)
	}
	return w
}

// cpBody returns a valid artifact checkpoint request (as cpReq, provisional)
// changed by mod.
func cpBody(parent *string, mod func(map[string]any)) []byte {
	m := map[string]any{
		"type": "artifact", "intent": "because", "parent": parent, "status": "provisional", "confidence": "high",
		"payload": map[string]any{"files_changed": []string{"a.go"}, "content": "x", "artifacts": []string{"r1"}},
	}
	if mod != nil {
		mod(m)
	}
	return mustJSON(m)
}

// wantCode fails the test unless Code(err) is want ("" = success).
func wantCode(t testing.TB, what string, err error, want string) {
	t.Helper()
	if got := Code(err); got != want {
		t.Fatalf("%s: Code(%v) = %q, want %q", what, err, got, want)
	}
}

func emitOK(t testing.TB, e *Engine, ws, body string) {
	t.Helper()
	if _, err := e.EmitSignal(ctx, ws, []byte(body)); err != nil {
		t.Fatalf("EmitSignal(%s, %s): %v", ws, body, err)
	}
}

func wsState(t testing.TB, e *Engine, ws string) workspace.State {
	t.Helper()
	w, err := e.GetWorkspace(ctx, e.Root(), ws)
	if err != nil {
		t.Fatalf("GetWorkspace(%s): %v", ws, err)
	}
	return w.State
}

func listCheckpoints(t testing.TB, e *Engine, ws string) []checkpointchain.Checkpoint {
	t.Helper()
	cps, err := e.ListCheckpoints(ctx, e.Root(), ws, "", 0)
	if err != nil {
		t.Fatalf("ListCheckpoints(%s): %v", ws, err)
	}
	return cps
}

func checkpointIDs(cps []checkpointchain.Checkpoint) []string {
	var out []string
	for _, c := range cps {
		out = append(out, c.ID)
	}
	return out
}

// allEntries returns the whole global trail.
func globalTrail(t testing.TB, e *Engine) []trail.Entry {
	t.Helper()
	var out []trail.Entry
	after := ""
	for {
		page, next, err := e.Trail().Read(ctx, trail.Query{After: after, Limit: trail.MaxLimit})
		if err != nil {
			t.Fatalf("read trail: %v", err)
		}
		out = append(out, page...)
		if next == "" {
			return out
		}
		after = next
	}
}

// trailWhere returns the global-trail entries of type typ whose body fields
// print as the given values (fmt.Sprint; a null prints as "<nil>").
func trailWhere(t testing.TB, e *Engine, typ trail.EventType, match map[string]string) []trail.Entry {
	t.Helper()
	var out []trail.Entry
	for _, en := range globalTrail(t, e) {
		if en.EventType != typ {
			continue
		}
		b := entryBody(t, en)
		ok := true
		for k, v := range match {
			if fmt.Sprint(b[k]) != v {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, en)
		}
	}
	return out
}

// localTrail returns workspace ws's local trail entries of type typ.
func localEntries(t testing.TB, e *Engine, ws string, typ trail.EventType) []trail.Entry {
	t.Helper()
	entries, err := e.Trail().ReadLocal(ctx, ws, "", trail.MaxLimit)
	if err != nil {
		t.Fatal(err)
	}
	var out []trail.Entry
	for _, en := range entries {
		if en.EventType == typ {
			out = append(out, en)
		}
	}
	return out
}

func entryBody(t testing.TB, en trail.Entry) map[string]any {
	t.Helper()
	var b map[string]any
	if err := json.Unmarshal(en.Body, &b); err != nil {
		t.Fatalf("entry %s body %s: %v", en.ID, en.Body, err)
	}
	return b
}

func outboxWhere(t testing.TB, e *Engine, keep func(agentsignal.OutboxItem) bool) []agentsignal.OutboxItem {
	t.Helper()
	all, err := e.OutboxAfter("", 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []agentsignal.OutboxItem
	for _, o := range all {
		if keep(o) {
			out = append(out, o)
		}
	}
	return out
}

// jsonKeys returns the keys of v's JSON object and of its nested objects, sorted.
func jsonKeys(t testing.TB, v any) []string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(mustJSON(v), &m); err != nil {
		t.Fatal(err)
	}
	var keys []string
	var walk func(map[string]any)
	walk = func(m map[string]any) {
		for k, v := range m {
			keys = append(keys, k)
			if sub, ok := v.(map[string]any); ok && k == "payload" {
				walk(sub)
			}
		}
	}
	walk(m)
	slices.Sort(keys)
	return keys
}

func anyOf(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}

// fakeClock is a settable wall clock for Config.Now.
type fakeClock = clocktest.Fake

func newFakeClock() *fakeClock { return clocktest.New() }

// fakeMeter is a runtime.Meter with readings set by the test.
type fakeMeter struct {
	mu     sync.Mutex // guards tokens and cost
	tokens map[string]int64
	cost   map[string]float64
}

var _ Meter = (*fakeMeter)(nil)

func newFakeMeter() *fakeMeter {
	return &fakeMeter{tokens: map[string]int64{}, cost: map[string]float64{}}
}

func (m *fakeMeter) Consumed(ws string) (int64, float64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	tk, ok := m.tokens[ws]
	return tk, m.cost[ws], ok
}

func (m *fakeMeter) set(ws string, tokens int64, cost float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tokens[ws], m.cost[ws] = tokens, cost
}

// waitFor polls cond; the deadline only keeps a broken engine from hanging
// the test.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitAdmitting waits until the engine has left degraded mode (its probe
// wrote system_degraded).
func waitAdmitting(t testing.TB, e *Engine) {
	t.Helper()
	waitFor(t, "the engine to leave degraded mode", func() bool { d, _ := e.Degraded(); return !d })
}

// settled waits until Badger holds every batch answered so far (settle):
// no batch is then in flight, and a test may change a seam the committer's
// goroutines read.
func settled(t testing.TB, e *Engine) {
	t.Helper()
	if err := e.settle(ctx); err != nil {
		t.Fatal(err)
	}
}

// waitDegradedRecorded waits until the engine has been through degraded
// mode and left it: the trail's latest entry is system_degraded, and the
// engine admits work.
func waitDegradedRecorded(t testing.TB, e *Engine) {
	t.Helper()
	waitFor(t, "system_degraded in the trail", func() bool {
		n := e.Trail().Len()
		if n == 0 {
			return false
		}
		last, err := e.Trail().At(n)
		return err == nil && last.EventType == trail.EventSystemDegraded
	})
	waitAdmitting(t, e)
}

// workerIn returns a worker of the root brought into state: idle (never
// directed), active, blocked, suspended, integrating (a final checkpoint,
// then complete), failed, or closed (integrated). It fails the test if the
// worker does not end up in state.
func workerIn(t testing.TB, e *Engine, state workspace.State) string {
	t.Helper()
	var id string
	switch state {
	case workspace.Idle:
		id = idleWorker(t, e, e.Root()).ID
	case workspace.Integrating, workspace.Closed:
		w, _ := integratingWorker(t, e, e.Root())
		id = w.ID
		if state == workspace.Closed {
			if _, err := e.Integrate(ctx, e.Root(), integrateBody(id, DecisionAccept)); err != nil {
				t.Fatal(err)
			}
		}
	default:
		id = newWorker(t, e).ID
		switch state {
		case workspace.Active:
		case workspace.Blocked:
			emitOK(t, e, id, `{"type":"blocked","reason":"waiting"}`)
		case workspace.Suspended:
			if _, err := e.Suspend(ctx, e.Root(), id, ""); err != nil {
				t.Fatal(err)
			}
		case workspace.Failed:
			emitOK(t, e, id, `{"type":"failed","reason":"gave up"}`)
		default:
			t.Fatalf("workerIn: no way to bring a worker to %s", state)
		}
	}
	if got := wsState(t, e, id); got != state {
		t.Fatalf("workerIn: state = %s, want %s", got, state)
	}
	return id
}
