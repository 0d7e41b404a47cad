package daemon

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/wacpd/wacpd/principal"
	"github.com/wacpd/wacpd/runtime"
	"github.com/wacpd/wacpd/taxonomy"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

// The handlers of the system and agent endpoints (service.go registers them).

func (r *Daemon) systemInfo(ctx context.Context, c caller, body []byte) (any, error) {
	tax := r.eng.Taxonomy()
	return wire.Info{
		Version: r.cfg.Version, RootWorkspace: r.eng.Root(),
		Taxonomy:      wire.TaxonomyInfo{ID: tax.ID(), Version: tax.Version(), Checksum: tax.Checksum()},
		HashAlgorithm: trail.Algorithm, ProtocolVersion: taxonomy.ProtocolVersion,
		PublicKey: r.publicKey, Origin: r.eng.Origin(),
	}, nil
}

func (r *Daemon) checkpoint(ctx context.Context, c caller, body []byte) (any, error) {
	return r.eng.CreateCheckpoint(ctx, c.ws, body)
}

func (r *Daemon) signal(ctx context.Context, c caller, body []byte) (any, error) {
	return r.eng.EmitSignal(ctx, c.ws, body)
}

func (r *Daemon) envelope(ctx context.Context, c caller, body []byte) (any, error) {
	return r.eng.SendEnvelope(ctx, c.ws, body)
}

func (r *Daemon) inboxNext(ctx context.Context, c caller, body []byte) (any, error) {
	var req wire.InboxNextRequest
	if err := runtime.Decode(body, &req); err != nil {
		return nil, err
	}
	wait, err := parseWait(req.Wait)
	if err != nil {
		return nil, err
	}
	if req.AckPrevious == nil || *req.AckPrevious {
		if _, err := r.eng.AckLeased(ctx, c.ws); err != nil {
			return nil, err
		}
	}
	env, err := r.eng.NextEnvelope(ctx, c.ws, 0)
	if err == nil && env == nil && wait > 0 {
		// A wait does no work: it gives its request slot back while it
		// waits (admission.go), so long polls cannot starve other callers.
		if c.t != nil {
			if err := c.t.park(); err != nil {
				return nil, err
			}
		}
		env, err = r.eng.NextEnvelope(ctx, c.ws, wait)
	}
	if err != nil || env == nil {
		return struct{}{}, err
	}
	return env, nil
}

// parseWait reads a long poll's wait: "" is none, else a Go duration
// between 0 and MaxWait.
func parseWait(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 || d > MaxWait {
		return 0, runtime.Refuse(wire.CodeInvalidStructure, "wait %q is not a duration between 0 and %s", s, MaxWait)
	}
	return d, nil
}

// inboxAck acknowledges one envelope of the caller's inbox (extension,
// lease.go).
func (r *Daemon) inboxAck(ctx context.Context, c caller, body []byte) (any, error) {
	var req wire.GetRequest
	if err := runtime.Decode(body, &req); err != nil {
		return nil, err
	}
	return r.eng.AckEnvelope(ctx, c.ws, req.ID)
}

func (r *Daemon) checkpointGet(ctx context.Context, c caller, body []byte) (any, error) {
	var req wire.GetRequest
	if err := runtime.Decode(body, &req); err != nil {
		return nil, err
	}
	return r.eng.GetCheckpoint(ctx, c.ws, req.ID)
}

func (r *Daemon) checkpointList(ctx context.Context, c caller, body []byte) (any, error) {
	var req wire.CheckpointListRequest
	if err := runtime.Decode(body, &req); err != nil {
		return nil, err
	}
	if req.Workspace == "" {
		req.Workspace = c.ws
	}
	limit := req.Limit
	if limit <= 0 || limit > 1000 {
		limit = 1000
	}
	// One more than the page, to tell whether another follows.
	list, err := r.eng.ListCheckpoints(ctx, c.ws, req.Workspace, req.After, limit+1)
	if err != nil {
		return nil, err
	}
	list, more, err := pageOf(list, limit, r.replyBudget())
	if err != nil {
		return nil, err
	}
	var next *string
	if more {
		next = &list[len(list)-1].ID
	}
	return wire.CheckpointPage{Checkpoints: nonNil(list), Next: next}, nil
}

func (r *Daemon) checkpointHead(ctx context.Context, c caller, body []byte) (any, error) {
	var req wire.HeadRequest
	if err := runtime.Decode(body, &req); err != nil {
		return nil, err
	}
	if req.Workspace == "" {
		req.Workspace = c.ws
	}
	return r.eng.Head(ctx, c.ws, req.Workspace, req.Final)
}

func (r *Daemon) workspaceCreate(ctx context.Context, c caller, body []byte) (any, error) {
	tok, err := newToken()
	if err != nil {
		return nil, err
	}
	var p principal.Principal
	w, err := r.eng.CreateWorkspaceGranting(ctx, c.ws, body, func(g runtime.Grants, w *workspace.Workspace) error {
		p = principal.Principal{Kind: principal.KindAgent, Workspace: w.ID}
		return g.Put(hashToken(tok), p)
	})
	if d := runtime.Details(err); runtime.Code(err) == wire.CodeGatePending && d != nil {
		// Held at a workspace_create gate: the workspace exists once a
		// person approves it, and its agent's token is the caller's now
		// (it connects once the workspace exists).
		r.tok.add(tok, p)
		d["token"] = tok
		return nil, err
	}
	if err != nil {
		return nil, err
	}
	r.tok.add(tok, p)
	return wire.Created{Workspace: w, Token: tok}, nil
}

func (r *Daemon) workspaceGet(ctx context.Context, c caller, body []byte) (any, error) {
	var req wire.IDRequest
	if err := runtime.Decode(body, &req); err != nil {
		return nil, err
	}
	if req.ID == "" {
		req.ID = c.ws
	}
	return r.eng.GetWorkspace(ctx, c.ws, req.ID)
}

func (r *Daemon) workspaceList(ctx context.Context, c caller, body []byte) (any, error) {
	var req wire.ListRequest
	if err := runtime.Decode(body, &req); err != nil {
		return nil, err
	}
	if req.Limit <= 0 || req.Limit > 1000 {
		req.Limit = 1000
	}
	list, err := r.eng.ListWorkspaces(ctx, c.ws, req.Parent, req.State)
	if err != nil {
		return nil, err
	}
	if req.After != "" { // ids sort in creation order, as the list does
		i, _ := slices.BinarySearchFunc(list, req.After, func(w *workspace.Workspace, id string) int { return strings.Compare(w.ID, id) })
		if i < len(list) && list[i].ID == req.After {
			i++
		}
		list = list[i:]
	}
	list, more, err := pageOf(list, req.Limit, r.replyBudget())
	if err != nil {
		return nil, err
	}
	var next *string
	if more {
		next = &list[len(list)-1].ID
	}
	page := wire.WorkspacePage{Workspaces: nonNil(list), Next: next}
	if r.parts.gathers(c, req.Parent) {
		return r.gatherList(ctx, c, body, page, req.Limit)
	}
	return page, nil
}

func (r *Daemon) workspaceOp(op string) handlerFunc {
	return func(ctx context.Context, c caller, body []byte) (any, error) {
		var req wire.IDRequest
		if err := runtime.Decode(body, &req); err != nil {
			return nil, err
		}
		if req.ID == "" {
			return nil, runtime.Refuse(wire.CodeInvalidStructure, "id is required")
		}
		switch op {
		case "abort":
			return r.eng.Abort(ctx, c.ws, req.ID, req.Reason)
		case "suspend":
			return r.eng.Suspend(ctx, c.ws, req.ID, req.Reason)
		}
		return r.eng.Resume(ctx, c.ws, req.ID)
	}
}

func (r *Daemon) migrate(ctx context.Context, c caller, body []byte) (any, error) {
	var req wire.MigrateRequest
	if err := runtime.Decode(body, &req); err != nil {
		return nil, err
	}
	return r.eng.Migrate(ctx, c.ws, req.ID, req.NewAgent, req.Reason)
}

// migrateComplete ends a migration. On success it binds the new agent: the
// workspace gets a new token, in the same commit its old tokens are
// deleted, and connections made with them are closed, so the old agent is
// unbound (WACP Workspace §13). The reply carries the new token for the new
// agent; after a failed migration it is null.
func (r *Daemon) migrateComplete(ctx context.Context, c caller, body []byte) (any, error) {
	var req wire.MigrateCompleteRequest
	if err := runtime.Decode(body, &req); err != nil {
		return nil, err
	}
	if req.Error != "" {
		w, err := r.eng.CompleteMigration(ctx, c.ws, req.ID, req.NewAgent, req.Error)
		if err != nil {
			return nil, err
		}
		return wire.Migrated{Workspace: w}, nil
	}
	tok, err := newToken()
	if err != nil {
		return nil, err
	}
	var p principal.Principal
	var old [][32]byte
	w, err := r.eng.CompleteMigrationGranting(ctx, c.ws, req.ID, req.NewAgent, "", func(g runtime.Grants, w *workspace.Workspace) error {
		p = principal.Principal{Kind: principal.KindAgent, Workspace: w.ID}
		old = r.tok.hashesOf(p)
		if err := g.Delete(old...); err != nil {
			return err
		}
		return g.Put(hashToken(tok), p)
	})
	if err != nil {
		return nil, err
	}
	r.tok.remove(old)
	r.tok.add(tok, p)
	r.disconnect(p)
	return wire.Migrated{Workspace: w, Token: &tok}, nil
}

func (r *Daemon) conflictResolve(ctx context.Context, c caller, body []byte) (any, error) {
	return r.eng.ResolveConflict(ctx, c.ws, body)
}

func (r *Daemon) integrate(ctx context.Context, c caller, body []byte) (any, error) {
	return r.eng.Integrate(ctx, c.ws, body)
}

func page(entries []trail.Entry, next string) wire.TrailPage {
	p := wire.TrailPage{Entries: nonNil(entries)}
	if next != "" {
		p.Next = &next
	}
	return p
}

func (r *Daemon) agentTrail(ctx context.Context, c caller, body []byte) (any, error) {
	var req wire.AgentTrailRequest
	if err := runtime.Decode(body, &req); err != nil {
		return nil, err
	}
	if err := checkEventType(req.EventType); err != nil {
		return nil, err
	}
	entries, next, err := r.eng.ReadTrail(ctx, c.ws, trail.Query{
		After: req.After, Limit: req.Limit, EventType: req.EventType, Workspace: req.Workspace,
		MaxBytes: r.replyBudget(),
	})
	if err != nil {
		return nil, err
	}
	return page(entries, next), nil
}

// tokenRevoke deletes every token of a user or auditor principal, records
// user_deactivated in the same commit, and closes the connections made
// with those tokens. A principal without tokens is answered revoked 0.
func (r *Daemon) tokenRevoke(ctx context.Context, c caller, body []byte) (any, error) {
	var req wire.TokenRevokeRequest
	if err := runtime.Decode(body, &req); err != nil {
		return nil, err
	}
	if req.Kind != principal.KindUser && req.Kind != principal.KindAuditor && req.Kind != principal.KindTool {
		return nil, runtime.Refuse(wire.CodeInvalidStructure, "kind must be user, auditor or tool")
	}
	if req.Name == "" {
		return nil, runtime.Refuse(wire.CodeInvalidStructure, "name is required")
	}
	if req.Reason == "" {
		req.Reason = "coordinator_request"
	}
	p := principal.Principal{Kind: req.Kind, Name: req.Name}
	old := r.tok.hashesOf(p)
	del := func(g runtime.Grants) error { return g.Delete(old...) }
	var err error
	if req.Kind == principal.KindTool {
		err = r.eng.RevokeTool(ctx, c.ws, req.Name, len(old), del)
	} else {
		err = r.eng.RevokeUser(ctx, c.ws, p, req.Reason, len(old), del)
	}
	if err != nil {
		return nil, err
	}
	if len(old) > 0 {
		r.tok.remove(old)
		r.disconnect(p)
	}
	return wire.TokenRevoked{Principal: p, Revoked: len(old)}, nil
}

func (r *Daemon) tokenCreate(ctx context.Context, c caller, body []byte) (any, error) {
	var req wire.TokenCreateRequest
	if err := runtime.Decode(body, &req); err != nil {
		return nil, err
	}
	if req.Kind != principal.KindUser && req.Kind != principal.KindAuditor && req.Kind != principal.KindTool {
		return nil, runtime.Refuse(wire.CodeInvalidStructure, "kind must be user, auditor or tool")
	}
	if req.Name == "" || len(req.Name) > 128 || strings.ContainsAny(req.Name, " .*>\t\r\n") {
		return nil, runtime.Refuse(wire.CodeInvalidStructure, "name must be 1-128 characters without spaces, '.', '*' or '>'")
	}
	tok, err := newToken()
	if err != nil {
		return nil, err
	}
	p := principal.Principal{Kind: req.Kind, Name: req.Name}
	if req.Kind == principal.KindTool {
		if len(req.Capabilities) > 0 {
			return nil, runtime.Refuse(wire.CodeInvalidStructure, "a tool token has no capabilities")
		}
		if err := r.eng.GrantTool(ctx, c.ws, req.Name, func(g runtime.Grants) error { return g.Put(hashToken(tok), p) }); err != nil {
			return nil, err
		}
		r.tok.add(tok, p)
		return wire.TokenCreated{Token: tok, Principal: p}, nil
	}
	err = r.eng.CreateUser(ctx, c.ws, p, req.Capabilities, func(g runtime.Grants) error { return g.Put(hashToken(tok), p) })
	if err != nil {
		return nil, err
	}
	r.tok.add(tok, p)
	return wire.TokenCreated{Token: tok, Principal: p}, nil
}
