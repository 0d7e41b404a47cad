package runtime

// Port rights through the Engine (PROTOCOL §5.6, Envelope §3 and §10,
// Channels §2), against real Badger.

import (
	"context"
	"maps"
	"slices"
	"testing"

	"github.com/wacpd/wacpd/envelope"
	"github.com/wacpd/wacpd/envelope/envstore"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

// rightsBody is an envelope request carrying rights (type, target pairs).
func rightsBody(to, typ string, rights ...string) []byte {
	var rs []map[string]string
	for i := 0; i+1 < len(rights); i += 2 {
		rs = append(rs, map[string]string{"type": rights[i], "target": rights[i+1]})
	}
	return mustJSON(map[string]any{"to": to, "type": typ, "payload": map[string]any{"content": typ}, "rights": rs})
}

// sendRejected sends body from ws and wants the rejection reason.
func sendRejected(t *testing.T, e *Engine, from string, body []byte, want string) {
	t.Helper()
	_, err := e.SendEnvelope(ctx, from, body)
	wantCode(t, "SendEnvelope("+string(body)+")", err, want)
}

// outbound returns the rights ws holds, as the engine answers them.
func outbound(t *testing.T, e *Engine, ws string) []envelope.Right {
	t.Helper()
	out, _, err := e.Rights(ctx, e.Root(), ws)
	if err != nil {
		t.Fatalf("Rights(%s): %v", ws, err)
	}
	return out
}

func holds(rs []envelope.Right, typ, target string) bool {
	return slices.ContainsFunc(rs, func(r envelope.Right) bool { return r.Type == typ && r.Target == target && r.Transit == "" })
}

// wantRightsMatchTrail compares the stored rights table with the one the
// trail says (created − revoked − consumed, holders moved by transfers).
func wantRightsMatchTrail(t *testing.T, e *Engine) map[string]envelope.Right {
	t.Helper()
	settled(t, e)
	fromTrail, err := e.rightsFromTrail(ctx)
	if err != nil {
		t.Fatalf("rightsFromTrail: %v", err)
	}
	stored, err := e.allRights()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]envelope.Right{}
	for _, r := range stored {
		r.Transit = ""
		got[r.ID] = r
	}
	if !maps.Equal(got, fromTrail) {
		t.Errorf("stored rights table = %v\nthe trail says      %v", got, fromTrail)
	}
	return got
}

// A send_once right made by the coordinator travels root → delegate →
// child and lets the child query the root (its grandparent, which the
// rights between parent and child would not), once.
func TestRights_SendOnceTransferredAndConsumed(t *testing.T) {
	e := openVerified(t)
	root := e.Root()
	d := newWorker(t, e, map[string]any{"delegate": true})
	c := idleWorker(t, e, d.ID)

	sendRejected(t, e, c.ID, envBody(root, "query", ""), wire.CodeNoSendRight)

	sendOK(t, e, root, rightsBody(d.ID, "directive", envelope.RightSendOnce, root))
	created := trailWhere(t, e, trail.EventPortRightCreated, map[string]string{"holder": root, "target": root})
	if len(created) != 1 || entryBody(t, created[0])["right_type"] != envelope.RightSendOnce || entryBody(t, created[0])["created_by"] != root {
		t.Fatalf("port_right_created root → root = %v, want one send_once made by the root", created)
	}
	rightID := entryBody(t, created[0])["right_id"].(string)
	if !holds(outbound(t, e, d.ID), envelope.RightSendOnce, root) {
		t.Fatalf("delegate's rights = %v, want the send_once right to the root", outbound(t, e, d.ID))
	}

	env := sendOK(t, e, d.ID, rightsBody(c.ID, "directive", envelope.RightSendOnce, root))
	if len(env.Rights) != 1 || env.Rights[0].RightID != rightID {
		t.Errorf("envelope rights = %+v, want right %s", env.Rights, rightID)
	}
	moved := trailWhere(t, e, trail.EventPortRightTransferred, map[string]string{"right_id": rightID})
	if len(moved) != 2 {
		t.Fatalf("port_right_transferred of %s = %d entries, want 2 (root → d, d → c)", rightID, len(moved))
	}
	if b := entryBody(t, moved[1]); b["from_holder"] != d.ID || b["to_holder"] != c.ID || b["via_envelope"] != env.ID || b["right_type"] != envelope.RightSendOnce {
		t.Errorf("second transfer = %v, want %s → %s via %s", b, d.ID, c.ID, env.ID)
	}
	if holds(outbound(t, e, d.ID), envelope.RightSendOnce, root) {
		t.Error("the delegate still holds the right it transferred")
	}
	// The delegate holds no second one to give.
	sendRejected(t, e, d.ID, rightsBody(c.ID, "feedback", envelope.RightSendOnce, root), wire.CodeNoSendRight)

	q := sendOK(t, e, c.ID, envBody(root, "query", ""))
	consumed := trailWhere(t, e, trail.EventPortRightConsumed, map[string]string{"right_id": rightID})
	if len(consumed) != 1 || entryBody(t, consumed[0])["via_envelope"] != q.ID || entryBody(t, consumed[0])["holder"] != c.ID {
		t.Fatalf("port_right_consumed = %v, want one by %s via %s", consumed, c.ID, q.ID)
	}
	sendRejected(t, e, c.ID, envBody(root, "query", ""), wire.CodeNoSendRight)
	wantRightsMatchTrail(t, e)
}

// A transferred send right moves: the receiver gains it, the sender loses
// it.
func TestRights_TransferMovesTheRight(t *testing.T) {
	e := openVerified(t)
	root := e.Root()
	d := newWorker(t, e, map[string]any{"delegate": true})
	c := idleWorker(t, e, d.ID)

	sendRejected(t, e, root, envBody(c.ID, "directive", ""), wire.CodeNoSendRight)
	sendOK(t, e, d.ID, rightsBody(root, "query", envelope.RightSend, c.ID))
	sendOK(t, e, root, envBody(c.ID, "directive", "")) // the right the delegate gave
	sendRejected(t, e, d.ID, envBody(c.ID, "directive", ""), wire.CodeNoSendRight)

	// Only rights of the spec's types, and only held ones.
	sendRejected(t, e, d.ID, rightsBody(root, "query", envelope.RightReceive, c.ID), wire.CodeInvalidStructure)
	sendRejected(t, e, d.ID, rightsBody(root, "query", envelope.RightSend, c.ID), wire.CodeNoSendRight)
	if n := len(trailWhere(t, e, trail.EventEnvelopeRejected, map[string]string{"from": d.ID})); n != 3 {
		t.Errorf("envelope_rejected from the delegate = %d, want 3", n)
	}
	wantRightsMatchTrail(t, e)
}

// The coordinator revokes a right: the holder sends nothing more on it; an
// envelope carrying it, accepted before, is delivered without it.
func TestRights_Revoke(t *testing.T) {
	e := openVerified(t)
	root := e.Root()
	w1 := newWorker(t, e)
	w2 := newWorker(t, e)

	var toW1 envelope.Right
	for _, r := range outbound(t, e, root) {
		if r.Target == w1.ID {
			toW1 = r
		}
	}
	if _, err := e.RevokeRight(ctx, w1.ID, toW1.ID, ""); Code(err) != wire.CodePermissionDenied {
		t.Errorf("RevokeRight by a worker = %v, want permission_denied", err)
	}
	if _, err := e.RevokeRight(ctx, root, "01M00000000000000000000000", ""); Code(err) != wire.CodeNotFound {
		t.Errorf("RevokeRight(unknown) = %v, want not_found", err)
	}
	if _, err := e.RevokeRight(ctx, root, toW1.ID, "boundary"); err != nil {
		t.Fatalf("RevokeRight: %v", err)
	}
	rev := trailWhere(t, e, trail.EventPortRightRevoked, map[string]string{"right_id": toW1.ID})
	if len(rev) != 1 {
		t.Fatalf("port_right_revoked = %v, want one", rev)
	}
	b := entryBody(t, rev[0])
	if b["holder"] != root || b["target"] != w1.ID || b["revoked_by"] != root || b["reason"] != "boundary" || b["right_type"] != envelope.RightSend {
		t.Errorf("port_right_revoked body = %v", b)
	}
	sendRejected(t, e, root, envBody(w1.ID, "feedback", ""), wire.CodeNoSendRight)
	if _, err := e.RevokeRight(ctx, root, toW1.ID, ""); Code(err) != wire.CodeNotFound {
		t.Errorf("RevokeRight twice = %v, want not_found", err)
	}

	// In transit: w2 is suspended, the envelope queues with a right to w2's
	// parent... the root's send right to w2 itself travels to w2's sibling.
	w3 := newWorker(t, e)
	if _, err := e.Suspend(ctx, root, w3.ID, ""); err != nil {
		t.Fatal(err)
	}
	env := sendOK(t, e, root, rightsBody(w3.ID, "feedback", envelope.RightSend, w2.ID))
	if len(env.Rights) != 1 {
		t.Fatalf("rights of the queued envelope = %+v", env.Rights)
	}
	if _, err := e.RevokeRight(ctx, root, env.Rights[0].RightID, "in transit"); err != nil {
		t.Fatalf("RevokeRight in transit: %v", err)
	}
	if _, err := e.Resume(ctx, root, w3.ID); err != nil {
		t.Fatal(err)
	}
	if got := trailWhere(t, e, trail.EventEnvelopeDelivered, map[string]string{"envelope_id": env.ID}); len(got) != 1 {
		t.Errorf("envelope_delivered of the queued envelope = %d, want 1", len(got))
	}
	if got := trailWhere(t, e, trail.EventPortRightTransferred, map[string]string{"right_id": env.Rights[0].RightID}); len(got) != 0 {
		t.Errorf("a revoked right was transferred: %v", got)
	}
	wantRightsMatchTrail(t, e)
}

// The rights table survives a restart and is exactly what the trail says;
// a data dir without a table (an earlier release's) gets it from its
// trail at open.
func TestRights_SurviveRestartAndMatchTheTrail(t *testing.T) {
	dir := t.TempDir()
	e := openEngineAt(t, dir)
	root := e.Root()
	d := newWorker(t, e, map[string]any{"delegate": true})
	c := idleWorker(t, e, d.ID)
	sendOK(t, e, d.ID, rightsBody(root, "query", envelope.RightSend, c.ID))
	sendOK(t, e, root, rightsBody(d.ID, "feedback", envelope.RightSendOnce, root))
	before := wantRightsMatchTrail(t, e)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}

	e = openEngineAt(t, dir)
	if got := wantRightsMatchTrail(t, e); !maps.Equal(got, before) {
		t.Errorf("rights after restart = %v, want %v", got, before)
	}
	sendOK(t, e, root, envBody(c.ID, "directive", ""))
	sendOK(t, e, d.ID, envBody(root, "query", ""))

	// Remove the table and its marker, as a data dir of the release before.
	err := e.run(context.Background(), 0, func() error {
		return e.commit(func(t *tx) error {
			if err := t.step("test"); err != nil {
				return err
			}
			if err := envstore.ClearRights(t.txn); err != nil {
				return err
			}
			return t.txn.Delete([]byte("e/rv"))
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	settled(t, e)
	if all, _ := e.allRights(); len(all) != 0 {
		t.Fatalf("rights after clearing = %v", all)
	}
	want := wantRightsMatchTrailless(t, e)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = openEngineAt(t, dir)
	if got := wantRightsMatchTrail(t, e); !maps.Equal(got, want) {
		t.Errorf("rebuilt rights = %v, want %v", got, want)
	}
	sendOK(t, e, root, envBody(c.ID, "feedback", ""))
}

// wantRightsMatchTrailless returns the rights the trail says.
func wantRightsMatchTrailless(t *testing.T, e *Engine) map[string]envelope.Right {
	t.Helper()
	settled(t, e)
	r, err := e.rightsFromTrail(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(r) == 0 {
		t.Fatal("the trail says there are no rights")
	}
	return r
}

// A child the cascade moves under the root gets rights to and from it.
func TestRights_ReparentedChildLinkedToRoot(t *testing.T) {
	e := openVerified(t)
	root := e.Root()
	d := newWorker(t, e, map[string]any{"delegate": true, "owner": "alice"})
	c, err := e.CreateWorkspace(ctx, d.ID, []byte(`{"role":"worker","owner":"bob"}`))
	if err != nil {
		t.Skipf("cross-owner child: %v", err)
	}
	if _, err := e.Abort(ctx, root, d.ID, ""); err != nil {
		t.Fatal(err)
	}
	w, _ := e.GetWorkspace(ctx, root, c.ID)
	if w.ParentID() != root {
		t.Skipf("child not reparented (parent %s)", w.ParentID())
	}
	sendOK(t, e, root, envBody(c.ID, "directive", ""))
	wantRightsMatchTrail(t, e)
	_ = workspace.Active
}
