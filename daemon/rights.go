package daemon

import (
	"context"

	"github.com/wacpd/wacpd/envelope"
	"github.com/wacpd/wacpd/runtime"
	"github.com/wacpd/wacpd/wire"
)

// rightsList answers a topology query (Channels CH-C7): the port rights a
// workspace the caller sees holds and those held to it. A workspace the
// caller may not see answers not_found, as one that does not exist.
func (r *Daemon) rightsList(ctx context.Context, c caller, body []byte) (any, error) {
	var req wire.RightsRequest
	if err := runtime.Decode(body, &req); err != nil {
		return nil, err
	}
	ws := req.Workspace
	if ws == "" {
		ws = c.ws
	}
	out, in, err := r.eng.Rights(ctx, c.ws, ws)
	if err != nil {
		return nil, err
	}
	return wire.Rights{Workspace: ws, Outbound: portRights(out), Inbound: portRights(in)}, nil
}

// rightsRevoke revokes a port right for the coordinator (Channels §3):
// port_right_revoked, with the request's reason, in the holder's trail.
func (r *Daemon) rightsRevoke(ctx context.Context, c caller, body []byte) (any, error) {
	var req wire.RevokeRightRequest
	if err := runtime.Decode(body, &req); err != nil {
		return nil, err
	}
	if req.RightID == "" {
		return nil, runtime.Refuse(wire.CodeInvalidStructure, "right_id is required")
	}
	got, err := r.eng.RevokeRight(ctx, c.ws, req.RightID, req.Reason)
	if err != nil {
		return nil, err
	}
	return portRight(got), nil
}

func portRights(rs []envelope.Right) []wire.PortRight {
	out := make([]wire.PortRight, 0, len(rs))
	for _, r := range rs {
		out = append(out, portRight(r))
	}
	return out
}

func portRight(r envelope.Right) wire.PortRight {
	return wire.PortRight{RightID: r.ID, RightType: r.Type, Holder: r.Holder, Target: r.Target, InTransit: r.Transit}
}
