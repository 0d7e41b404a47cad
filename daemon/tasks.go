package daemon

import (
	"context"

	"github.com/wacpd/wacpd/principal"
	"github.com/wacpd/wacpd/runtime"
	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

// The task endpoints (coordinator and delegates, on their own subjects) and
// the human highway's (user tokens): thin over the engine (runtime/tasks.go,
// runtime/gates.go).

func (r *Daemon) taskCreate(ctx context.Context, c caller, body []byte) (any, error) {
	return r.eng.CreateTasks(ctx, c.ws, body)
}

func (r *Daemon) taskGet(ctx context.Context, c caller, body []byte) (any, error) {
	var req wire.TaskGetRequest
	if err := runtime.Decode(body, &req); err != nil {
		return nil, err
	}
	return r.eng.GetTask(ctx, c.ws, req)
}

func (r *Daemon) taskList(ctx context.Context, c caller, body []byte) (any, error) {
	var req wire.TaskListRequest
	if err := runtime.Decode(body, &req); err != nil {
		return nil, err
	}
	return r.eng.ListTasks(ctx, c.ws, req)
}

func (r *Daemon) taskBind(ctx context.Context, c caller, body []byte) (any, error) {
	var req wire.TaskBindRequest
	if err := runtime.Decode(body, &req); err != nil {
		return nil, err
	}
	return r.eng.BindTask(ctx, c.ws, req)
}

// taskOp serves task.cancel and task.retry.
func (r *Daemon) taskOp(op string) handlerFunc {
	return func(ctx context.Context, c caller, body []byte) (any, error) {
		var req wire.TaskOpRequest
		if err := runtime.Decode(body, &req); err != nil {
			return nil, err
		}
		if op == "cancel" {
			return r.eng.CancelTask(ctx, c.ws, req)
		}
		return r.eng.RetryTask(ctx, c.ws, req)
	}
}

func (r *Daemon) graphGet(ctx context.Context, c caller, body []byte) (any, error) {
	var req wire.GraphRequest
	if err := runtime.Decode(body, &req); err != nil {
		return nil, err
	}
	return r.eng.GetGraph(ctx, c.ws, req.ID)
}

func (r *Daemon) highwayQueue(ctx context.Context, c caller, body []byte) (any, error) {
	var req wire.HighwayQueueRequest
	if err := runtime.Decode(body, &req); err != nil {
		return nil, err
	}
	return wire.HighwayQueue{Gates: r.eng.Gates(ctx, req.All)}, nil
}

func (r *Daemon) highwayGet(ctx context.Context, c caller, body []byte) (any, error) {
	var req wire.HighwayGetRequest
	if err := runtime.Decode(body, &req); err != nil {
		return nil, err
	}
	return r.eng.Gate(ctx, req.ID)
}

func (r *Daemon) highwayResolve(ctx context.Context, c caller, body []byte) (any, error) {
	return r.eng.ResolveGate(ctx, c.p.Name, body)
}

func (r *Daemon) userState(ctx context.Context, c caller, body []byte) (any, error) {
	var req wire.UserStateRequest
	if err := runtime.Decode(body, &req); err != nil {
		return nil, err
	}
	return r.eng.SetUserState(ctx, c.ws, req)
}

func (r *Daemon) userCapabilities(ctx context.Context, c caller, body []byte) (any, error) {
	var req wire.UserCapabilitiesRequest
	if err := runtime.Decode(body, &req); err != nil {
		return nil, err
	}
	return r.eng.SetCapabilities(ctx, c.ws, req)
}

func (r *Daemon) workspaceTransfer(ctx context.Context, c caller, body []byte) (any, error) {
	var req wire.TransferRequest
	if err := runtime.Decode(body, &req); err != nil {
		return nil, err
	}
	if req.ID == "" || req.Owner == "" {
		return nil, runtime.Refuse(wire.CodeInvalidStructure, "id and owner are required")
	}
	return r.eng.TransferOwnership(ctx, c.ws, req)
}

func (r *Daemon) highwayEscalations(ctx context.Context, c caller, body []byte) (any, error) {
	var req wire.EscalationsRequest
	if err := runtime.Decode(body, &req); err != nil {
		return nil, err
	}
	return wire.Escalations{Escalations: nonNil(r.eng.Escalations(ctx, req.All))}, nil
}

func (r *Daemon) highwayRespond(ctx context.Context, c caller, body []byte) (any, error) {
	return r.eng.RespondEscalation(ctx, c.p.Name, body)
}

func (r *Daemon) highwayInject(ctx context.Context, c caller, body []byte) (any, error) {
	return r.eng.Inject(ctx, c.p.Name, body)
}

// highwayCreate creates a workspace for the person of a user token
// (create_workspace): the reply carries the new agent's token, shown once,
// as workspace.create's does.
func (r *Daemon) highwayCreate(ctx context.Context, c caller, body []byte) (any, error) {
	tok, err := newToken()
	if err != nil {
		return nil, err
	}
	w, err := r.eng.UserCreateWorkspace(ctx, c.p.Name, body, func(g runtime.Grants, w *workspace.Workspace) error {
		return g.Put(hashToken(tok), principal.Principal{Kind: principal.KindAgent, Workspace: w.ID})
	})
	if err != nil {
		return nil, err
	}
	r.tok.add(tok, principal.Principal{Kind: principal.KindAgent, Workspace: w.ID})
	return wire.Created{Workspace: w, Token: tok}, nil
}

// highwayWorkspaceOp is a person's abort, suspend or resume.
func (r *Daemon) highwayWorkspaceOp(op string) handlerFunc {
	return func(ctx context.Context, c caller, body []byte) (any, error) {
		var req wire.IDRequest
		if err := runtime.Decode(body, &req); err != nil {
			return nil, err
		}
		switch op {
		case "abort":
			return r.eng.UserAbort(ctx, c.p.Name, req)
		case "suspend":
			return r.eng.UserSuspend(ctx, c.p.Name, req)
		}
		return r.eng.UserResume(ctx, c.p.Name, req)
	}
}

func (r *Daemon) highwayTransfer(ctx context.Context, c caller, body []byte) (any, error) {
	var req wire.TransferRequest
	if err := runtime.Decode(body, &req); err != nil {
		return nil, err
	}
	return r.eng.UserTransfer(ctx, c.p.Name, req)
}

func (r *Daemon) highwayUserState(ctx context.Context, c caller, body []byte) (any, error) {
	var req wire.UserStateRequest
	if err := runtime.Decode(body, &req); err != nil {
		return nil, err
	}
	return r.eng.UserSetState(ctx, c.p.Name, req)
}
