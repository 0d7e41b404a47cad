package highway

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/wacpd/wacpd/trail"
)

var t0 = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

const ts0 = "2026-11-26T12:00:00.000000000Z"

func taskSubject() Subject {
	return Subject{ID: "task-1", Body: json.RawMessage(`{"name":"write","priority":"normal","id":"task-1"}`), TaskRef: "task-1", GraphRef: "graph-1"}
}

// checkEvents holds each event to the trail registry and its encoding.
func checkEvents(t *testing.T, events ...Event) {
	t.Helper()
	for _, e := range events {
		if err := trail.ValidateBody(e.Type, e.Body); err != nil {
			t.Errorf("%s: %v", e.Type, err)
		}
		if _, err := trail.EncodeBody(e.Type, e.Body); err != nil {
			t.Errorf("EncodeBody(%s) = %v", e.Type, err)
		}
	}
}

func mustPreset(t *testing.T, name string) Config {
	t.Helper()
	c, err := Preset(name)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestGateTypesAreClosed(t *testing.T) {
	want := []GateType{"task_approval", "workspace_create", "envelope_delivery", "integration", "conflict_resolution", "workspace_abort"}
	if got := GateTypes(); !reflect.DeepEqual(got, want) {
		t.Errorf("GateTypes() = %v, want %v", got, want)
	}
	if GateType("deploy").Valid() {
		t.Error(`GateType("deploy").Valid() = true: the set is closed`)
	}
	if _, _, err := Open(Default(), "deploy", taskSubject(), "g", t0, ts0, 0); err == nil {
		t.Error("Open(a seventh type) = nil error")
	}
}

func TestOpen(t *testing.T) {
	g, ev, err := Open(Default(), TaskApproval, taskSubject(), "gate-1", t0, ts0, 3)
	if err != nil {
		t.Fatal(err)
	}
	checkEvents(t, ev)
	if !g.Pending() || g.Workspace != nil || *g.TaskRef != "task-1" || *g.GraphRef != "graph-1" || g.QueuePosition != 3 ||
		*g.Timeout != "15m0s" || *g.Fallback != FallbackReject || *g.Deadline != "2026-11-26T12:15:00.000000000Z" {
		t.Errorf("gate = %+v", g)
	}
	want := map[string]any{"gate_id": "gate-1", "gate_type": "task_approval", "subject": "task-1", "subject_digest": g.SubjectDigest,
		"workspace": nil, "task_ref": "task-1", "graph_ref": "graph-1", "timeout": "15m0s", "fallback": "reject", "queue_position": 3}
	if !reflect.DeepEqual(ev.Body, want) {
		t.Errorf("gate_triggered = %v, want %v", ev.Body, want)
	}
	if string(g.Subject) != `{"id":"task-1","name":"write","priority":"normal"}` {
		t.Errorf("subject = %s, want its canonical form", g.Subject)
	}
	// The digest binds the subject's content, not its spelling.
	s := taskSubject()
	s.Body = json.RawMessage("{ \"priority\" : \"normal\",\n\"id\":\"task-1\", \"name\":\"write\" }")
	g2, _, _ := Open(Default(), TaskApproval, s, "gate-2", t0, ts0, 0)
	s.Body = json.RawMessage(`{"name":"write","priority":"urgent","id":"task-1"}`)
	g3, _, _ := Open(Default(), TaskApproval, s, "gate-3", t0, ts0, 0)
	if g2.SubjectDigest != g.SubjectDigest || g3.SubjectDigest == g.SubjectDigest || !strings.HasPrefix(g.SubjectDigest, "sha256:") {
		t.Errorf("digests %s %s %s: want the first two equal, the third different", g.SubjectDigest, g2.SubjectDigest, g3.SubjectDigest)
	}
	for _, body := range []string{`[]`, `"x"`, `null`, `{`} {
		s.Body = json.RawMessage(body)
		if _, _, err := Open(Default(), TaskApproval, s, "g", t0, ts0, 0); err == nil {
			t.Errorf("Open(subject %s) = nil error", body)
		}
	}
	// The gated preset waits indefinitely: no timeout, fallback or deadline.
	g, ev, _ = Open(mustPreset(t, "gated"), WorkspaceAbort, Subject{ID: "ws-1", Body: json.RawMessage(`{}`), Workspace: "ws-1", Irreversible: true}, "gate-4", t0, ts0, 0)
	checkEvents(t, ev)
	if g.Timeout != nil || g.Fallback != nil || g.Deadline != nil || ev.Body["timeout"] != nil || !g.Irreversible || *g.Workspace != "ws-1" {
		t.Errorf("gated gate = %+v, event %v", g, ev.Body)
	}
	if _, ok := g.DeadlineTime(); ok {
		t.Error("DeadlineTime of a gate without a timeout: ok")
	}
}

func TestResolve(t *testing.T) {
	open := func(typ GateType) Gate {
		g, _, err := Open(mustPreset(t, "gated"), typ, Subject{ID: "s", Body: json.RawMessage(`{}`)}, "gate-1", t0, ts0, 0)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	tests := []struct {
		typ  GateType
		req  string
		want error
	}{
		{TaskApproval, `{"gate_id":"gate-1","action":"approve"}`, nil},
		{TaskApproval, `{"gate_id":"gate-1","action":"reject"}`, nil},
		{TaskApproval, `{"gate_id":"gate-1","action":"modify","modifications":{"priority":"urgent","description":"d"}}`, nil},
		{TaskApproval, `{"gate_id":"gate-1","action":"modify","modifications":{"depends_on":[]}}`, ErrInvalidResolution},
		{TaskApproval, `{"gate_id":"gate-1","action":"modify","modifications":{"id":"x"}}`, ErrInvalidResolution},
		{TaskApproval, `{"gate_id":"gate-1","action":"modify","modifications":{"graph_ref":"x"}}`, ErrInvalidResolution},
		{WorkspaceCreate, `{"gate_id":"gate-1","action":"modify","modifications":{"budget":{}}}`, nil},
		{WorkspaceCreate, `{"gate_id":"gate-1","action":"modify","modifications":{"role":"worker"}}`, ErrInvalidResolution},
		{EnvelopeDelivery, `{"gate_id":"gate-1","action":"modify","modifications":{"payload":"x"}}`, nil},
		{Integration, `{"gate_id":"gate-1","action":"modify","modifications":{"strategy":"direct"}}`, ErrInvalidResolution},
	}
	for _, tt := range tests {
		req, err := DecodeResolveRequest([]byte(tt.req))
		if err != nil {
			t.Fatalf("DecodeResolveRequest(%s) = %v", tt.req, err)
		}
		g, ev, err := Resolve(open(tt.typ), req, "user-7", "ts1")
		if !errors.Is(err, tt.want) {
			t.Errorf("Resolve(%s, %s) = %v, want %v", tt.typ, tt.req, err, tt.want)
			continue
		}
		if err != nil {
			if !g.Pending() {
				t.Errorf("a refused resolution resolved the gate")
			}
			continue
		}
		checkEvents(t, ev)
		if g.Pending() || g.Resolution.Actor != "user-7" || g.Resolution.Action != req.Action || ev.Body["actor"] != "user-7" || ev.Body["action"] != string(req.Action) {
			t.Errorf("Resolve(%s) = %+v, event %v", tt.req, g.Resolution, ev.Body)
		}
		if (req.Action == Modify) != (ev.Body["modifications"] != nil) {
			t.Errorf("Resolve(%s): modifications %v", tt.req, ev.Body["modifications"])
		}
		if _, _, err := Resolve(g, req, "user-8", "ts2"); !errors.Is(err, ErrResolved) {
			t.Errorf("second Resolve = %v, want ErrResolved", err)
		}
	}
	req, _ := DecodeResolveRequest([]byte(`{"gate_id":"gate-1","action":"approve"}`))
	for _, actor := range []string{"", "fallback", "protocol"} {
		if _, _, err := Resolve(open(TaskApproval), req, actor, "ts"); !errors.Is(err, ErrInvalidResolution) {
			t.Errorf("Resolve by %q = %v, want ErrInvalidResolution", actor, err)
		}
	}
}

// TestDeny: a request to deny (no operator present) resolves the gate as
// reject by the protocol, reason no_operator_present, naming the user who
// asked; it carries no modifications.
func TestDeny(t *testing.T) {
	g, _, err := Open(mustPreset(t, "gated"), Integration, Subject{ID: "s", Body: json.RawMessage(`{}`)}, "gate-1", t0, ts0, 0)
	if err != nil {
		t.Fatal(err)
	}
	req, err := DecodeResolveRequest([]byte(`{"gate_id":"gate-1","action":"deny"}`))
	if err != nil {
		t.Fatal(err)
	}
	g, ev, err := Resolve(g, req, "user-7", "ts1")
	if err != nil {
		t.Fatal(err)
	}
	checkEvents(t, ev)
	r := g.Resolution
	if r.Action != Reject || r.Actor != ActorProtocol || r.Reason != ReasonNoOperator || r.RequestedBy != "user-7" ||
		ev.Body["actor"] != ActorProtocol || ev.Body["requested_by"] != "user-7" || ev.Body["reason"] != ReasonNoOperator {
		t.Errorf("deny = %+v, event %v", r, ev.Body)
	}
	if _, err := DecodeResolveRequest([]byte(`{"gate_id":"g","action":"deny","modifications":{"a":1}}`)); !errors.Is(err, ErrInvalidResolution) {
		t.Errorf("deny with modifications = %v, want ErrInvalidResolution", err)
	}
}

func TestDecodeResolveRequest(t *testing.T) {
	for _, in := range []string{
		`{"gate_id":"g","action":"approve","modifications":{"a":1}}`,
		`{"gate_id":"g","action":"modify"}`,
		`{"gate_id":"g","action":"modify","modifications":{}}`,
		`{"gate_id":"g","action":"modify","modifications":[1]}`,
		`{"gate_id":"g","action":"escalate_to_coordinator"}`,
		`{"gate_id":"g","action":"fallback"}`,
		`{"action":"approve"}`,
		`{"gate_id":"g","action":"approve","actor":"me"}`,
	} {
		if _, err := DecodeResolveRequest([]byte(in)); !errors.Is(err, ErrInvalidResolution) {
			t.Errorf("DecodeResolveRequest(%s) = %v, want ErrInvalidResolution", in, err)
		}
	}
}

func TestExpire(t *testing.T) {
	g, _, _ := Open(mustPreset(t, "autonomous"), TaskApproval, taskSubject(), "gate-1", t0, ts0, 0)
	if _, _, ok := Expire(g, t0.Add(29*time.Second), "ts"); ok {
		t.Error("Expire before the deadline: ok")
	}
	// A deadline that passed during an outage falls back at the first look.
	out, events, ok := Expire(g, t0.Add(2*time.Hour), "ts")
	if !ok || out.Pending() || out.Resolution.Actor != "fallback" || out.Resolution.Action != Approve {
		t.Fatalf("Expire after the deadline = %+v, %v", out.Resolution, ok)
	}
	checkEvents(t, events...)
	if events[0].Type != trail.EventGateTimeout || events[0].Body["elapsed"] != "2h0m0s" || events[0].Body["fallback_action"] != "approve" ||
		events[1].Type != trail.EventGateResolved || events[1].Body["actor"] != "fallback" {
		t.Errorf("events = %v", events)
	}
	if _, _, ok := Expire(out, t0.Add(3*time.Hour), "ts"); ok {
		t.Error("Expire of a resolved gate: ok")
	}
	gated, _, _ := Open(mustPreset(t, "gated"), TaskApproval, taskSubject(), "gate-2", t0, ts0, 0)
	if _, _, ok := Expire(gated, t0.Add(1000*time.Hour), "ts"); ok {
		t.Error("Expire of a gate without a timeout: ok")
	}
	sup, _, _ := Open(mustPreset(t, "supervised"), Integration, taskSubject(), "gate-3", t0, ts0, 0)
	if out, _, ok := Expire(sup, t0.Add(15*time.Minute), "ts"); !ok || out.Resolution.Action != Reject {
		t.Errorf("supervised integration gate at its deadline: %+v, %v", out.Resolution, ok)
	}
}

func TestInvalidateAndGuard(t *testing.T) {
	g, _, _ := Open(Default(), Integration, Subject{ID: "ws-1", Body: json.RawMessage(`{}`), Workspace: "ws-1"}, "gate-1", t0, ts0, 0)
	out, ev, err := Invalidate(g, "ts")
	checkEvents(t, ev)
	if err != nil || out.Resolution.Actor != "protocol" || out.Resolution.Action != Reject || ev.Body["reason"] != "subject_invalidated" {
		t.Errorf("Invalidate = %+v, %v, %v", out.Resolution, ev.Body, err)
	}
	if _, _, err := Invalidate(out, "ts"); !errors.Is(err, ErrResolved) {
		t.Errorf("Invalidate twice = %v", err)
	}

	cfg := Default()
	cfg.Overrides[Integration] = Policy{Timeout: ptr(time.Minute), Fallback: FallbackCoordinator}
	cfg.Overrides[TaskApproval] = Policy{Timeout: ptr(time.Minute), Fallback: FallbackApprove}
	gd := Guard{}
	for _, typ := range []GateType{Integration, TaskApproval} {
		g, _, _ := Open(cfg, typ, Subject{ID: "s-1", Body: json.RawMessage(`{}`)}, "gate-"+string(typ), t0, ts0, 0)
		gd.Note(g) // pending: nothing
		g, _, _ = Expire(g, t0.Add(time.Hour), "ts")
		gd.Note(g)
	}
	human, _, _ := Open(cfg, WorkspaceAbort, Subject{ID: "s-1", Body: json.RawMessage(`{}`)}, "gate-h", t0, ts0, 0)
	req, _ := DecodeResolveRequest([]byte(`{"gate_id":"gate-h","action":"reject"}`))
	human, _, _ = Resolve(human, req, "user-1", "ts")
	gd.Note(human) // a person's answer is not a fallback's

	convert, ev, err := gd.Check(Integration, "s-1", "gate-9")
	checkEvents(t, ev)
	if !convert || err != nil || ev.Body["converted_to"] != "approve" || ev.Body["subject_id"] != "s-1" {
		t.Errorf("Check after escalate_to_coordinator = %v, %v, %v", convert, ev.Body, err)
	}
	var re *ReentryError
	if _, _, err := gd.Check(TaskApproval, "s-1", "gate-10"); !errors.As(err, &re) || re.Fallback != FallbackApprove {
		t.Errorf("Check after approve = %v, want a ReentryError", err)
	}
	for _, k := range []struct {
		typ GateType
		s   string
	}{{WorkspaceAbort, "s-1"}, {Integration, "s-2"}} {
		if convert, _, err := gd.Check(k.typ, k.s, "g"); convert || err != nil {
			t.Errorf("Check(%s, %s) = %v, %v, want no guard", k.typ, k.s, convert, err)
		}
	}
}

func TestQueue(t *testing.T) {
	mk := func(id, ts string, resolved bool) Gate {
		g := Gate{ID: id, Timestamp: ts}
		if resolved {
			g.Resolution = &Resolution{}
		}
		d := ts
		g.Deadline = &d
		return g
	}
	gates := []Gate{
		mk("c", "2026-11-26T12:00:02.000000000Z", false),
		mk("a", "2026-11-26T12:00:01.000000000Z", true),
		mk("b", "2026-11-26T12:00:03.000000000Z", false),
		mk("d", "2026-11-26T12:00:02.000000000Z", false),
	}
	var ids []string
	for _, g := range Queue(gates) {
		ids = append(ids, g.ID)
	}
	if !reflect.DeepEqual(ids, []string{"c", "d", "b"}) {
		t.Errorf("Queue = %v, want [c d b]", ids)
	}
	if d, ok := NextDeadline(gates); !ok || !d.Equal(time.Date(2026, 11, 26, 12, 0, 2, 0, time.UTC)) {
		t.Errorf("NextDeadline = %v, %v", d, ok)
	}
}

func ptr[T any](v T) *T { return &v }

// TestDenyTakesNoOutcome: with no operator present a gate is denied, never
// halted: deny with an outcome is refused.
func TestDenyTakesNoOutcome(t *testing.T) {
	if _, err := DecodeResolveRequest([]byte(`{"gate_id":"G","action":"deny","outcome":"halt"}`)); !errors.Is(err, ErrInvalidResolution) {
		t.Fatalf("deny with an outcome: %v", err)
	}
	if r, err := DecodeResolveRequest([]byte(`{"gate_id":"G","action":"reject","outcome":"halt","confirm":true}`)); err != nil || r.Outcome != "halt" || !r.Confirm {
		t.Fatalf("reject halt: %+v %v", r, err)
	}
}
