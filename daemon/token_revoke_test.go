package daemon_test

import (
	"encoding/json"
	"testing"

	"github.com/wacpd/wacpd/daemon"

	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/internal/daemontest"
	"github.com/wacpd/wacpd/trail"
)

// TestTokenRevoke revokes an auditor's two tokens: both stop
// authenticating (an open connection is closed, new ones are refused, also
// after a restart), user_deactivated is written once, another principal's
// token keeps working, revoking again revokes nothing and writes nothing,
// and the name can be minted again.
func TestTokenRevoke(t *testing.T) {
	ctx := clientCtx(t)
	dir := t.TempDir()
	d := daemontest.Start(t, daemon.Config{DataDir: dir})
	dial := func(url, token string) (*client.Client, error) {
		return dialClient(t, ctx, client.Options{URL: url, Token: token})
	}
	works := func(url, token string) bool {
		c, err := dial(url, token)
		if err != nil {
			return false
		}
		_, err = c.TreeHead(ctx) // an audit endpoint every user and auditor may call
		return err == nil
	}
	coord, err := dial(d.URL, d.AdminToken)
	if err != nil {
		t.Fatal(err)
	}
	mint := func(kind, name string) string {
		t.Helper()
		tok, err := coord.CreateToken(ctx, kind, name)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	a1, a2, bob := mint("auditor", "alice"), mint("auditor", "alice"), mint("user", "bob")
	open, err := dial(d.URL, a1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := open.VerifyTrail(ctx, ""); err != nil {
		t.Fatal(err)
	}
	deactivated := func() []trail.Entry {
		t.Helper()
		page, err := coord.ReadTrail(ctx, client.TrailQuery{EventType: trail.EventUserDeactivated})
		if err != nil {
			t.Fatal(err)
		}
		return page.Entries
	}

	n, err := coord.RevokeToken(ctx, "auditor", "alice", "left the team")
	if err != nil || n != 2 {
		t.Fatalf("RevokeToken(auditor alice) = %d, %v; want 2", n, err)
	}
	if _, err := open.VerifyTrail(ctx, ""); err == nil {
		t.Error("a connection made with a revoked token still verifies the trail")
	}
	for _, tok := range []string{a1, a2} {
		if works(d.URL, tok) {
			t.Error("a revoked token still authenticates")
		}
	}
	if !works(d.URL, bob) {
		t.Error("revoking alice also cut bob")
	}
	es := deactivated()
	if len(es) != 1 {
		t.Fatalf("user_deactivated entries = %d, want 1", len(es))
	}
	var body struct {
		UserID, Reason, DeactivatedBy, PriorState string
	}
	if err := json.Unmarshal(es[0].Body, &struct {
		UserID        *string `json:"user_id"`
		Reason        *string `json:"reason"`
		DeactivatedBy *string `json:"deactivated_by"`
		PriorState    *string `json:"prior_state"`
	}{&body.UserID, &body.Reason, &body.DeactivatedBy, &body.PriorState}); err != nil {
		t.Fatal(err)
	}
	info, err := coord.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if body.UserID != "alice" || body.Reason != "left the team" || body.DeactivatedBy != info.RootWorkspace || body.PriorState != "active" {
		t.Errorf("user_deactivated body = %+v, want alice, the reason, the root and active", body)
	}

	if n, err := coord.RevokeToken(ctx, "auditor", "alice", ""); err != nil || n != 0 {
		t.Errorf("RevokeToken again = %d, %v; want 0", n, err)
	}
	if got := len(deactivated()); got != 1 {
		t.Errorf("user_deactivated entries after revoking nothing = %d, want still 1", got)
	}

	d.Stop()
	d = daemontest.Start(t, daemon.Config{DataDir: dir})
	if works(d.URL, a1) || works(d.URL, a2) {
		t.Error("a revoked token authenticates after a restart")
	}
	if !works(d.URL, bob) {
		t.Error("bob's token does not authenticate after a restart")
	}
	coord, err = dial(d.URL, d.AdminToken)
	if err != nil {
		t.Fatal(err)
	}
	if !works(d.URL, mint("auditor", "alice")) {
		t.Error("a token minted again for alice does not authenticate")
	}
}
