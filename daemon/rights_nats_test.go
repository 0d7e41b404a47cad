package daemon_test

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/daemon"
	"github.com/wacpd/wacpd/envelope"
	"github.com/wacpd/wacpd/internal/daemontest"
	"github.com/wacpd/wacpd/taxonomy"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/wire"
)

// errCode returns the wire code of a client error, "" for nil.
func errCode(err error) string {
	var ce *client.Error
	if errors.As(err, &ce) {
		return ce.Code
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

// TestRights_ListAndRevokeOverNATS: the port rights table over the real
// daemon (Channels CH-C7, CH-4). A worker lists its own rights (to and
// from the root), the coordinator any workspace's, a worker another's not
// (not_found, as an unknown id); only the coordinator revokes, the revoked
// right is gone from both sides' lists, the holder's next envelope on it
// is no_send_right, and port_right_revoked carries the reason.
func TestRights_ListAndRevokeOverNATS(t *testing.T) {
	ctx := clientCtx(t)
	d := daemontest.Start(t, daemon.Config{DataDir: t.TempDir()})
	coord, err := dialClient(t, ctx, client.Options{URL: d.URL, Token: d.AdminToken})
	if err != nil {
		t.Fatal(err)
	}
	root := coord.Workspace() // the admin token acts as the root
	w := directedWorker(t, ctx, coord)
	x := directedWorker(t, ctx, coord)
	wc, err := dialClient(t, ctx, client.Options{URL: d.URL, Token: w.Token, Workspace: w.Workspace.ID})
	if err != nil {
		t.Fatal(err)
	}

	own, err := wc.Rights(ctx, "")
	if err != nil {
		t.Fatalf("Rights(own): %v", err)
	}
	has := func(rs []client.PortRight, holder, target string) (client.PortRight, bool) {
		i := slices.IndexFunc(rs, func(r client.PortRight) bool {
			return r.Holder == holder && r.Target == target && r.RightType == envelope.RightSend
		})
		if i < 0 {
			return client.PortRight{}, false
		}
		return rs[i], true
	}
	if own.Workspace != w.Workspace.ID {
		t.Errorf("Rights(own).Workspace = %s, want %s", own.Workspace, w.Workspace.ID)
	}
	if _, ok := has(own.Outbound, w.Workspace.ID, root); !ok || len(own.Outbound) != 1 {
		t.Errorf("worker's outbound = %+v, want one send right to the root", own.Outbound)
	}
	toW, ok := has(own.Inbound, root, w.Workspace.ID)
	if !ok || len(own.Inbound) != 1 {
		t.Fatalf("worker's inbound = %+v, want the root's send right", own.Inbound)
	}
	all, err := coord.Rights(ctx, w.Workspace.ID)
	if err != nil || !slices.Equal(all.Outbound, own.Outbound) || !slices.Equal(all.Inbound, own.Inbound) {
		t.Errorf("coordinator's Rights(w) = %+v, %v; want the worker's own answer %+v", all, err, own)
	}
	rootRights, err := coord.Rights(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := has(rootRights.Outbound, root, x.Workspace.ID); !ok {
		t.Errorf("root's outbound = %+v, want a send right to %s", rootRights.Outbound, x.Workspace.ID)
	}

	// Another's workspace is not_found, with the message of an unknown id.
	_, errX := wc.Rights(ctx, x.Workspace.ID)
	_, errGhost := wc.Rights(ctx, "01M8ZZZZZZZZZZZZZZZZZZZZZZ")
	if errCode(errX) != wire.CodeNotFound || errCode(errGhost) != wire.CodeNotFound {
		t.Errorf("worker's Rights(other) = %v, Rights(unknown) = %v; want not_found both", errX, errGhost)
	}

	// Only the coordinator revokes.
	if _, err := wc.RevokeRight(ctx, toW.RightID, ""); errCode(err) != wire.CodePermissionDenied {
		t.Errorf("worker's RevokeRight = %v, want permission_denied", err)
	}
	if _, err := coord.RevokeRight(ctx, "", ""); errCode(err) != wire.CodeInvalidStructure {
		t.Errorf("RevokeRight(\"\") = %v, want invalid_structure", err)
	}
	got, err := coord.RevokeRight(ctx, toW.RightID, "boundary")
	if err != nil {
		t.Fatalf("RevokeRight: %v", err)
	}
	if got != toW {
		t.Errorf("RevokeRight reply = %+v, want the right %+v", got, toW)
	}
	if _, err := coord.RevokeRight(ctx, toW.RightID, ""); errCode(err) != wire.CodeNotFound {
		t.Errorf("RevokeRight twice = %v, want not_found", err)
	}
	after, err := wc.Rights(ctx, "")
	if err != nil || len(after.Inbound) != 0 {
		t.Errorf("worker's inbound after the revocation = %+v, %v; want none", after.Inbound, err)
	}
	_, err = coord.SendEnvelope(ctx, client.EnvelopeRequest{To: w.Workspace.ID, Type: taxonomy.EnvelopeFeedback, Payload: envelope.Payload{Content: "x"}})
	if errCode(err) != wire.CodeNoSendRight {
		t.Errorf("envelope on the revoked right = %v, want no_send_right", err)
	}
	page, err := coord.ReadTrail(ctx, client.TrailQuery{EventType: trail.EventPortRightRevoked})
	if err != nil || len(page.Entries) != 1 {
		t.Fatalf("port_right_revoked entries = %+v, %v; want 1", page.Entries, err)
	}
	var b map[string]any
	if err := json.Unmarshal(page.Entries[0].Body, &b); err != nil {
		t.Fatal(err)
	}
	if b["right_id"] != toW.RightID || b["reason"] != "boundary" || b["revoked_by"] != root || b["holder"] != root {
		t.Errorf("port_right_revoked body = %v", b)
	}
}
