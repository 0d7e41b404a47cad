package runtime

// Conformance tests for WACP Checkpoint spec §8: one top-level test per row of
// the conformance table, named after it, each against a real Badger database
// in t.TempDir(). The helpers at the end of this file are shared by
// envelope_engine_test.go, signal_engine_test.go and integrate_engine_test.go.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/casstore"
	"github.com/wacpd/wacpd/casstore/badgerstore"
	"github.com/wacpd/wacpd/checkpointchain"
	"github.com/wacpd/wacpd/clock"
	agentsignal "github.com/wacpd/wacpd/signal"
	"github.com/wacpd/wacpd/taxonomy"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

// Row: Two base checkpoint types (Core).
func TestCheckpointConformance_TwoBaseCheckpointTypes(t *testing.T) {
	for _, typ := range []string{taxonomy.CheckpointArtifact, taxonomy.CheckpointObservation} {
		if !taxonomy.Base().HasCheckpointType(typ) {
			t.Errorf("Base().HasCheckpointType(%q) = false, want true", typ)
		}
	}
	tests := []struct {
		name string
		tax  *taxonomy.Taxonomy
		role string
		typ  string
	}{
		{"worker creates artifact", nil, "worker", taxonomy.CheckpointArtifact},
		{"observer creates observation", nil, "observer", taxonomy.CheckpointObservation},
		// The base types stay available when a taxonomy adds types.
		{"derived role creates artifact under a custom taxonomy", confTaxonomy(t), "reviewer", taxonomy.CheckpointArtifact},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := openVerified(t, withTaxonomy(tt.tax))
			w := activeWorkspace(t, e, tt.role)
			cp, err := e.CreateCheckpoint(ctx, w.ID, cpBody(nil, func(m map[string]any) { m["type"] = tt.typ }))
			if err != nil {
				t.Fatalf("CreateCheckpoint(%s, type %s) = %v, want success", tt.role, tt.typ, err)
			}
			if cp.Type != tt.typ || cp.Workspace != w.ID {
				t.Errorf("checkpoint type, workspace = %q, %q, want %q, %q", cp.Type, cp.Workspace, tt.typ, w.ID)
			}
			got, err := e.GetCheckpoint(ctx, e.Root(), cp.ID)
			if err != nil || got.Type != tt.typ {
				t.Errorf("GetCheckpoint(%s) = type %q, %v; want %q", cp.ID, got.Type, err, tt.typ)
			}
		})
	}
}

// Row: Checkpoint schema (Core): every §3 field is present, id and timestamp
// are runtime-assigned, intent is required and non-empty.
func TestCheckpointConformance_CheckpointSchema(t *testing.T) {
	t.Run("all fields in record and JSON", func(t *testing.T) {
		clk := newFakeClock()
		e := openVerified(t, withFakeClock(clk))
		w := newWorker(t, e)
		before := clk.Now()
		cp, err := e.CreateCheckpoint(ctx, w.ID, cpBody(nil, func(m map[string]any) {
			m["confidence"] = "medium"
			m["resource_usage"] = map[string]any{"tokens_consumed": 12, "wall_time": "0s", "cost": 0.5}
		}))
		if err != nil {
			t.Fatal(err)
		}
		if cp.ID == "" || cp.Workspace != w.ID || cp.Type != "artifact" || cp.Intent != "because" ||
			cp.Parent != nil || cp.Status != "provisional" || cp.Confidence != "medium" || cp.Digest.IsZero() {
			t.Errorf("CreateCheckpoint = %+v, want every field set from the request and the runtime", cp)
		}
		if fmt.Sprint(cp.Payload.FilesChanged, cp.Payload.Content, cp.Payload.Artifacts) != fmt.Sprint([]string{"a.go"}, "x", []string{"r1"}) {
			t.Errorf("payload = %+v, want files_changed [a.go], content x, artifacts [r1]", cp.Payload)
		}
		u := cp.ResourceUsage
		if u == nil || u.TokensConsumed == nil || *u.TokensConsumed != 12 || u.WallTime == nil || *u.WallTime != "0s" || u.Cost == nil || *u.Cost != 0.5 {
			t.Errorf("resource_usage = %+v, want tokens 12, wall_time 0s, cost 0.5", u)
		}
		// The timestamp is the runtime's clock, not the agent's.
		ts, err := clock.Parse(cp.Timestamp)
		if err != nil || ts.Before(before) || ts.After(before.Add(time.Millisecond)) {
			t.Errorf("timestamp = %q (%v), want the runtime's clock %v", cp.Timestamp, err, before)
		}
		wantKeys := []string{"artifacts", "confidence", "content", "digest", "files_changed", "id", "intent",
			"parent", "payload", "resource_usage", "status", "timestamp", "type", "workspace"}
		if got := jsonKeys(t, cp); !slices.Equal(got, wantKeys) {
			t.Errorf("JSON keys of the checkpoint = %v, want %v", got, wantKeys)
		}

		// Without resource_usage the keys are still all there (null).
		cp2, err := e.CreateCheckpoint(ctx, w.ID, cpReq(&cp.ID, "final"))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(mustJSON(cp2), &m); err != nil {
			t.Fatal(err)
		}
		if v, ok := m["resource_usage"]; !ok || v != nil {
			t.Errorf("JSON resource_usage of a checkpoint without one = %v (present %v), want null", v, ok)
		}
		if m["parent"] != cp.ID {
			t.Errorf("JSON parent = %v, want %s", m["parent"], cp.ID)
		}
		if cp2.ID <= cp.ID || cp2.Timestamp <= cp.Timestamp {
			t.Errorf("second checkpoint id, timestamp = %s, %s; want after %s, %s", cp2.ID, cp2.Timestamp, cp.ID, cp.Timestamp)
		}
	})

	tests := []struct {
		name string
		mod  func(map[string]any)
	}{
		{"client id", func(m map[string]any) { m["id"] = "01J00000000000000000000000" }},
		{"client timestamp", func(m map[string]any) { m["timestamp"] = "2026-01-01T00:00:00.000000000Z" }},
		{"client workspace", func(m map[string]any) { m["workspace"] = "someone-else" }},
		{"client digest", func(m map[string]any) { m["digest"] = casstore.RefOf(nil).String() }},
		{"intent missing", func(m map[string]any) { delete(m, "intent") }},
		{"intent empty", func(m map[string]any) { m["intent"] = "" }},
		{"type missing", func(m map[string]any) { delete(m, "type") }},
		{"status outside enum", func(m map[string]any) { m["status"] = "done" }},
		{"confidence outside enum", func(m map[string]any) { m["confidence"] = "certain" }},
		{"payload null", func(m map[string]any) { m["payload"] = nil }},
		{"negative tokens", func(m map[string]any) { m["resource_usage"] = map[string]any{"tokens_consumed": -1} }},
		{"wall_time not a duration", func(m map[string]any) { m["resource_usage"] = map[string]any{"wall_time": "soon"} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := openVerified(t)
			w := newWorker(t, e)
			_, err := e.CreateCheckpoint(ctx, w.ID, cpBody(nil, tt.mod))
			wantCode(t, "CreateCheckpoint", err, wire.CodeInvalidStructure)
			if n := len(listCheckpoints(t, e, w.ID)); n != 0 {
				t.Errorf("checkpoints after a refused request = %d, want 0", n)
			}
			if got := trailWhere(t, e, trail.EventCheckpointRejected, map[string]string{"workspace": w.ID, "reason": wire.CodeInvalidStructure}); len(got) != 1 {
				t.Errorf("checkpoint_rejected(invalid_structure) entries = %d, want 1", len(got))
			}
		})
	}
}

// Row: Immutability (Core).
func TestCheckpointConformance_Immutability(t *testing.T) {
	// No Engine operation changes or removes a checkpoint.
	et := reflect.TypeOf(&Engine{})
	for i := 0; i < et.NumMethod(); i++ {
		name := et.Method(i).Name
		if !strings.Contains(name, "Checkpoint") {
			continue
		}
		for _, verb := range []string{"Update", "Set", "Modify", "Edit", "Patch", "Replace", "Delete", "Remove", "Promote", "Rewrite", "Amend"} {
			if strings.HasPrefix(name, verb) {
				t.Errorf("Engine.%s looks like an operation that modifies checkpoints; checkpoints are immutable", name)
			}
		}
	}

	dir := t.TempDir()
	e := openEngineAt(t, dir)
	w := newWorker(t, e)
	body1 := cpReq(nil, "provisional")
	c1, err := e.CreateCheckpoint(ctx, w.ID, body1)
	if err != nil {
		t.Fatal(err)
	}
	want := mustJSON(c1)
	checkSame := func(when string, e *Engine) {
		t.Helper()
		for i := 0; i < 2; i++ {
			got, err := e.GetCheckpoint(ctx, e.Root(), c1.ID)
			if err != nil {
				t.Fatalf("%s: GetCheckpoint(%s): %v", when, c1.ID, err)
			}
			if b := mustJSON(got); !bytes.Equal(b, want) {
				t.Fatalf("%s: GetCheckpoint(%s) = %s, want %s", when, c1.ID, b, want)
			}
		}
		enc, err := checkpointchain.Encode(c1)
		if err != nil {
			t.Fatal(err)
		}
		if ref := casstore.RefOf(enc); ref != c1.Digest {
			t.Fatalf("%s: RefOf(Encode(checkpoint)) = %s, want digest %s", when, ref, c1.Digest)
		}
		obj, err := badgerstore.New(e.db, e.seg).Get(ctx, c1.Digest)
		if err != nil || !bytes.Equal(obj, enc) {
			t.Fatalf("%s: stored object %s = %q, %v; want the canonical encoding %q", when, c1.Digest, obj, err, enc)
		}
	}
	checkSame("after creation", e)

	// The same work again is a new checkpoint, not a change to the old one.
	c2, err := e.CreateCheckpoint(ctx, w.ID, cpReq(&c1.ID, "provisional"))
	if err != nil {
		t.Fatal(err)
	}
	if c2.ID == c1.ID || c2.Digest == c1.Digest {
		t.Errorf("second checkpoint id, digest = %s, %s; want new ones (first %s, %s)", c2.ID, c2.Digest, c1.ID, c1.Digest)
	}
	// Resending the exact first request changes nothing.
	_, err = e.CreateCheckpoint(ctx, w.ID, body1)
	wantCode(t, "CreateCheckpoint(first request again)", err, wire.CodeInvalidParent)
	checkSame("after more checkpoints", e)

	// A provisional checkpoint is not promoted: a final one supersedes it.
	c3 := checkpoint(t, e, w.ID, &c2.ID, "final")
	if got, _ := e.GetCheckpoint(ctx, e.Root(), c2.ID); got.Status != "provisional" {
		t.Errorf("status of %s after a final successor = %s, want provisional", c2.ID, got.Status)
	}
	if _, err := e.EmitSignal(ctx, w.ID, []byte(`{"type":"complete"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Integrate(ctx, e.Root(), mustJSON(map[string]any{"workspace": w.ID, "decision": "accept"})); err != nil {
		t.Fatal(err)
	}
	checkSame("after integration", e)
	if ids := checkpointIDs(listCheckpoints(t, e, w.ID)); !slices.Equal(ids, []string{c1.ID, c2.ID, c3.ID}) {
		t.Errorf("chain after integration = %v, want %v", ids, []string{c1.ID, c2.ID, c3.ID})
	}

	// And across a restart.
	verify(t, e)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e2 := openEngineAt(t, dir)
	checkSame("after reopening", e2)
	verify(t, e2)
}

// TestCheckpoint_TamperedObjectIsNotIntegrated: the digest is the integrity
// proof (§3 Integrity); a stored object changed behind the engine's back is
// detected on read and not integrated.
func TestCheckpoint_TamperedObjectIsNotIntegrated(t *testing.T) {
	e := openTest(t) // the planted object is damage the verifier must see (below)
	w := newWorker(t, e)
	cp := checkpoint(t, e, w.ID, nil, "final")
	if _, err := e.EmitSignal(ctx, w.ID, []byte(`{"type":"complete"}`)); err != nil {
		t.Fatal(err)
	}
	enc, err := checkpointchain.Encode(cp)
	if err != nil {
		t.Fatal(err)
	}
	forged := bytes.Replace(enc, []byte(`"content":"x"`), []byte(`"content":"y"`), 1)
	if bytes.Equal(forged, enc) {
		t.Fatalf("test setup: content not found in %s", enc)
	}
	err = e.db.Update(func(txn *badger.Txn) error {
		return txn.Set(append([]byte(badgerstore.KeyPrefix), cp.Digest.Bytes()...), forged)
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.GetCheckpoint(ctx, e.Root(), cp.ID); !errors.Is(err, casstore.ErrCorrupt) {
		t.Errorf("GetCheckpoint(tampered) = %v, want casstore.ErrCorrupt", err)
	}
	_, err = e.Integrate(ctx, e.Root(), mustJSON(map[string]any{"workspace": w.ID, "decision": "accept"}))
	if err == nil {
		t.Fatalf("Integrate(tampered checkpoint) succeeded, want a refusal")
	}
	if got := wsState(t, e, w.ID); got != workspace.Integrating {
		t.Errorf("state after a refused integration = %s, want integrating", got)
	}
	if got := trailWhere(t, e, trail.EventIntegrityViolation, map[string]string{"subject_id": cp.ID, "violation": "hash_mismatch"}); len(got) != 1 {
		t.Errorf("integrity_violation entries for the tampered checkpoint = %d, want 1", len(got))
	}
	if got := trailWhere(t, e, trail.EventIntegrationStarted, map[string]string{"source": w.ID}); len(got) != 0 {
		t.Errorf("integration_started entries = %d, want 0", len(got))
	}
	// The daemon's verification checks every checkpoint object against its
	// digest: it reports the planted object at its checkpoint_created entry.
	created := trailWhere(t, e, trail.EventCheckpointCreated, map[string]string{"checkpoint_id": cp.ID})
	if res, err := e.VerifyTrail(ctx, ""); err != nil || res.OK || res.Violation != trail.ViolationHashMismatch ||
		len(created) != 1 || res.FirstBad != created[0].ID {
		t.Errorf("VerifyTrail = %+v, %v; want hash_mismatch at the checkpoint_created entry", res, err)
	}
}

// Row: Final checkpoint for integration (Core).
func TestCheckpointConformance_FinalCheckpointForIntegration(t *testing.T) {
	t.Run("most recent final, provisional ones after it", func(t *testing.T) {
		e := openVerified(t)
		w := newWorker(t, e)
		p1 := checkpoint(t, e, w.ID, nil, "provisional")
		f1 := checkpoint(t, e, w.ID, &p1.ID, "final")
		p2 := checkpoint(t, e, w.ID, &f1.ID, "provisional")
		f2 := checkpoint(t, e, w.ID, &p2.ID, "final")
		p3 := checkpoint(t, e, w.ID, &f2.ID, "provisional")
		p4 := checkpoint(t, e, w.ID, &p3.ID, "provisional")
		if h, err := e.Head(ctx, e.Root(), w.ID, true); err != nil || h.ID != f2.ID {
			t.Errorf("Head(final) = %s, %v; want %s", h.ID, err, f2.ID)
		}
		if h, err := e.Head(ctx, e.Root(), w.ID, false); err != nil || h.ID != p4.ID {
			t.Errorf("Head() = %s, %v; want %s", h.ID, err, p4.ID)
		}
		if _, err := e.EmitSignal(ctx, w.ID, []byte(`{"type":"complete"}`)); err != nil {
			t.Fatal(err)
		}
		res, err := e.Integrate(ctx, e.Root(), mustJSON(map[string]any{"workspace": w.ID, "decision": "accept"}))
		if err != nil {
			t.Fatal(err)
		}
		if res.Checkpoint != f2.ID {
			t.Errorf("Integrate used %s, want the most recent final %s (not %s, %s or %s)", res.Checkpoint, f2.ID, f1.ID, p3.ID, p4.ID)
		}
		if got := trailWhere(t, e, trail.EventIntegrationStarted, map[string]string{"source": w.ID, "checkpoint_ref": f2.ID}); len(got) != 1 {
			t.Errorf("integration_started with checkpoint_ref %s = %d entries, want 1", f2.ID, len(got))
		}
		if got := trailWhere(t, e, trail.EventSignalEmitted, map[string]string{"type": "integrate", "ref": f2.ID}); len(got) != 1 {
			t.Errorf("integrate signals with ref %s = %d, want 1", f2.ID, len(got))
		}
	})
	tests := []struct {
		name     string
		statuses []string
	}{
		{"only provisional checkpoints", []string{"provisional", "provisional"}},
		{"no checkpoints", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := openVerified(t)
			w := newWorker(t, e)
			var parent *string
			for _, s := range tt.statuses {
				cp := checkpoint(t, e, w.ID, parent, s)
				parent = &cp.ID
			}
			_, err := e.Head(ctx, e.Root(), w.ID, true)
			wantCode(t, "Head(final)", err, wire.CodeNoFinalCheckpoint)
			if _, err := e.EmitSignal(ctx, w.ID, []byte(`{"type":"complete"}`)); err != nil {
				t.Fatal(err)
			}
			_, err = e.Integrate(ctx, e.Root(), mustJSON(map[string]any{"workspace": w.ID, "decision": "accept"}))
			wantCode(t, "Integrate", err, wire.CodeNoFinalCheckpoint)
			if got := wsState(t, e, w.ID); got != workspace.Integrating {
				t.Errorf("state after refused integration = %s, want integrating", got)
			}
			if got := trailWhere(t, e, trail.EventIntegrationStarted, map[string]string{"source": w.ID}); len(got) != 0 {
				t.Errorf("integration_started entries = %d, want 0", len(got))
			}
			// Rule 2: the coordinator fails it instead, with the
			// decision's reason, and then may salvage a provisional one.
			for _, decision := range []string{"revise", "reject"} {
				reason := map[string]string{"revise": "revision_required", "reject": "rejected"}[decision]
				w := w
				if decision == "reject" {
					w = newWorker(t, e) // the first one has failed by now
					if len(tt.statuses) > 0 {
						checkpoint(t, e, w.ID, nil, "provisional")
					}
					if _, err := e.EmitSignal(ctx, w.ID, []byte(`{"type":"complete"}`)); err != nil {
						t.Fatal(err)
					}
				}
				res, err := e.Integrate(ctx, e.Root(), mustJSON(map[string]any{"workspace": w.ID, "decision": decision}))
				if err != nil || res.Outcome != "failed" {
					t.Fatalf("Integrate(%s) with no final checkpoint = %+v, %v; want failed", decision, res, err)
				}
				if got := wsState(t, e, w.ID); got != workspace.Failed {
					t.Errorf("state after %s = %s, want failed", decision, got)
				}
				b := lastStateChange(t, e, w.ID)
				wantBody(t, "workspace_state_changed", b, map[string]any{"to_state": "failed", "reason": reason})
				if got := trailWhere(t, e, trail.EventIntegrationAborted, map[string]string{"source": w.ID, "reason": reason}); len(got) != 1 {
					t.Errorf("integration_aborted(%s) entries = %d, want 1", reason, len(got))
				}
				if len(tt.statuses) > 0 {
					res, err := e.Integrate(ctx, e.Root(), mustJSON(map[string]any{
						"workspace": w.ID, "decision": "accept", "mode": "salvage", "strategy": "evaluated"}))
					if err != nil || res.Outcome != "salvaged" {
						t.Errorf("salvage after %s = %+v, %v; want a provisional checkpoint salvaged", decision, res, err)
					}
				}
			}
		})
	}
}

// Row: Type-role compatibility (Core).
func TestCheckpointConformance_TypeRoleCompatibility(t *testing.T) {
	t.Run("observer is activated by its own started signal", func(t *testing.T) {
		e := openVerified(t)
		obs, err := e.CreateWorkspace(ctx, e.Root(), []byte(`{"role":"observer"}`))
		if err != nil {
			t.Fatal(err)
		}
		_, err = e.SendEnvelope(ctx, e.Root(), mustJSON(map[string]any{
			"to": obs.ID, "type": "directive", "payload": map[string]any{"content": "watch"}}))
		wantCode(t, "SendEnvelope(directive to observer)", err, wire.CodePermissionDenied)
		if got := wsState(t, e, obs.ID); got != workspace.Idle {
			t.Fatalf("observer state after refused directive = %s, want idle", got)
		}
		if _, err := e.EmitSignal(ctx, obs.ID, []byte(`{"type":"started"}`)); err != nil {
			t.Fatal(err)
		}
		if got := wsState(t, e, obs.ID); got != workspace.Active {
			t.Fatalf("observer state after started = %s, want active", got)
		}
	})
	tests := []struct {
		name     string
		tax      *taxonomy.Taxonomy
		role     string
		typ      string
		wantCode string
	}{
		{"worker creates observation", nil, "worker", "observation", wire.CodePermissionDenied},
		{"observer creates artifact", nil, "observer", "artifact", wire.CodePermissionDenied},
		{"worker creates a type only a derived role may", confTaxonomy(t), "worker", "review", wire.CodePermissionDenied},
		{"worker creates artifact", nil, "worker", "artifact", ""},
		{"observer creates observation", nil, "observer", "observation", ""},
		{"derived role creates its type", confTaxonomy(t), "reviewer", "review", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := openVerified(t, withTaxonomy(tt.tax))
			w := activeWorkspace(t, e, tt.role)
			_, err := e.CreateCheckpoint(ctx, w.ID, cpBody(nil, func(m map[string]any) {
				m["type"] = tt.typ
				m["payload"].(map[string]any)["verdict"] = "ok"
			}))
			wantCode(t, fmt.Sprintf("CreateCheckpoint(%s by %s)", tt.typ, tt.role), err, tt.wantCode)
			wantN := 1
			if tt.wantCode != "" {
				wantN = 0
				if got := trailWhere(t, e, trail.EventCheckpointRejected, map[string]string{"workspace": w.ID, "reason": tt.wantCode, "type": tt.typ}); len(got) != 1 {
					t.Errorf("checkpoint_rejected entries = %d, want 1", len(got))
				}
			}
			if n := len(listCheckpoints(t, e, w.ID)); n != wantN {
				t.Errorf("checkpoints = %d, want %d", n, wantN)
			}
			if n := len(trailWhere(t, e, trail.EventCheckpointCreated, map[string]string{"workspace": w.ID})); n != wantN {
				t.Errorf("checkpoint_created entries = %d, want %d", n, wantN)
			}
		})
	}
}

// Row: Auto-signal emission (Core).
func TestCheckpointConformance_AutoSignalEmission(t *testing.T) {
	e := openVerified(t)
	root := e.Root()
	w := newWorker(t, e)
	d := newWorker(t, e, map[string]any{"delegate": true})
	child, err := e.CreateWorkspace(ctx, d.ID, []byte(`{"role":"worker"}`))
	if err != nil {
		t.Fatal(err)
	}
	directive(t, e, d.ID, child.ID)

	c1 := checkpoint(t, e, w.ID, nil, "provisional")
	c2 := checkpoint(t, e, w.ID, &c1.ID, "final")
	c3 := checkpoint(t, e, child.ID, nil, "final")
	_, err = e.CreateCheckpoint(ctx, w.ID, cpReq(ptr("nope"), "final")) // rejected: no signal
	wantCode(t, "CreateCheckpoint(bad parent)", err, wire.CodeInvalidParent)

	tests := []struct {
		name   string
		cp     checkpointchain.Checkpoint
		parent string
	}{
		{"provisional", c1, root},
		{"final", c2, root},
		{"grandchild's, to its parent", c3, d.ID}, // not to the root
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := tt.cp.Workspace
			items := outboxWhere(t, e, func(o agentsignal.OutboxItem) bool {
				return o.Signal.Type == taxonomy.SignalCheckpoint && o.Signal.Ref != nil && *o.Signal.Ref == tt.cp.ID
			})
			if len(items) != 1 {
				t.Fatalf("outbox checkpoint signals with ref %s = %d, want 1", tt.cp.ID, len(items))
			}
			s := items[0].Signal
			if s.From != ws || s.DeliveredTo == nil || *s.DeliveredTo != tt.parent {
				t.Errorf("checkpoint signal from %s to %v, want from %s to %s", s.From, s.DeliveredTo, ws, tt.parent)
			}
			if want := fmt.Sprintf("wacp.v1.sig.%s.%s.checkpoint", tt.parent, ws); items[0].Subject != want {
				t.Errorf("subject = %s, want %s", items[0].Subject, want)
			}
			emitted := trailWhere(t, e, trail.EventSignalEmitted, map[string]string{"signal_id": s.ID, "type": "checkpoint", "ref": tt.cp.ID, "from": ws})
			if len(emitted) != 1 || emitted[0].Workspace != ws || emitted[0].Actor != trail.ActorProtocol {
				t.Errorf("signal_emitted for %s = %+v, want one in %s's trail by protocol", s.ID, emitted, ws)
			}
			delivered := trailWhere(t, e, trail.EventSignalDelivered, map[string]string{"signal_id": s.ID, "delivered_to": tt.parent})
			if len(delivered) != 1 || delivered[0].Workspace != tt.parent {
				t.Errorf("signal_delivered for %s = %d entries, want 1 in %s's trail", s.ID, len(delivered), tt.parent)
			}
			// validate → register → trail → signal
			created := trailWhere(t, e, trail.EventCheckpointCreated, map[string]string{"checkpoint_id": tt.cp.ID})
			if len(created) != 1 || len(emitted) != 1 || created[0].ID >= emitted[0].ID {
				t.Errorf("checkpoint_created must precede the signal: %v, %v", created, emitted)
			}
		})
	}
	all := outboxWhere(t, e, func(o agentsignal.OutboxItem) bool { return o.Signal.Type == taxonomy.SignalCheckpoint })
	if len(all) != 3 {
		t.Errorf("checkpoint signals in outbox = %d, want 3 (none for the rejected request)", len(all))
	}
}

// Row: Linear chains (Core).
func TestCheckpointConformance_LinearChains(t *testing.T) {
	e := openVerified(t)
	w := newWorker(t, e)
	other := newWorker(t, e)
	o1 := checkpoint(t, e, other.ID, nil, "provisional")

	_, err := e.CreateCheckpoint(ctx, w.ID, cpReq(&o1.ID, "provisional"))
	wantCode(t, "first checkpoint with a parent", err, wire.CodeInvalidParent)
	c1 := checkpoint(t, e, w.ID, nil, "provisional")
	c2 := checkpoint(t, e, w.ID, &c1.ID, "provisional")

	tests := []struct {
		name   string
		parent *string
	}{
		{"second first checkpoint (parent null)", nil},
		{"non-head parent", &c1.ID},
		{"parent in another workspace", &o1.ID},
		{"unknown parent", ptr("01J0000000000000000000NOPE")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.CreateCheckpoint(ctx, w.ID, cpReq(tt.parent, "provisional"))
			wantCode(t, "CreateCheckpoint", err, wire.CodeInvalidParent)
		})
	}

	// Racing writers on one head: exactly one wins.
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = e.CreateCheckpoint(ctx, w.ID, cpReq(&c2.ID, "provisional"))
		}()
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch Code(err) {
		case "":
			won++
		case wire.CodeInvalidParent:
		default:
			t.Errorf("racing CreateCheckpoint = %v, want success or invalid_parent", err)
		}
	}
	if won != 1 {
		t.Errorf("racing writers on head %s: %d succeeded, want exactly 1", c2.ID, won)
	}

	chain := listCheckpoints(t, e, w.ID)
	children := map[string]int{}
	for i, c := range chain {
		want := ""
		if i > 0 {
			want = chain[i-1].ID
		}
		if c.ParentID() != want {
			t.Errorf("chain[%d].parent = %q, want %q", i, c.ParentID(), want)
		}
		children[c.ParentID()]++
	}
	for p, k := range children {
		if k > 1 {
			t.Errorf("checkpoint %q has %d children, want at most 1", p, k)
		}
	}
	if len(chain) != 3 {
		t.Errorf("chain length = %d, want 3", len(chain))
	}
}

// Row: Append-only chains (Core).
func TestCheckpointConformance_AppendOnlyChains(t *testing.T) {
	dir := t.TempDir()
	e := openEngineAt(t, dir)
	w := newWorker(t, e)
	var made []string
	head := func() *string {
		if len(made) == 0 {
			return nil
		}
		return &made[len(made)-1]
	}
	steps := []struct {
		name   string
		body   func() []byte
		accept bool
	}{
		{"first", func() []byte { return cpReq(head(), "provisional") }, true},
		{"bad parent", func() []byte { return cpReq(ptr("nope"), "provisional") }, false},
		{"second", func() []byte { return cpReq(head(), "provisional") }, true},
		{"wrong type", func() []byte { return cpBody(head(), func(m map[string]any) { m["type"] = "observation" }) }, false},
		{"third", func() []byte { return cpReq(head(), "final") }, true},
		{"no intent", func() []byte { return cpBody(head(), func(m map[string]any) { m["intent"] = "" }) }, false},
		{"insert before the head", func() []byte { return cpReq(&made[0], "provisional") }, false},
		{"fourth", func() []byte { return cpReq(head(), "provisional") }, true},
	}
	for _, st := range steps {
		before := len(made)
		cp, err := e.CreateCheckpoint(ctx, w.ID, st.body())
		if st.accept {
			if err != nil {
				t.Fatalf("%s: CreateCheckpoint = %v, want success", st.name, err)
			}
			made = append(made, cp.ID)
		} else if err == nil {
			t.Fatalf("%s: CreateCheckpoint succeeded, want a rejection", st.name)
		}
		got := checkpointIDs(listCheckpoints(t, e, w.ID))
		if !slices.Equal(got, made) {
			t.Fatalf("%s: ListCheckpoints = %v, want %v (count was %d)", st.name, got, made, before)
		}
	}
	page, err := e.ListCheckpoints(ctx, e.Root(), w.ID, made[0], 2)
	if err != nil || !slices.Equal(checkpointIDs(page), made[1:3]) {
		t.Errorf("ListCheckpoints(after %s, limit 2) = %v, %v; want %v", made[0], checkpointIDs(page), err, made[1:3])
	}
	verify(t, e)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e2 := openEngineAt(t, dir)
	if got := checkpointIDs(listCheckpoints(t, e2, w.ID)); !slices.Equal(got, made) {
		t.Errorf("ListCheckpoints after reopening = %v, want %v", got, made)
	}
	// The recovered register still enforces the head.
	_, err = e2.CreateCheckpoint(ctx, w.ID, cpReq(&made[1], "provisional"))
	wantCode(t, "CreateCheckpoint(non-head parent) after reopening", err, wire.CodeInvalidParent)
	checkpoint(t, e2, w.ID, &made[len(made)-1], "final")
	verify(t, e2)
}

// Row: Trail recording (Core).
func TestCheckpointConformance_TrailRecording(t *testing.T) {
	t.Run("one checkpoint_created per creation", func(t *testing.T) {
		e := openVerified(t)
		w := newWorker(t, e)
		var parent *string
		var made []checkpointchain.Checkpoint
		for i, st := range []string{"provisional", "provisional", "final"} {
			cp := checkpoint(t, e, w.ID, parent, st)
			parent = &cp.ID
			made = append(made, cp)
			if n := len(trailWhere(t, e, trail.EventCheckpointCreated, map[string]string{"workspace": w.ID})); n != i+1 {
				t.Fatalf("after %d checkpoints: checkpoint_created entries = %d", i+1, n)
			}
		}
		for _, cp := range made {
			got := trailWhere(t, e, trail.EventCheckpointCreated, map[string]string{"checkpoint_id": cp.ID})
			if len(got) != 1 {
				t.Fatalf("checkpoint_created for %s = %d entries, want 1", cp.ID, len(got))
			}
			b := entryBody(t, got[0])
			want := map[string]any{"workspace": w.ID, "type": cp.Type, "status": cp.Status, "confidence": cp.Confidence,
				"parent": anyOf(cp.Parent), "timestamp": cp.Timestamp}
			for k, v := range want {
				if b[k] != v {
					t.Errorf("checkpoint_created(%s).%s = %v, want %v", cp.ID, k, b[k], v)
				}
			}
			if got[0].Workspace != w.ID {
				t.Errorf("checkpoint_created(%s) is in trail %q, want %s", cp.ID, got[0].Workspace, w.ID)
			}
		}
	})

	tests := []struct {
		name   string
		reason checkpointchain.Reason
		typ    string
		idle   bool
		mod    func(map[string]any)
	}{
		{"permission_denied", checkpointchain.ReasonPermissionDenied, "observation", false, func(m map[string]any) { m["type"] = "observation" }},
		{"invalid_type", checkpointchain.ReasonInvalidType, "review", false, func(m map[string]any) { m["type"] = "review" }},
		{"invalid_structure", checkpointchain.ReasonInvalidStructure, "artifact", false, func(m map[string]any) { m["intent"] = "" }},
		{"invalid_parent", checkpointchain.ReasonInvalidParent, "artifact", false, func(m map[string]any) { m["parent"] = "nope" }},
		{"workspace_not_active", checkpointchain.ReasonWorkspaceNotActive, "artifact", true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := openVerified(t)
			var w *workspace.Workspace
			if tt.idle {
				var err error
				if w, err = e.CreateWorkspace(ctx, e.Root(), []byte(`{"role":"worker"}`)); err != nil {
					t.Fatal(err)
				}
			} else {
				w = newWorker(t, e)
			}
			before := trailWhere(t, e, trail.EventCheckpointRejected, map[string]string{"workspace": w.ID})
			_, err := e.CreateCheckpoint(ctx, w.ID, cpBody(nil, tt.mod))
			var rj *checkpointchain.Rejection
			if !errors.As(err, &rj) || rj.Reason != tt.reason {
				t.Fatalf("CreateCheckpoint = %v, want rejection %s", err, tt.reason)
			}
			after := trailWhere(t, e, trail.EventCheckpointRejected, map[string]string{"workspace": w.ID})
			if len(after) != len(before)+1 {
				t.Fatalf("checkpoint_rejected entries = %d, want %d", len(after), len(before)+1)
			}
			b := entryBody(t, after[len(after)-1])
			if b["reason"] != string(rj.Reason) || b["type"] != tt.typ || b["timestamp"] == nil {
				t.Errorf("checkpoint_rejected body = %v, want reason %s, type %s, a timestamp", b, rj.Reason, tt.typ)
			}
			if n := len(trailWhere(t, e, trail.EventCheckpointCreated, map[string]string{"workspace": w.ID})); n != 0 {
				t.Errorf("checkpoint_created entries = %d, want 0", n)
			}
		})
	}
}
