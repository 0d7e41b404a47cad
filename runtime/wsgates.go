package runtime

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/wacpd/wacpd/clock"
	"github.com/wacpd/wacpd/envelope"
	"github.com/wacpd/wacpd/envelope/envstore"
	"github.com/wacpd/wacpd/internal/strictjson"
	"github.com/wacpd/wacpd/runtime/delivery"

	"github.com/wacpd/wacpd/highway"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

// The gates on a workspace's transitions (Human Highway §2.2): integration
// (the coordinator's merge, integrate with accept) and workspace_abort.
// Each gate's subject is the workspace (its id is the subject id, so the
// re-entry guard keys on the workspace) and the subject body is the
// request as the person sees it, kept whole in the gate record: the
// resolution does what the request would have done, from the record alone.

// ReasonGateRejected is a workspace's failure reason when a person
// rejected its integration (Human Highway §3).
const ReasonGateRejected = "gate_rejected_by_human"

// integrationSubject is an integration gate's subject: the integration
// record (source, target, strategy, mode, checkpoint) and the request.
type integrationSubject struct {
	Source        string               `json:"source"`
	Target        string               `json:"target"`
	Owner         string               `json:"owner"`
	Initiator     string               `json:"initiator"` // the workspace whose agent asked (the coordinator or a delegate)
	Decision      string               `json:"decision"`
	Strategy      string               `json:"strategy"`
	Mode          string               `json:"mode"`
	CheckpointRef string               `json:"checkpoint_ref"`
	Result        json.RawMessage      `json:"result,omitempty"`
	Conflicts     []workspace.Conflict `json:"conflicts,omitempty"`
}

func (s integrationSubject) request() wire.IntegrateRequest {
	return wire.IntegrateRequest{Workspace: s.Source, Decision: s.Decision, Strategy: s.Strategy, Mode: s.Mode,
		Result: s.Result, Conflicts: s.Conflicts}
}

// integrationGate is the subject of the integration gate of workspace w,
// asked for by a.
func integrationGate(a, w *workspace.Workspace, req wire.IntegrateRequest, cpID string) (highway.Subject, error) {
	body, err := json.Marshal(integrationSubject{
		Source: w.ID, Target: w.ParentID(), Owner: w.Owner, Initiator: a.ID, Decision: req.Decision,
		Strategy: req.Strategy, Mode: req.Mode, CheckpointRef: cpID, Result: req.Result, Conflicts: req.Conflicts,
	})
	if err != nil {
		return highway.Subject{}, err
	}
	return highway.Subject{ID: w.ID, Body: body, Workspace: w.ID, TaskRef: w.TaskRef, Irreversible: true}, nil
}

// planIntegration: approve integrates as the request asked; reject fails
// the workspace with gate_rejected_by_human (a salvage stays failed), with
// integration_aborted. Nothing when the workspace left the state the
// integration needs.
func (t *tx) planIntegration(g highway.Gate) (func(*tx) error, error) {
	var s integrationSubject
	if err := json.Unmarshal(g.Subject, &s); err != nil {
		return nil, err
	}
	req := s.request()
	c := t.ws(s.Source)
	if c == nil || (req.Mode == ModeNormal && c.State != workspace.Integrating) ||
		(req.Mode == ModeSalvage && c.State != workspace.Failed) {
		return nil, nil
	}
	a := t.e.get(s.Initiator)
	if a == nil {
		a = t.e.get(t.e.root)
	}
	actor := g.Resolution.Actor
	if g.Resolution.Action != highway.Reject {
		// Integrations into one target are sequential (integrate_merge.go):
		// a person's approval waits until the open one ends; a fallback's
		// does nothing, and the coordinator's next integrate goes through
		// as approved (the re-entry guard).
		if err := t.refuseBusy(s.Target, s.Source); err != nil {
			if actor == highway.ActorFallback {
				return nil, nil
			}
			return nil, err
		}
		return func(t *tx) error {
			_, err := t.integrateNow(a, s.Source, req, s.CheckpointRef)
			return err
		}, nil
	}
	return func(t *tx) error {
		c := t.ws(s.Source)
		_, err := t.append(c.ID, actor, trail.EventIntegrationAborted, map[string]any{
			"source": c.ID, "target": c.ParentID(), "mode": req.Mode, "reason": ReasonGateRejected, "timestamp": nil,
		})
		if err != nil || req.Mode == ModeSalvage {
			return err
		}
		return t.transition(c, workspace.IntegrationFailed, actor, ReasonGateRejected, false)
	}, nil
}

// abortSubject is a workspace_abort gate's subject.
type abortSubject struct {
	WorkspaceID string          `json:"workspace_id"`
	State       workspace.State `json:"state"`
	Role        string          `json:"role"`
	Owner       string          `json:"owner"`
	Initiator   string          `json:"initiator"`
	Reason      string          `json:"reason"`
}

// abortGate is the subject of the workspace_abort gate of w, asked for by
// a with the caller's reason.
func abortGate(a, w *workspace.Workspace, reason string) (highway.Subject, error) {
	body, err := json.Marshal(abortSubject{WorkspaceID: w.ID, State: w.State, Role: w.Role, Owner: w.Owner,
		Initiator: a.ID, Reason: reason})
	if err != nil {
		return highway.Subject{}, err
	}
	return highway.Subject{ID: w.ID, Body: body, Workspace: w.ID, TaskRef: w.TaskRef, Irreversible: true}, nil
}

// planAbort: approve (or modify, with the person's reason) aborts the
// workspace as the coordinator asked; reject cancels the abort and the
// workspace goes on. Nothing when the workspace ended meanwhile.
func (t *tx) planAbort(g highway.Gate) (func(*tx) error, error) {
	var s abortSubject
	if err := json.Unmarshal(g.Subject, &s); err != nil {
		return nil, err
	}
	c := t.ws(s.WorkspaceID)
	if c == nil || c.State.Terminal() || g.Resolution.Action == highway.Reject {
		return nil, nil
	}
	reason := s.Reason
	if g.Resolution.Action == highway.Modify {
		var m struct {
			Reason string `json:"reason"`
		}
		if err := json.Unmarshal(g.Resolution.Modifications, &m); err != nil {
			return nil, Refuse(wire.CodeInvalidStructure, "modifications: reason must be a string")
		}
		reason = m.Reason
	}
	a := t.e.get(s.Initiator)
	if a == nil {
		a = t.e.get(t.e.root)
	}
	return func(t *tx) error {
		return t.abortFor(t.ws(s.WorkspaceID), t.e.actorOf(a), "aborted_by_coordinator", reason)
	}, nil
}

// conflictSubject is a conflict_resolution gate's subject: the conflicts
// and the resolution proposed.
type conflictSubject struct {
	WorkspaceID string                 `json:"workspace_id"`
	Conflicts   []workspace.Conflict   `json:"conflicts"`
	Integration *workspace.Integration `json:"integration"`
	Initiator   string                 `json:"initiator"`
	Strategy    string                 `json:"strategy"` // the resolution strategy proposed
	Resolution  string                 `json:"resolution,omitempty"`
}

// conflictGate is the subject of the conflict_resolution gate of
// conflicted workspace w, asked for by a.
func conflictGate(a, w *workspace.Workspace, req wire.ResolveRequest) (highway.Subject, error) {
	body, err := json.Marshal(conflictSubject{WorkspaceID: w.ID, Conflicts: w.Conflicts, Integration: w.Integration,
		Initiator: a.ID, Strategy: req.ResolutionStrategy, Resolution: req.Resolution})
	if err != nil {
		return highway.Subject{}, err
	}
	return highway.Subject{ID: w.ID, Body: body, Workspace: w.ID, TaskRef: w.TaskRef}, nil
}

// planConflict: approve resolves the conflicts with the strategy proposed
// (escalate, approved, closes the workspace: the person accepts the work),
// modify with the strategy the person chose (coordinator_resolve or
// agent_rework); reject of an escalation fails the workspace
// (gate_rejected_by_human), reject of the coordinator's own proposal (a
// gated coordinator_resolve or agent_rework) leaves the workspace
// conflicted, and the coordinator must choose again. Nothing when the
// workspace is no longer conflicted.
func (t *tx) planConflict(g highway.Gate) (func(*tx) error, error) {
	var s conflictSubject
	if err := json.Unmarshal(g.Subject, &s); err != nil {
		return nil, err
	}
	c := t.ws(s.WorkspaceID)
	if c == nil || c.State != workspace.Conflicted {
		return nil, nil
	}
	actor := g.Resolution.Actor
	if g.Resolution.Action == highway.Reject {
		if s.Strategy != ResolveEscalate {
			return nil, nil // the coordinator's proposal refused: it chooses again
		}
		// An escalation rejected: the person decided against the merge.
		return func(t *tx) error {
			return t.endIntegration(t.ws(s.WorkspaceID), actor, ResolveEscalate, s.Resolution, workspace.Failed)
		}, nil
	}
	strategy := s.Strategy
	if g.Resolution.Action == highway.Modify {
		var m struct {
			Strategy string `json:"strategy"`
		}
		if err := json.Unmarshal(g.Resolution.Modifications, &m); err != nil ||
			(m.Strategy != ResolveCoordinator && m.Strategy != ResolveAgentRework) {
			return nil, Refuse(wire.CodeInvalidStructure, "modifications: strategy must be coordinator_resolve or agent_rework")
		}
		strategy = m.Strategy
	}
	return func(t *tx) error { return t.resolveConflictAs(t.ws(s.WorkspaceID), actor, strategy, s.Resolution) }, nil
}

// createGate is the subject of the workspace_create gate of planned
// workspace w (not stored: it exists once approved), asked for by a with
// request body: the workspace as it would be created, the initiator and
// the request itself.
func createGate(a, w *workspace.Workspace, body []byte) (highway.Subject, error) {
	m := createdBody(w)
	m["initiator"] = a.ID
	m["request"] = json.RawMessage(body)
	b, err := json.Marshal(m)
	if err != nil {
		return highway.Subject{}, err
	}
	return highway.Subject{ID: w.ID, Body: b, Workspace: w.ParentID(), TaskRef: w.TaskRef}, nil
}

// holdWorkspace plans workspace id from req under parent for the agent
// of a, at ts, and holds its creation at a workspace_create gate: it does
// not exist until a person approves it. It returns the planned workspace
// and the gate, or, when the guard let it through, the created workspace
// and no gate.
func (t *tx) holdWorkspace(a, parent *workspace.Workspace, req workspace.CreateRequest, id string, ts time.Time, body []byte) (*workspace.Workspace, string, error) {
	if err := t.causedBy(a, &req); err != nil {
		return nil, "", err
	}
	w, err := workspace.Plan(req, parent, id, clock.Format(ts))
	if err != nil {
		return nil, "", err
	}
	if err := t.budgetFits(w.Budget, parent, ""); err != nil { // containment (budget.go)
		return nil, "", err
	}
	s, err := createGate(a, w, body)
	if err != nil {
		return nil, "", err
	}
	gid, held, err := t.openGate(highway.WorkspaceCreate, s)
	switch {
	case err != nil:
		return nil, "", err
	case held:
		return w, gid, nil
	}
	return t.ws(id), "", nil
}

// planCreate: approve creates the workspace as asked, with the id
// reserved when it was asked for; modify first changes its budget,
// priority or visibility; reject: it never exists. Nothing when its parent
// ended meanwhile.
func (t *tx) planCreate(g highway.Gate) (func(*tx) error, error) {
	var s struct {
		Initiator string          `json:"initiator"`
		Request   json.RawMessage `json:"request"`
		Parent    *string         `json:"parent"`
	}
	if err := json.Unmarshal(g.Subject, &s); err != nil || s.Parent == nil {
		return nil, fmt.Errorf("runtime: workspace_create gate %s: bad subject", g.ID)
	}
	parent := t.ws(*s.Parent)
	if parent == nil || parent.State.Terminal() || g.Resolution.Action == highway.Reject {
		return nil, nil
	}
	req, err := workspace.DecodeCreateRequest(s.Request)
	if err != nil {
		return nil, err
	}
	if g.Resolution.Action == highway.Modify {
		var m struct {
			Budget     *workspace.Budget `json:"budget"`
			Priority   *string           `json:"priority"`
			Visibility []string          `json:"visibility"`
		}
		if err := strictjson.Decode(g.Resolution.Modifications, &m); err != nil {
			return nil, Refuse(wire.CodeInvalidStructure, "modifications: %v", err)
		}
		if m.Budget != nil {
			req.Budget = m.Budget
		}
		if m.Priority != nil {
			req.Priority = *m.Priority
		}
		if m.Visibility != nil {
			req.Visibility = m.Visibility
		}
	}
	if _, err := workspace.Plan(req, parent, g.SubjectID, g.Timestamp); err != nil {
		return nil, &Error{Code: wire.CodeInvalidStructure, Message: err.Error(), Err: err}
	}
	a := t.e.get(s.Initiator)
	if a == nil {
		a = t.e.get(t.e.root)
	}
	id := g.SubjectID
	return func(t *tx) error {
		_, err := t.createWorkspace(a, t.e.actorOf(a), t.ws(parent.ID), req, id, t.next())
		return err
	}, nil
}

// holdEnvelope records env, created at ts by actor, and holds it at an
// envelope_delivery gate; it returns the gate when one holds it ("" when
// the guard let it through, delivered).
func (t *tx) holdEnvelope(ts time.Time, actor string, env *envelope.Envelope) (string, error) {
	if err := delivery.Hold(deliveryTx{t}, ts, actor, env); err != nil {
		return "", err
	}
	body, err := json.Marshal(env)
	if err != nil {
		return "", err
	}
	s := highway.Subject{ID: env.ID, Body: body, Workspace: env.To}
	if to := t.ws(env.To); to != nil {
		s.TaskRef = to.TaskRef
	}
	id, held, err := t.openGate(highway.EnvelopeDelivery, s)
	if err != nil || !held {
		return "", err
	}
	return id, nil
}

// planEnvelope: approve delivers the held envelope (or queues it for a
// suspended or migrating receiver), modify first replaces its payload
// with the person's; reject drops it (envelope_rejected,
// gate_rejected_by_human). Nothing when it is no longer held.
func (t *tx) planEnvelope(g highway.Gate) (func(*tx) error, error) {
	env, err := envstore.Get(t.txn, g.SubjectID)
	if err != nil || env.Status != envelope.StatusValidated {
		return nil, nil
	}
	switch g.Resolution.Action {
	case highway.Reject:
		return func(t *tx) error { return delivery.Drop(deliveryTx{t}, &env, ReasonGateRejected, false) }, nil
	case highway.Modify:
		var m struct {
			Payload json.RawMessage `json:"payload"`
		}
		if err := json.Unmarshal(g.Resolution.Modifications, &m); err != nil {
			return nil, Refuse(wire.CodeInvalidStructure, "modifications: %v", err)
		}
		var p envelope.Payload
		if err := strictjson.Decode(m.Payload, &p); err != nil {
			return nil, Refuse(wire.CodeInvalidStructure, "modifications: payload is not an envelope payload: %v", err)
		}
		// The stored envelope must verify (integrity_env.go) before the
		// person's payload replaces its own; the runtime proves the result.
		if ierr := (deliveryTx{t}).Verify(env); ierr != nil {
			return rejectTampered(env, ierr), nil
		}
		env.Payload = p
		deliveryTx{t}.Prove(&env)
	default:
		if ierr := (deliveryTx{t}).Verify(env); ierr != nil {
			return rejectTampered(env, ierr), nil
		}
	}
	return func(t *tx) error {
		if err := delivery.Release(deliveryTx{t}, &env); err != nil {
			return err
		}
		return t.startGrace(&env, t.e.actorOf(t.peek(env.From))) // graceful.go: the grace period starts at delivery
	}, nil
}

// staleWorkspaceGates resolves as invalidated the pending gates that w's
// transition from → to leaves with nothing to hold up (§6.5), in one pass
// over the gates: on w itself, an integration gate once w is no longer
// integrating, a conflict_resolution gate once it is no longer
// conflicted, an abort gate once it is terminal; under w, a
// workspace_create gate once w (the parent) is terminal, and an
// envelope_delivery gate once w's inbox is sealed (integrating,
// conflicted, terminal), its envelope then undeliverable. A terminal w
// also withdraws its escalations.
func (t *tx) staleWorkspaceGates(w *workspace.Workspace, from, to workspace.State) error {
	if to.Terminal() {
		if err := t.withdrawEscalations(w); err != nil {
			return err
		}
	}
	if !t.anyGates() {
		return nil
	}
	sealed := to == workspace.Integrating || to == workspace.Conflicted || to.Terminal()
	for _, g := range t.gatesSeen() {
		if !g.Pending() {
			continue
		}
		var stale bool
		switch {
		case g.SubjectID == w.ID && g.Type == highway.Integration:
			stale = from == workspace.Integrating && to != workspace.Integrating
		case g.SubjectID == w.ID && g.Type == highway.ConflictResolution:
			stale = from == workspace.Conflicted && to != workspace.Conflicted
		case g.SubjectID == w.ID && g.Type == highway.WorkspaceAbort:
			stale = to.Terminal()
		case gateWorkspace(g) == w.ID && g.Type == highway.WorkspaceCreate:
			stale = to.Terminal() // the parent ended: it will never be created
		case gateWorkspace(g) == w.ID && g.Type == highway.EnvelopeDelivery && t.isCheckpoint(g.ID):
			// A control-plane checkpoint, not an envelope: it stays pending
			// until its workspace ends (cancelCheckpoints, endCarpSession).
			continue
		case gateWorkspace(g) == w.ID && g.Type == highway.EnvelopeDelivery && sealed:
			if err := t.invalidateGate(g); err != nil {
				return err
			}
			env, err := envstore.Get(t.txn, g.SubjectID)
			if err != nil {
				return err
			}
			if err := delivery.Drop(deliveryTx{t}, &env, "target_terminal", true); err != nil {
				return err
			}
			continue
		}
		if stale {
			if err := t.invalidateGate(g); err != nil {
				return err
			}
		}
	}
	return nil
}
