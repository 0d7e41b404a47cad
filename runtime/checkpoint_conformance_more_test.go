package runtime

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/checkpointchain"
	agentsignal "github.com/wacpd/wacpd/signal"
	"github.com/wacpd/wacpd/taxonomy"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

// The Standard and Full rows of Checkpoint spec §8, and the checks beside
// them; the Core rows are in checkpoint_conformance_test.go.

// Row: Active workspace only (Standard).
func TestCheckpointConformance_ActiveWorkspaceOnly(t *testing.T) {
	for _, state := range []workspace.State{
		workspace.Idle, workspace.Blocked, workspace.Suspended, workspace.Integrating, workspace.Failed, workspace.Closed,
	} {
		t.Run(string(state), func(t *testing.T) {
			e := openVerified(t)
			ws := workerIn(t, e, state)
			n := len(listCheckpoints(t, e, ws))
			_, err := e.CreateCheckpoint(ctx, ws, cpReq(nil, "final"))
			wantCode(t, fmt.Sprintf("CreateCheckpoint in %s", state), err, wire.CodeWorkspaceNotActive)
			if got := len(listCheckpoints(t, e, ws)); got != n {
				t.Errorf("checkpoints = %d, want %d", got, n)
			}
			if got := trailWhere(t, e, trail.EventCheckpointRejected, map[string]string{"workspace": ws, "reason": wire.CodeWorkspaceNotActive}); len(got) != 1 {
				t.Errorf("checkpoint_rejected(workspace_not_active) = %d entries, want 1", len(got))
			}
			if got := wsState(t, e, ws); got != state {
				t.Errorf("state after the rejection = %s, want %s", got, state)
			}
		})
	}
}

// Row: Taxonomy validation (Standard).
func TestCheckpointConformance_TaxonomyValidation(t *testing.T) {
	tests := []struct {
		name     string
		tax      *taxonomy.Taxonomy
		role     string
		typ      string
		wantCode string
	}{
		{"unregistered type", nil, "worker", "review", wire.CodeInvalidType},
		{"base type in another case", nil, "worker", "Artifact", wire.CodeInvalidType},
		{"base type with a trailing space", nil, "worker", "artifact ", wire.CodeInvalidType},
		{"type unregistered in the custom taxonomy", confTaxonomy(t), "reviewer", "decision", wire.CodeInvalidType},
		{"type registered in the custom taxonomy", confTaxonomy(t), "reviewer", "review", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := openVerified(t, withTaxonomy(tt.tax))
			w := activeWorkspace(t, e, tt.role)
			_, err := e.CreateCheckpoint(ctx, w.ID, cpBody(nil, func(m map[string]any) {
				m["type"] = tt.typ
				m["payload"].(map[string]any)["verdict"] = "approve"
			}))
			wantCode(t, fmt.Sprintf("CreateCheckpoint(type %q)", tt.typ), err, tt.wantCode)
			if tt.wantCode != "" {
				if got := trailWhere(t, e, trail.EventCheckpointRejected, map[string]string{"workspace": w.ID, "reason": tt.wantCode}); len(got) != 1 {
					t.Errorf("checkpoint_rejected entries = %d, want 1", len(got))
				}
			}
		})
	}
	t.Run("registered type enforces its required fields", func(t *testing.T) {
		e := openVerified(t, withTaxonomy(confTaxonomy(t)))
		w := activeWorkspace(t, e, "reviewer")
		_, err := e.CreateCheckpoint(ctx, w.ID, cpBody(nil, func(m map[string]any) { m["type"] = "review" }))
		wantCode(t, "CreateCheckpoint(review without verdict)", err, wire.CodeInvalidStructure)
		cp, err := e.CreateCheckpoint(ctx, w.ID, cpBody(nil, func(m map[string]any) {
			m["type"] = "review"
			m["payload"].(map[string]any)["verdict"] = "approve"
		}))
		if err != nil {
			t.Fatal(err)
		}
		if got := string(cp.Payload.Extra["verdict"]); got != `"approve"` {
			t.Errorf("payload.verdict = %s, want \"approve\"", got)
		}
	})
}

// Row: Confidence preserved (Standard).
func TestCheckpointConformance_ConfidencePreserved(t *testing.T) {
	e := openVerified(t)
	w := newWorker(t, e)
	var parent *string
	var made []checkpointchain.Checkpoint
	levels := []struct{ confidence, status string }{
		{"low", "provisional"}, {"high", "provisional"}, {"medium", "provisional"}, {"low", "final"},
	}
	for _, l := range levels {
		cp, err := e.CreateCheckpoint(ctx, w.ID, cpBody(parent, func(m map[string]any) {
			m["confidence"], m["status"] = l.confidence, l.status
		}))
		if err != nil {
			t.Fatalf("CreateCheckpoint(confidence %s) = %v, want success", l.confidence, err)
		}
		if cp.Confidence != l.confidence {
			t.Errorf("CreateCheckpoint(confidence %s).Confidence = %s", l.confidence, cp.Confidence)
		}
		parent = &cp.ID
		made = append(made, cp)
	}
	listed := listCheckpoints(t, e, w.ID)
	if len(listed) != len(levels) {
		t.Fatalf("ListCheckpoints = %d checkpoints, want %d: none filtered by confidence", len(listed), len(levels))
	}
	for i, cp := range made {
		got, err := e.GetCheckpoint(ctx, e.Root(), cp.ID)
		if err != nil || got.Confidence != levels[i].confidence || listed[i].Confidence != levels[i].confidence {
			t.Errorf("confidence of %s: get %q (%v), list %q; want %q", cp.ID, got.Confidence, err, listed[i].Confidence, levels[i].confidence)
		}
		created := trailWhere(t, e, trail.EventCheckpointCreated, map[string]string{"checkpoint_id": cp.ID})
		if len(created) != 1 || entryBody(t, created[0])["confidence"] != levels[i].confidence {
			t.Errorf("checkpoint_created(%s).confidence != %s", cp.ID, levels[i].confidence)
		}
		sig := outboxWhere(t, e, func(o agentsignal.OutboxItem) bool { return o.Signal.Ref != nil && *o.Signal.Ref == cp.ID })
		if len(sig) != 1 {
			t.Errorf("checkpoint signals for %s (confidence %s) = %d, want 1", cp.ID, cp.Confidence, len(sig))
		}
	}
	// A low-confidence final is integrated like any other.
	emitOK(t, e, w.ID, `{"type":"complete"}`)
	res, err := e.Integrate(ctx, e.Root(), mustJSON(map[string]any{"workspace": w.ID, "decision": "accept"}))
	if err != nil || res.Checkpoint != made[3].ID || res.Outcome != "closed" {
		t.Errorf("Integrate(low-confidence final) = %+v, %v; want %s closed", res, err, made[3].ID)
	}
}

// Row: Resource verification (Full).
func TestCheckpointConformance_ResourceVerification(t *testing.T) {
	tests := []struct {
		name      string
		meter     bool // install a meter reading 1000 tokens, cost 2
		usage     map[string]any
		wantField string // "" = no discrepancy
		wantAgent any
	}{
		{"wall_time far off", false, map[string]any{"wall_time": "1h"}, "wall_time", "1h"},
		{"wall_time close enough", false, map[string]any{"wall_time": "0s"}, "", nil},
		{"tokens far off", true, map[string]any{"tokens_consumed": 10}, "tokens_consumed", float64(10)},
		{"tokens equal", true, map[string]any{"tokens_consumed": 1000}, "", nil},
		{"tokens within 5%", true, map[string]any{"tokens_consumed": 1040}, "", nil},
		{"cost far off", true, map[string]any{"cost": 0.5}, "cost", 0.5},
		{"cost equal", true, map[string]any{"cost": 2.0}, "", nil},
		{"tokens without a meter are not verified", false, map[string]any{"tokens_consumed": 10}, "", nil},
		{"no resource_usage", true, nil, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newFakeClock()
			m := newFakeMeter()
			mods := []func(*Config){withFakeClock(clk)}
			if tt.meter {
				mods = append(mods, func(c *Config) { c.Meter = m })
			}
			e := openVerified(t, mods...)
			w := newWorker(t, e)
			m.set(w.ID, 1000, 2.0)
			cp, err := e.CreateCheckpoint(ctx, w.ID, cpBody(nil, func(b map[string]any) {
				if tt.usage != nil {
					b["resource_usage"] = tt.usage
				}
			}))
			if err != nil {
				t.Fatalf("CreateCheckpoint = %v; a discrepancy must not block it", err)
			}
			if n := len(listCheckpoints(t, e, w.ID)); n != 1 {
				t.Errorf("checkpoints = %d, want 1", n)
			}
			got := trailWhere(t, e, trail.EventResourceDiscrepancy, map[string]string{"workspace": w.ID})
			if tt.wantField == "" {
				if len(got) != 0 {
					t.Errorf("resource_discrepancy entries = %d (%s), want none", len(got), got[0].Body)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("resource_discrepancy entries = %d, want 1", len(got))
			}
			b := entryBody(t, got[0])
			if b["field"] != tt.wantField || b["checkpoint_id"] != cp.ID || b["agent_value"] != tt.wantAgent ||
				b["runtime_value"] == nil || b["timestamp"] == nil || got[0].Workspace != w.ID {
				t.Errorf("resource_discrepancy = %s in %q, want field %s, checkpoint %s, agent_value %v", got[0].Body, got[0].Workspace, tt.wantField, cp.ID, tt.wantAgent)
			}
		})
	}
}

// TestCheckpoint_ResourceUsageDelta: resource_usage is consumption since the
// previous checkpoint (Checkpoint §6), and the runtime's meter counts active
// time only (suspension pauses it).
func TestCheckpoint_ResourceUsageDelta(t *testing.T) {
	clk := newFakeClock()
	m := newFakeMeter()
	e := openVerified(t, withFakeClock(clk), func(c *Config) { c.Meter = m })
	w := newWorker(t, e)
	var parent *string
	step := func(name string, advance time.Duration, tokens int64, usage map[string]any, wantFields ...string) {
		t.Helper()
		clk.Advance(advance)
		m.set(w.ID, tokens, 0)
		before := len(trailWhere(t, e, trail.EventResourceDiscrepancy, map[string]string{"workspace": w.ID}))
		cp, err := e.CreateCheckpoint(ctx, w.ID, cpBody(parent, func(b map[string]any) { b["resource_usage"] = usage }))
		if err != nil {
			t.Fatalf("%s: CreateCheckpoint = %v", name, err)
		}
		parent = &cp.ID
		all := trailWhere(t, e, trail.EventResourceDiscrepancy, map[string]string{"workspace": w.ID})
		var fields []string
		for _, en := range all[before:] {
			fields = append(fields, fmt.Sprint(entryBody(t, en)["field"]))
		}
		slices.Sort(fields)
		if !slices.Equal(fields, wantFields) {
			t.Errorf("%s: discrepancies %v, want %v", name, fields, wantFields)
		}
	}
	step("first, since activation", 10*time.Minute, 1000, map[string]any{"wall_time": "10m", "tokens_consumed": 1000})
	step("second, delta", 5*time.Minute, 1500, map[string]any{"wall_time": "5m", "tokens_consumed": 500})
	step("cumulative report is a discrepancy", 5*time.Minute, 2000, map[string]any{"wall_time": "20m", "tokens_consumed": 2000}, "tokens_consumed", "wall_time")
	step("no report still moves the baseline", 7*time.Minute, 2700, nil)
	step("after an unreported one", 3*time.Minute, 3000, map[string]any{"wall_time": "3m", "tokens_consumed": 300})

	clk.Advance(4 * time.Minute)
	if _, err := e.Suspend(ctx, e.Root(), w.ID, ""); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Hour) // not active time
	if _, err := e.Resume(ctx, e.Root(), w.ID); err != nil {
		t.Fatal(err)
	}
	step("suspension pauses the meter", 6*time.Minute, 3100, map[string]any{"wall_time": "10m", "tokens_consumed": 100})
}

// TestCheckpoint_MeterAcrossRestart: a checkpoint restarts the meter's
// interval without rewriting the workspace's record (one key and about 450
// bytes less per checkpoint); a restart derives the restart from the
// chain's head, so the wall time compared after it is still the time since
// the last checkpoint.
func TestCheckpoint_MeterAcrossRestart(t *testing.T) {
	clk := newFakeClock()
	dir := t.TempDir()
	e := openEngineAt(t, dir, withFakeClock(clk))
	w := newWorker(t, e)
	activated := wsMeter(t, e, w.ID).ActiveSince
	var parent *string
	checkpoint := func(e *Engine, name string, advance time.Duration, wall string, wantDiscrepancy bool) {
		t.Helper()
		clk.Advance(advance)
		before := len(trailWhere(t, e, trail.EventResourceDiscrepancy, map[string]string{"workspace": w.ID}))
		cp, err := e.CreateCheckpoint(ctx, w.ID, cpBody(parent, func(b map[string]any) {
			b["resource_usage"] = map[string]any{"wall_time": wall}
		}))
		if err != nil {
			t.Fatalf("%s: CreateCheckpoint = %v", name, err)
		}
		parent = &cp.ID
		got := len(trailWhere(t, e, trail.EventResourceDiscrepancy, map[string]string{"workspace": w.ID})) - before
		if got != 0 != wantDiscrepancy {
			t.Errorf("%s: %d resource_discrepancy entries, want one: %v", name, got, wantDiscrepancy)
		}
		if m := wsMeter(t, e, w.ID); m.ActiveSince != cp.Timestamp || m.ActiveNanos != 0 {
			t.Errorf("%s: meter %+v, want the interval restarted at the checkpoint (%s)", name, m, cp.Timestamp)
		}
	}
	checkpoint(e, "first", 10*time.Minute, "10m", false)
	checkpoint(e, "second", 5*time.Minute, "5m", false)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}

	rawDB(t, dir, func(txn *badger.Txn) error {
		item, err := txn.Get([]byte("w/" + w.ID))
		if err != nil {
			return err
		}
		return item.Value(func(v []byte) error {
			var rec workspace.Workspace
			if err := json.Unmarshal(v, &rec); err != nil {
				return err
			}
			if rec.Meter.ActiveSince != activated {
				t.Errorf("the record's meter starts at %s, want the activation's %s: the checkpoints rewrote the record", rec.Meter.ActiveSince, activated)
			}
			return nil
		})
	})

	e = openEngineAt(t, dir, withFakeClock(clk))
	if m := wsMeter(t, e, w.ID); m.ActiveSince != *cpTimestamp(t, e, *parent) {
		t.Errorf("after the restart the meter starts at %s, want the last checkpoint's timestamp", m.ActiveSince)
	}
	checkpoint(e, "after the restart", 3*time.Minute, "3m", false)
	checkpoint(e, "a report since the one before the restart", 2*time.Minute, "5m", true)
}

func wsMeter(t testing.TB, e *Engine, id string) workspace.Meter {
	t.Helper()
	w, err := e.GetWorkspace(ctx, e.Root(), id)
	if err != nil {
		t.Fatal(err)
	}
	return w.Meter
}

func cpTimestamp(t testing.TB, e *Engine, id string) *string {
	t.Helper()
	cp, err := e.GetCheckpoint(ctx, e.Root(), id)
	if err != nil {
		t.Fatal(err)
	}
	return &cp.Timestamp
}

// TestCheckpoint_RejectionCodes: every checkpoint rejection reason maps
// through Code to the same string, which is a wire error code.
func TestCheckpoint_RejectionCodes(t *testing.T) {
	tests := []struct {
		reason checkpointchain.Reason
		code   string
	}{
		{checkpointchain.ReasonPermissionDenied, wire.CodePermissionDenied},
		{checkpointchain.ReasonInvalidType, wire.CodeInvalidType},
		{checkpointchain.ReasonInvalidStructure, wire.CodeInvalidStructure},
		{checkpointchain.ReasonInvalidParent, wire.CodeInvalidParent},
		{checkpointchain.ReasonWorkspaceNotActive, wire.CodeWorkspaceNotActive},
	}
	for _, tt := range tests {
		if string(tt.reason) != tt.code {
			t.Errorf("reason %q != wire code %q", tt.reason, tt.code)
		}
		rj := checkpointchain.Reject(tt.reason, "m")
		for _, err := range []error{rj, fmt.Errorf("wrapped: %w", rj)} {
			if got := Code(err); got != string(tt.reason) {
				t.Errorf("Code(%v) = %q, want %q", err, got, tt.reason)
			}
		}
	}
	// And the errors the engine returns carry them.
	e := openVerified(t)
	w := newWorker(t, e)
	idle, err := e.CreateWorkspace(ctx, e.Root(), []byte(`{"role":"worker"}`))
	if err != nil {
		t.Fatal(err)
	}
	calls := []struct {
		ws   string
		body []byte
		want checkpointchain.Reason
	}{
		{w.ID, cpBody(nil, func(m map[string]any) { m["type"] = "observation" }), checkpointchain.ReasonPermissionDenied},
		{w.ID, cpBody(nil, func(m map[string]any) { m["type"] = "nope" }), checkpointchain.ReasonInvalidType},
		{w.ID, []byte(`{"type":"artifact"`), checkpointchain.ReasonInvalidStructure},
		{w.ID, cpReq(ptr("nope"), "final"), checkpointchain.ReasonInvalidParent},
		{idle.ID, cpReq(nil, "final"), checkpointchain.ReasonWorkspaceNotActive},
	}
	for _, c := range calls {
		_, err := e.CreateCheckpoint(ctx, c.ws, c.body)
		var rj *checkpointchain.Rejection
		if !errors.As(err, &rj) || !errors.Is(err, checkpointchain.ErrRejected) || Code(err) != string(c.want) || rj.Reason != c.want {
			t.Errorf("CreateCheckpoint(%s) = %v (Code %q), want a *Rejection %s", c.body, err, Code(err), c.want)
		}
	}
	_, err = e.CreateCheckpoint(ctx, "no-such-workspace", cpReq(nil, "final"))
	wantCode(t, "CreateCheckpoint(unknown workspace)", err, wire.CodeNotFound)
	_, err = e.GetCheckpoint(ctx, e.Root(), "no-such-checkpoint")
	wantCode(t, "GetCheckpoint(unknown id)", err, wire.CodeNotFound)
}

// Row: No payload in trail (Full).
func TestCheckpointConformance_NoPayloadInTrail(t *testing.T) {
	e := openVerified(t, withTaxonomy(confTaxonomy(t)))
	w := newWorker(t, e)
	rv := activeWorkspace(t, e, "reviewer")
	secrets := []string{"SECRET-CONTENT-7f3a9", "secret/dir/FILE-NAME-42.go", "ARTIFACT-REF-c0ffee", "VERDICT-EXTRA-99"}
	payload := func() map[string]any {
		return map[string]any{"files_changed": []string{secrets[1]}, "content": secrets[0], "artifacts": []string{secrets[2]}, "verdict": secrets[3]}
	}
	cp, err := e.CreateCheckpoint(ctx, rv.ID, cpBody(nil, func(m map[string]any) { m["type"], m["payload"] = "review", payload() }))
	if err != nil {
		t.Fatal(err)
	}
	cp2, err := e.CreateCheckpoint(ctx, w.ID, cpBody(nil, func(m map[string]any) {
		m["payload"] = payload()
		delete(m["payload"].(map[string]any), "verdict")
		m["status"] = "final"
		m["resource_usage"] = map[string]any{"wall_time": "1h"} // a discrepancy entry too
	}))
	if err != nil {
		t.Fatal(err)
	}
	// Rejected requests carrying the payload.
	_, err = e.CreateCheckpoint(ctx, w.ID, cpBody(ptr("nope"), func(m map[string]any) { m["payload"] = payload() }))
	wantCode(t, "CreateCheckpoint(bad parent)", err, wire.CodeInvalidParent)
	_, err = e.CreateCheckpoint(ctx, w.ID, cpBody(&cp2.ID, func(m map[string]any) { m["payload"], m["intent"] = payload(), "" }))
	wantCode(t, "CreateCheckpoint(no intent)", err, wire.CodeInvalidStructure)
	emitOK(t, e, w.ID, `{"type":"complete"}`)
	if _, err := e.Integrate(ctx, e.Root(), mustJSON(map[string]any{"workspace": w.ID, "decision": "accept"})); err != nil {
		t.Fatal(err)
	}

	// The payload is in the checkpoints (so the scan below can fail)...
	for _, c := range []checkpointchain.Checkpoint{cp, cp2} {
		got, err := e.GetCheckpoint(ctx, e.Root(), c.ID)
		if err != nil || !strings.Contains(string(mustJSON(got)), secrets[0]) {
			t.Fatalf("GetCheckpoint(%s) = %s, %v; want the payload", c.ID, mustJSON(got), err)
		}
	}
	// ...and in no trail entry, in any part of it.
	entries := globalTrail(t, e)
	refs := 0
	for _, en := range entries {
		b := string(mustJSON(en))
		for _, s := range secrets {
			if strings.Contains(b, s) {
				t.Errorf("trail entry %s (%s) contains payload %q: %s", en.ID, en.EventType, s, b)
			}
		}
		if strings.Contains(b, cp.ID) {
			refs++
		}
	}
	if refs == 0 {
		t.Errorf("no trail entry references checkpoint %s by id", cp.ID)
	}
}

// TestCheckpoint_TooLargeRecordedAsRejected: Checkpoint §8 "Every rejection
// MUST produce a checkpoint_rejected trail entry": a request refused as
// too_large is recorded too (reason invalid_structure), and the wire code
// stays too_large.
func TestCheckpoint_TooLargeRecordedAsRejected(t *testing.T) {
	e := openVerified(t, func(c *Config) { c.MaxObjectBytes = 1024 })
	w := newWorker(t, e)
	_, err := e.CreateCheckpoint(ctx, w.ID, cpBody(nil, func(m map[string]any) {
		m["payload"].(map[string]any)["content"] = strings.Repeat("x", 2048)
	}))
	wantCode(t, "CreateCheckpoint(2 KiB content, limit 1 KiB)", err, wire.CodeTooLarge)
	if got := trailWhere(t, e, trail.EventCheckpointRejected, map[string]string{"workspace": w.ID}); len(got) != 1 {
		t.Errorf("checkpoint_rejected entries after a too_large refusal = %d, want 1", len(got))
	}
}
