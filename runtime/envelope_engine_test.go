package runtime

// Envelope behaviour through the Engine (WACP Envelope spec; wire contract
// §3.2 envelope and inbox.next), against real Badger.

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"slices"
	"testing"
	"time"

	"github.com/wacpd/wacpd/envelope"
	agentsignal "github.com/wacpd/wacpd/signal"
	"github.com/wacpd/wacpd/taxonomy"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/workspace"
)

// envBody returns an envelope request from the given fields.
func envBody(to, typ, priority string) []byte {
	m := map[string]any{"to": to, "type": typ, "payload": map[string]any{"content": "content of " + typ}}
	if priority != "" {
		m["priority"] = priority
	}
	return mustJSON(m)
}

func sendOK(t testing.TB, e *Engine, from string, body []byte) envelope.Envelope {
	t.Helper()
	env, err := e.SendEnvelope(ctx, from, body)
	if err != nil {
		t.Fatalf("SendEnvelope(%s, %s): %v", from, body, err)
	}
	return env
}

func idleWorker(t testing.TB, e *Engine, parent string) *workspace.Workspace {
	t.Helper()
	w, err := e.CreateWorkspace(ctx, parent, []byte(`{"role":"worker"}`))
	if err != nil {
		t.Fatalf("CreateWorkspace under %s: %v", parent, err)
	}
	return w
}

// inboxWaiting reports whether a NextEnvelope call is parked on ws's empty
// inbox (it reads the engine's inboxSig registry).
func inboxWaiting(e *Engine, ws string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, ok := e.inboxSig[ws]
	return ok
}

// drainInbox takes every envelope now in ws's inbox.
func drainInbox(t testing.TB, e *Engine, ws string) []string {
	t.Helper()
	var ids []string
	for {
		env, err := e.NextEnvelope(ctx, ws, 0)
		if err != nil {
			t.Fatalf("NextEnvelope(%s): %v", ws, err)
		}
		if env == nil {
			return ids
		}
		ids = append(ids, env.ID)
	}
}

func TestEnvelopeEngine_Rejections(t *testing.T) {
	tests := []struct {
		name   string
		tax    *taxonomy.Taxonomy
		setup  func(t *testing.T, e *Engine) (from string, body []byte)
		reason envelope.Reason
	}{
		{"target_not_found", nil, func(t *testing.T, e *Engine) (string, []byte) {
			return e.Root(), envBody("01JNOSUCHWORKSPACE00000000", "directive", "")
		}, envelope.ReasonTargetNotFound},
		{"target_terminal: integrating target", nil, func(t *testing.T, e *Engine) (string, []byte) {
			w := newWorker(t, e)
			emitOK(t, e, w.ID, `{"type":"complete"}`)
			return e.Root(), envBody(w.ID, "feedback", "")
		}, envelope.ReasonTargetTerminal},
		{"target_terminal: failed target", nil, func(t *testing.T, e *Engine) (string, []byte) {
			w := newWorker(t, e)
			if _, err := e.Abort(ctx, e.Root(), w.ID, ""); err != nil {
				t.Fatal(err)
			}
			return e.Root(), envBody(w.ID, "directive", "")
		}, envelope.ReasonTargetTerminal},
		{"target_terminal: closed target", nil, func(t *testing.T, e *Engine) (string, []byte) {
			w := newWorker(t, e)
			checkpoint(t, e, w.ID, nil, "final")
			emitOK(t, e, w.ID, `{"type":"complete"}`)
			if _, err := e.Integrate(ctx, e.Root(), mustJSON(map[string]any{"workspace": w.ID, "decision": "accept"})); err != nil {
				t.Fatal(err)
			}
			return e.Root(), envBody(w.ID, "feedback", "")
		}, envelope.ReasonTargetTerminal},
		{"invalid_type", nil, func(t *testing.T, e *Engine) (string, []byte) {
			w := newWorker(t, e)
			return e.Root(), envBody(w.ID, "memo", "")
		}, envelope.ReasonInvalidType},
		{"invalid_type: a type of another taxonomy", nil, func(t *testing.T, e *Engine) (string, []byte) {
			w := newWorker(t, e)
			return e.Root(), envBody(w.ID, "handoff", "")
		}, envelope.ReasonInvalidType},
		{"permission_denied: worker directive to coordinator", nil, func(t *testing.T, e *Engine) (string, []byte) {
			w := newWorker(t, e)
			return w.ID, envBody(e.Root(), "directive", "")
		}, envelope.ReasonPermissionDenied},
		{"permission_denied: worker feedback to coordinator", nil, func(t *testing.T, e *Engine) (string, []byte) {
			w := newWorker(t, e)
			return w.ID, envBody(e.Root(), "feedback", "")
		}, envelope.ReasonPermissionDenied},
		{"permission_denied: coordinator directive to observer", nil, func(t *testing.T, e *Engine) (string, []byte) {
			obs, err := e.CreateWorkspace(ctx, e.Root(), []byte(`{"role":"observer"}`))
			if err != nil {
				t.Fatal(err)
			}
			return e.Root(), envBody(obs.ID, "directive", "")
		}, envelope.ReasonPermissionDenied},
		{"no_send_right: worker to a sibling worker", confTaxonomy(t), func(t *testing.T, e *Engine) (string, []byte) {
			a, b := newWorker(t, e), newWorker(t, e)
			return a.ID, envBody(b.ID, "handoff", "")
		}, envelope.ReasonNoSendRight},
		{"no_send_right: grandchild to the root", nil, func(t *testing.T, e *Engine) (string, []byte) {
			d := newWorker(t, e, map[string]any{"delegate": true})
			c := idleWorker(t, e, d.ID)
			directive(t, e, d.ID, c.ID)
			return c.ID, envBody(e.Root(), "query", "")
		}, envelope.ReasonNoSendRight},
		{"invalid_structure: no to", nil, func(t *testing.T, e *Engine) (string, []byte) {
			return e.Root(), []byte(`{"type":"directive","payload":{"content":"x"}}`)
		}, envelope.ReasonInvalidStructure},
		{"invalid_structure: priority outside its enum", nil, func(t *testing.T, e *Engine) (string, []byte) {
			w := newWorker(t, e)
			return e.Root(), envBody(w.ID, "feedback", "asap")
		}, envelope.ReasonInvalidStructure},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := openVerified(t, withTaxonomy(tt.tax))
			from, body := tt.setup(t, e)
			rejBefore := localEntries(t, e, from, trail.EventEnvelopeRejected)
			createdBefore := len(localEntries(t, e, from, trail.EventEnvelopeCreated))
			acksBefore := len(outboxWhere(t, e, func(o agentsignal.OutboxItem) bool { return o.Signal.Type == taxonomy.SignalAcknowledged }))

			_, err := e.SendEnvelope(ctx, from, body)
			var rj *envelope.Rejection
			if !errors.As(err, &rj) || rj.Reason != tt.reason || Code(err) != string(tt.reason) {
				t.Fatalf("SendEnvelope(%s) = %v (Code %q), want rejection %s", body, err, Code(err), tt.reason)
			}
			rej := localEntries(t, e, from, trail.EventEnvelopeRejected)
			if len(rej) != len(rejBefore)+1 {
				t.Fatalf("envelope_rejected entries in the sender's trail = %d, want %d", len(rej), len(rejBefore)+1)
			}
			b := entryBody(t, rej[len(rej)-1])
			if b["reason"] != string(tt.reason) || b["from"] != from || b["envelope_id"] == "" || b["envelope_id"] == nil {
				t.Errorf("envelope_rejected body = %v, want reason %s from %s with an id", b, tt.reason, from)
			}
			if n := len(localEntries(t, e, from, trail.EventEnvelopeCreated)); n != createdBefore {
				t.Errorf("envelope_created entries = %d, want %d", n, createdBefore)
			}
			if n := len(outboxWhere(t, e, func(o agentsignal.OutboxItem) bool { return o.Signal.Type == taxonomy.SignalAcknowledged })); n != acksBefore {
				t.Errorf("acknowledged signals = %d, want %d", n, acksBefore)
			}
		})
	}
}

// The send right and the matrix are separate checks: with both, a worker
// delegate and its worker child exchange a taxonomy envelope type.
func TestEnvelopeEngine_TaxonomyTypeAlongSendRights(t *testing.T) {
	e := openVerified(t, withTaxonomy(confTaxonomy(t)))
	d := newWorker(t, e, map[string]any{"delegate": true})
	drainInbox(t, e, d.ID) // its directive
	c := idleWorker(t, e, d.ID)
	down := sendOK(t, e, d.ID, envBody(c.ID, "handoff", ""))
	up := sendOK(t, e, c.ID, envBody(d.ID, "handoff", ""))
	if got := drainInbox(t, e, c.ID); !slices.Equal(got, []string{down.ID}) {
		t.Errorf("child's inbox = %v, want [%s]", got, down.ID)
	}
	if got := drainInbox(t, e, d.ID); !slices.Equal(got, []string{up.ID}) {
		t.Errorf("delegate's inbox = %v, want [%s]", got, up.ID)
	}
}

func TestEnvelopeEngine_FirstDeliveryActivates(t *testing.T) {
	e := openVerified(t)
	w := idleWorker(t, e, e.Root())
	if got := wsState(t, e, w.ID); got != workspace.Idle {
		t.Fatalf("new workspace is %s, want idle", got)
	}
	env := sendOK(t, e, e.Root(), envBody(w.ID, "directive", ""))
	if got := wsState(t, e, w.ID); got != workspace.Active {
		t.Fatalf("state after the first delivery = %s, want active", got)
	}
	sendOK(t, e, e.Root(), envBody(w.ID, "feedback", ""))

	changes := localEntries(t, e, w.ID, trail.EventWorkspaceStateChanged)
	if len(changes) != 1 {
		t.Fatalf("workspace_state_changed entries = %d, want 1 (the second envelope changes nothing)", len(changes))
	}
	b := entryBody(t, changes[0])
	want := map[string]any{"workspace_id": w.ID, "from_state": "idle", "to_state": "active",
		"trigger": "first_envelope_delivered", "initiator": trail.ActorProtocol}
	for k, v := range want {
		if b[k] != v {
			t.Errorf("workspace_state_changed.%s = %v, want %v", k, b[k], v)
		}
	}
	delivered := trailWhere(t, e, trail.EventEnvelopeDelivered, map[string]string{"envelope_id": env.ID, "to": w.ID})
	if len(delivered) != 1 || delivered[0].Workspace != w.ID || delivered[0].ID >= changes[0].ID {
		t.Errorf("envelope_delivered for %s = %v, want one in %s's trail before the state change", env.ID, delivered, w.ID)
	}
	created := trailWhere(t, e, trail.EventEnvelopeCreated, map[string]string{"envelope_id": env.ID})
	if len(created) != 1 || created[0].Workspace != e.Root() {
		t.Errorf("envelope_created for %s = %v, want one in the sender's trail", env.ID, created)
	}
}

func TestEnvelopeEngine_AcknowledgedToSender(t *testing.T) {
	e := openVerified(t)
	root := e.Root()
	w := idleWorker(t, e, root)
	env := sendOK(t, e, root, envBody(w.ID, "directive", ""))
	if env.ID == "" || env.From != root || env.To != w.ID || env.DeliveredAt == "" ||
		(env.Status != envelope.StatusDelivered && env.Status != envelope.StatusAcknowledged) {
		t.Errorf("SendEnvelope = %+v, want a delivered record", env)
	}
	acks := outboxWhere(t, e, func(o agentsignal.OutboxItem) bool {
		return o.Signal.Type == taxonomy.SignalAcknowledged && o.Signal.Ref != nil && *o.Signal.Ref == env.ID
	})
	if len(acks) != 1 {
		t.Fatalf("acknowledged signals with ref %s = %d, want 1", env.ID, len(acks))
	}
	s := acks[0].Signal
	if s.From != w.ID || s.DeliveredTo == nil || *s.DeliveredTo != root {
		t.Errorf("acknowledged from %s to %v, want from the receiver %s to the sender %s", s.From, s.DeliveredTo, w.ID, root)
	}
	if want := fmt.Sprintf("wacp.v1.sig.%s.%s.acknowledged", root, w.ID); acks[0].Subject != want {
		t.Errorf("subject = %s, want %s", acks[0].Subject, want)
	}
	if got := trailWhere(t, e, trail.EventSignalDelivered, map[string]string{"signal_id": s.ID, "delivered_to": root}); len(got) != 1 || got[0].Workspace != root {
		t.Errorf("signal_delivered for the ack = %v, want one in the sender's trail", got)
	}
	if got := trailWhere(t, e, trail.EventSignalEmitted, map[string]string{"signal_id": s.ID, "type": "acknowledged", "ref": env.ID}); len(got) != 1 {
		t.Errorf("signal_emitted for the ack = %d entries, want 1", len(got))
	}
}

func TestEnvelopeEngine_InboxPriority(t *testing.T) {
	e := openVerified(t)
	w := idleWorker(t, e, e.Root())
	var sent []envelope.Envelope
	for _, p := range []string{"normal", "urgent", "blocking", "normal", "urgent"} {
		sent = append(sent, sendOK(t, e, e.Root(), envBody(w.ID, "feedback", p)))
	}
	want := []string{sent[2].ID, sent[1].ID, sent[4].ID, sent[0].ID, sent[3].ID}
	var got []string
	var prios []string
	for range want {
		env, err := e.NextEnvelope(ctx, w.ID, 0)
		if err != nil || env == nil {
			t.Fatalf("NextEnvelope = %v, %v; want an envelope", env, err)
		}
		got = append(got, env.ID)
		prios = append(prios, env.Priority)
	}
	if !slices.Equal(got, want) {
		t.Errorf("inbox order = %v (%v), want %v (blocking, urgent, urgent, normal, normal)", got, prios, want)
	}
	if env, err := e.NextEnvelope(ctx, w.ID, 0); env != nil || err != nil {
		t.Errorf("NextEnvelope on an empty inbox = %v, %v; want nil, nil", env, err)
	}
}

func TestEnvelopeEngine_NextEnvelopeWaits(t *testing.T) {
	type result struct {
		env *envelope.Envelope
		err error
	}
	t.Run("empty inbox times out with nil", func(t *testing.T) {
		e := openVerified(t)
		w := idleWorker(t, e, e.Root())
		start := time.Now()
		env, err := e.NextEnvelope(ctx, w.ID, 10*time.Millisecond)
		if env != nil || err != nil {
			t.Errorf("NextEnvelope(wait 10ms, empty) = %v, %v; want nil, nil", env, err)
		}
		if d := time.Since(start); d < 10*time.Millisecond {
			t.Errorf("NextEnvelope(wait 10ms) returned after %v, want at least the wait", d)
		}
	})
	t.Run("wakes on delivery", func(t *testing.T) {
		e := openVerified(t)
		w := idleWorker(t, e, e.Root())
		done := make(chan result, 1)
		start := time.Now()
		go func() {
			env, err := e.NextEnvelope(ctx, w.ID, 5*time.Second)
			done <- result{env, err}
		}()
		// Send only once the reader is parked on the empty inbox, so the
		// test shows a wake-up rather than a lucky first read.
		for !inboxWaiting(e, w.ID) {
			if time.Since(start) > 5*time.Second {
				t.Fatal("NextEnvelope never waited on the empty inbox")
			}
			goruntime.Gosched()
		}
		sent := sendOK(t, e, e.Root(), envBody(w.ID, "directive", ""))
		r := <-done
		if r.err != nil || r.env == nil || r.env.ID != sent.ID {
			t.Fatalf("NextEnvelope = %+v, %v; want envelope %s", r.env, r.err, sent.ID)
		}
		if d := time.Since(start); d >= 5*time.Second {
			t.Errorf("NextEnvelope returned after %v: it waited out its deadline instead of waking", d)
		}
	})
	t.Run("context cancelled", func(t *testing.T) {
		e := openVerified(t)
		w := idleWorker(t, e, e.Root())
		cctx, cancel := context.WithCancel(ctx)
		done := make(chan result, 1)
		go func() {
			env, err := e.NextEnvelope(cctx, w.ID, time.Minute)
			done <- result{env, err}
		}()
		cancel()
		if r := <-done; r.env != nil || !errors.Is(r.err, context.Canceled) {
			t.Errorf("NextEnvelope after cancel = %v, %v; want nil, context.Canceled", r.env, r.err)
		}
	})
	t.Run("engine closed", func(t *testing.T) {
		e := openTest(t)
		w := idleWorker(t, e, e.Root())
		verify(t, e)
		done := make(chan result, 1)
		go func() {
			env, err := e.NextEnvelope(ctx, w.ID, time.Minute)
			done <- result{env, err}
		}()
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		if r := <-done; r.env != nil || !errors.Is(r.err, ErrClosed) {
			t.Errorf("NextEnvelope after Close = %v, %v; want nil, ErrClosed", r.env, r.err)
		}
	})
}

func TestEnvelopeEngine_SuspendedQueuesUntilResume(t *testing.T) {
	for _, pre := range []workspace.State{workspace.Active, workspace.Blocked} {
		t.Run(string(pre), func(t *testing.T) {
			e := openVerified(t)
			w := newWorker(t, e)
			drainInbox(t, e, w.ID)
			if pre == workspace.Blocked {
				emitOK(t, e, w.ID, `{"type":"blocked","reason":"waiting"}`)
			}
			if _, err := e.Suspend(ctx, e.Root(), w.ID, ""); err != nil {
				t.Fatal(err)
			}
			e1 := sendOK(t, e, e.Root(), envBody(w.ID, "feedback", ""))
			e2 := sendOK(t, e, e.Root(), envBody(w.ID, "feedback", "urgent"))
			e3 := sendOK(t, e, e.Root(), envBody(w.ID, "feedback", ""))
			queued := []string{e1.ID, e2.ID, e3.ID}
			for _, id := range queued {
				if got := trailWhere(t, e, trail.EventEnvelopeDelivered, map[string]string{"envelope_id": id}); len(got) != 0 {
					t.Errorf("envelope %s delivered to a suspended workspace", id)
				}
				if got := outboxWhere(t, e, func(o agentsignal.OutboxItem) bool { return o.Signal.Ref != nil && *o.Signal.Ref == id }); len(got) != 0 {
					t.Errorf("envelope %s acknowledged while queued", id)
				}
				if got := trailWhere(t, e, trail.EventEnvelopeCreated, map[string]string{"envelope_id": id}); len(got) != 1 {
					t.Errorf("envelope_created for %s = %d, want 1", id, len(got))
				}
			}
			if env, err := e.NextEnvelope(ctx, w.ID, 10*time.Millisecond); env != nil || err != nil {
				t.Errorf("NextEnvelope while suspended = %v, %v; want nil", env, err)
			}

			if _, err := e.Resume(ctx, e.Root(), w.ID); err != nil {
				t.Fatal(err)
			}
			if got := wsState(t, e, w.ID); got != pre {
				t.Errorf("state after Resume = %s, want %s", got, pre)
			}
			var order []string
			for _, en := range localEntries(t, e, w.ID, trail.EventEnvelopeDelivered) {
				if id := fmt.Sprint(entryBody(t, en)["envelope_id"]); slices.Contains(queued, id) {
					order = append(order, id)
				}
			}
			if !slices.Equal(order, queued) {
				t.Errorf("envelope_delivered order on Resume = %v, want %v", order, queued)
			}
			for _, id := range queued {
				if got := outboxWhere(t, e, func(o agentsignal.OutboxItem) bool {
					return o.Signal.Type == taxonomy.SignalAcknowledged && o.Signal.Ref != nil && *o.Signal.Ref == id
				}); len(got) != 1 {
					t.Errorf("acknowledged for %s after Resume = %d, want 1", id, len(got))
				}
			}
			// The inbox order still applies to what was queued.
			if got, want := drainInbox(t, e, w.ID), []string{e2.ID, e1.ID, e3.ID}; !slices.Equal(got, want) {
				t.Errorf("inbox after Resume = %v, want %v", got, want)
			}
		})
	}
}

func TestEnvelopeEngine_QueryToCoordinator(t *testing.T) {
	e := openVerified(t)
	root := e.Root()
	w := newWorker(t, e)
	q := sendOK(t, e, w.ID, envBody(root, "query", ""))
	if q.From != w.ID || q.To != root || q.Type != "query" {
		t.Errorf("SendEnvelope(query) = %+v, want from %s to %s", q, w.ID, root)
	}
	if got := trailWhere(t, e, trail.EventEnvelopeDelivered, map[string]string{"envelope_id": q.ID, "to": root}); len(got) != 1 || got[0].Workspace != root {
		t.Errorf("envelope_delivered for the query = %v, want one in the root's trail", got)
	}
	env, err := e.NextEnvelope(ctx, root, 0)
	if err != nil || env == nil || env.ID != q.ID || env.From != w.ID || env.Type != "query" {
		t.Fatalf("NextEnvelope(root) = %+v, %v; want the query %s", env, err, q.ID)
	}
	acks := outboxWhere(t, e, func(o agentsignal.OutboxItem) bool { return o.Signal.Ref != nil && *o.Signal.Ref == q.ID })
	if len(acks) != 1 || acks[0].Subject != fmt.Sprintf("wacp.v1.sig.%s.%s.acknowledged", w.ID, root) {
		t.Errorf("acknowledged for the query = %+v, want one to the sender %s", acks, w.ID)
	}
}

func TestEnvelopeEngine_RejectionCodes(t *testing.T) {
	for _, r := range []envelope.Reason{
		envelope.ReasonPermissionDenied, envelope.ReasonNoSendRight, envelope.ReasonInvalidType,
		envelope.ReasonInvalidStructure, envelope.ReasonTargetNotFound, envelope.ReasonTargetTerminal,
	} {
		rj := envelope.Reject(r, "")
		for _, err := range []error{rj, fmt.Errorf("wrapped: %w", rj)} {
			if got := Code(err); got != string(r) {
				t.Errorf("Code(%v) = %q, want %q", err, got, r)
			}
		}
	}
}

// TestEnvelopeEngine_QueuedForAbortedWorkspaceUndeliverable: Envelope spec
// "if the target becomes terminal after validation → envelope_undeliverable".
// Envelopes queued for a suspended workspace that is then aborted get
// envelope_undeliverable in the sender's trail.
func TestEnvelopeEngine_QueuedForAbortedWorkspaceUndeliverable(t *testing.T) {
	e := openVerified(t)
	w := newWorker(t, e)
	if _, err := e.Suspend(ctx, e.Root(), w.ID, ""); err != nil {
		t.Fatal(err)
	}
	env := sendOK(t, e, e.Root(), envBody(w.ID, "feedback", ""))
	if _, err := e.Abort(ctx, e.Root(), w.ID, ""); err != nil {
		t.Fatal(err)
	}
	delivered := trailWhere(t, e, trail.EventEnvelopeDelivered, map[string]string{"envelope_id": env.ID})
	undeliverable := trailWhere(t, e, trail.EventEnvelopeUndeliverable, map[string]string{"envelope_id": env.ID})
	if len(delivered)+len(undeliverable) != 1 {
		t.Errorf("envelope %s queued for an aborted workspace: %d delivered, %d undeliverable entries; want envelope_undeliverable",
			env.ID, len(delivered), len(undeliverable))
	}
}
