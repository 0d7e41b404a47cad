package runtime

import (
	"testing"

	"github.com/wacpd/wacpd/envelope"
	"github.com/wacpd/wacpd/principal"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/user"
	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

func inject(e *Engine, userID, to, typ string) (envelope.Envelope, error) {
	return e.Inject(ctx, userID, mustJSON(map[string]any{"to": to, "type": typ,
		"payload": map[string]any{"format": "markdown", "content": "from a person", "attachments": []any{}}}))
}

// TestHighway_Injection: Human Highway §2.3, §6.2, §6.3 (F-1, F-2, F-3,
// S-10 for injection).
func TestHighway_Injection(t *testing.T) {
	e := openVerified(t)
	mkUser(t, e, "op", user.InjectDirectiveAny)
	mkUser(t, e, "nobody")
	w := idleWorker(t, e, e.Root())

	env, err := inject(e, "op", w.ID, "directive")
	if err != nil {
		t.Fatal(err)
	}
	if env.Origin != envelope.OriginHuman || env.Originator != "op" || env.From != e.Root() || env.Status != envelope.StatusDelivered {
		t.Fatalf("injected envelope = %+v", env)
	}
	if got := wsState(t, e, w.ID); got != workspace.Active {
		t.Errorf("the injected directive left the worker %s", got)
	}
	if len(trailWhere(t, e, trail.EventHumanInjection, map[string]string{"envelope_id": env.ID, "actor": "op", "status": "delivered"})) != 1 {
		t.Error("no human_injection delivered")
	}
	// The sender-role check alone is skipped: the matrix has no
	// coordinator → worker query, a person may send one.
	if _, err := inject(e, "op", w.ID, "query"); err != nil {
		t.Errorf("inject a query to a worker: %v", err)
	}
	// Everything else is checked, and the rejection recorded.
	_, err = inject(e, "op", w.ID, "no_such_type")
	wantCode(t, "unregistered type", err, wire.CodeInvalidType)
	checkpoint(t, e, w.ID, nil, "final")
	emitOK(t, e, w.ID, `{"type":"complete"}`)
	_, err = inject(e, "op", w.ID, "feedback")
	wantCode(t, "inject to an integrating workspace", err, wire.CodeTargetTerminal)
	if len(trailWhere(t, e, trail.EventHumanInjection, map[string]string{"to": w.ID, "status": "rejected", "reason": InjectionSealed})) != 1 {
		t.Error("no human_injection rejected workspace_sealed")
	}
	if _, err := e.Integrate(ctx, e.Root(), integrateBody(w.ID, DecisionReject)); err != nil {
		t.Fatal(err)
	}
	_, err = inject(e, "op", w.ID, "feedback")
	wantCode(t, "inject to a failed workspace", err, wire.CodeTargetTerminal)
	rejected := trailWhere(t, e, trail.EventHumanInjection, map[string]string{"to": w.ID, "status": "rejected", "reason": InjectionTerminal})
	if len(rejected) != 1 || rejected[0].Workspace != "" {
		t.Errorf("human_injection for a terminal target = %+v, want one, system-level", rejected)
	}
	_, err = inject(e, "op", "01NOSUCHWORKSPACE000000000", "directive")
	wantCode(t, "inject to nothing", err, wire.CodeTargetNotFound)

	// A suspended target queues it.
	s := newWorker(t, e)
	if _, err := e.Suspend(ctx, e.Root(), s.ID, ""); err != nil {
		t.Fatal(err)
	}
	env, err = inject(e, "op", s.ID, "feedback")
	if err != nil || len(trailWhere(t, e, trail.EventHumanInjection, map[string]string{"envelope_id": env.ID, "status": "queued"})) != 1 {
		t.Errorf("inject to a suspended workspace = %+v, %v; want queued", env, err)
	}

	// Capabilities and user state gate it; the denial is recorded, no
	// human_injection is.
	before := len(trailWhere(t, e, trail.EventHumanInjection, nil))
	_, err = inject(e, "nobody", s.ID, "feedback")
	wantCode(t, "inject without the capability", err, wire.CodeCapabilityDenied)
	if err := e.RevokeUser(ctx, e.Root(), principal.Principal{Kind: principal.KindUser, Name: "op"}, "left", 0, func(Grants) error { return nil }); err != nil {
		t.Fatal(err)
	}
	_, err = inject(e, "op", s.ID, "feedback")
	wantCode(t, "inject by a deactivated user", err, wire.CodeCapabilityDenied)
	if len(trailWhere(t, e, trail.EventCapabilityDenied, map[string]string{"user_id": "op", "reason": user.NotActive})) != 1 {
		t.Error("no capability_denied user_not_active")
	}
	if got := len(trailWhere(t, e, trail.EventHumanInjection, nil)); got != before {
		t.Errorf("refused injections wrote %d human_injection entries", got-before)
	}
	// A body that is not an envelope request changes nothing.
	if _, err := e.Inject(ctx, "op", []byte(`{"to":1}`)); Code(err) != wire.CodeInvalidStructure {
		t.Errorf("Inject(bad body) = %v", err)
	}
}

// TestHighway_InjectionOriginator: User spec §5.2 rules 4 and 5 (MUSTs
// 14, 15): a workspace created because of a person's injection names it
// (injection) and carries that person as its originator; its children
// inherit it; nothing else changes an originator.
func TestHighway_InjectionOriginator(t *testing.T) {
	e := openVerified(t)
	mkUser(t, e, "op", user.InjectDirectiveAny)
	root := e.Root()
	env, err := inject(e, "op", root, "directive")
	if err != nil {
		t.Fatal(err)
	}
	create := func(actor, body string) (*workspace.Workspace, error) {
		return e.CreateWorkspace(ctx, actor, []byte(body))
	}
	d, err := create(root, `{"role":"worker","delegate":true,"injection":"`+env.ID+`"}`)
	if err != nil {
		t.Fatalf("create with the injection: %v", err)
	}
	if d.Originator != "op" {
		t.Errorf("originator of a workspace caused by op's injection = %q, want op", d.Originator)
	}
	if len(trailWhere(t, e, trail.EventWorkspaceCreated, map[string]string{"workspace_id": d.ID, "originator": "op"})) != 1 {
		t.Error("workspace_created does not carry originator op")
	}
	directive(t, e, root, d.ID)
	kid, err := create(d.ID, `{"role":"worker"}`)
	if err != nil {
		t.Fatal(err)
	}
	if kid.Originator != "op" {
		t.Errorf("child's originator = %q, want op (inherited)", kid.Originator)
	}
	plain, err := create(root, `{"role":"worker"}`)
	if err != nil || plain.Originator != workspace.OriginatorSystem {
		t.Errorf("create without an injection = %+v, %v; want originator system", plain, err)
	}

	// What an injection may not name: an agent's envelope, one sent to
	// another workspace, one that does not exist. Nothing is created.
	n := len(trailWhere(t, e, trail.EventWorkspaceCreated, nil))
	agentEnv, err := e.SendEnvelope(ctx, root, mustJSON(map[string]any{"to": d.ID, "type": "directive", "payload": map[string]any{"content": "x"}}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = create(d.ID, `{"role":"worker","injection":"`+agentEnv.ID+`"}`)
	wantCode(t, "an agent's envelope as the injection", err, wire.CodeInvalidStructure)
	_, err = create(d.ID, `{"role":"worker","injection":"`+env.ID+`"}`)
	wantCode(t, "an injection sent to another workspace", err, wire.CodeNotFound)
	_, err = create(root, `{"role":"worker","injection":"01NOSUCHENVELOPE0000000000"}`)
	wantCode(t, "an unknown injection", err, wire.CodeNotFound)
	if got := len(trailWhere(t, e, trail.EventWorkspaceCreated, nil)); got != n {
		t.Errorf("refused creations wrote %d workspace_created entries", got-n)
	}
}
