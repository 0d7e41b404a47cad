package runtime

import (
	"fmt"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/wacpd/wacpd/taxonomy"
)

// signalStream is the JetStream stream of delivered signals (wire-v1 §5).
const signalStream = "WACP_SIGNALS"

// authenticator is the embedded server's custom client authentication: it
// maps the connection's token to a principal and gives the connection that
// principal's permissions, so the server itself enforces who may publish and
// subscribe where (wire-v1 §2).
type authenticator struct {
	tokens *tokens
	failed func(remote string) // called on a refused connection; never gets the token
}

var _ server.Authentication = (*authenticator)(nil)

// Check implements server.Authentication.
func (a *authenticator) Check(c server.ClientAuthentication) bool {
	opts := c.GetOpts()
	p, ok := a.tokens.lookup(opts.Token)
	if !ok {
		remote := ""
		if addr := c.RemoteAddress(); addr != nil {
			remote = addr.String()
		}
		if a.failed != nil {
			a.failed(remote)
		}
		return false
	}
	c.RegisterUser(&server.User{Username: p.String(), Permissions: permissions(p, taxonomy.InboxPrefix(opts.Token))})
	return true
}

// permissions returns what principal p may publish and subscribe to. inbox
// is the token's own reply prefix (taxonomy.InboxPrefix): a principal
// receives replies only there, never under the shared _INBOX.
func permissions(p Principal, inbox string) *server.Permissions {
	allow := func(pub, sub []string) *server.Permissions {
		return &server.Permissions{
			Publish:   &server.SubjectPermission{Allow: pub},
			Subscribe: &server.SubjectPermission{Allow: sub},
		}
	}
	common := []string{"wacp.v1.system.>", "$SRV.>"}
	switch p.Kind {
	case kindDaemon:
		return nil // no restrictions
	case KindCoordinator:
		return allow(
			append(common, "wacp.v1.agent."+p.Workspace+".>", "wacp.v1.audit.>", "$JS.API.>", "$JS.ACK.>", "$JS.FC.>"),
			[]string{inbox + ".>", "wacp.v1.sig.>", "wacp.v1.trail.>"},
		)
	case KindAgent:
		ws := p.Workspace
		return allow(
			append(common, "wacp.v1.agent."+ws+".>",
				// One durable consumer per workspace, named after it; only
				// the create form whose subject pins the filter to the
				// workspace's own signals. Not stream info: with a subjects
				// filter it lists every signal subject, that is every
				// workspace id and parent/child pair.
				"$JS.API.INFO",
				fmt.Sprintf("$JS.API.CONSUMER.CREATE.%s.%s.wacp.v1.sig.%s.>", signalStream, ws, ws),
				fmt.Sprintf("$JS.API.CONSUMER.INFO.%s.%s", signalStream, ws),
				fmt.Sprintf("$JS.API.CONSUMER.MSG.NEXT.%s.%s", signalStream, ws),
				fmt.Sprintf("$JS.ACK.%s.%s.>", signalStream, ws),
			),
			[]string{inbox + ".>", "wacp.v1.sig." + ws + ".>", "wacp.v1.trail." + ws + ".>"},
		)
	case KindAuditor, KindUser:
		return allow(append(common, "wacp.v1.audit.>"), []string{inbox + ".>", "wacp.v1.trail.>"})
	}
	return allow(nil, nil)
}

// disconnect closes every connection of the embedded server authenticated
// as p: after p's token was replaced, those were made with the old one.
// With an external server (Config.NATSURL) the daemon cannot see its
// connections; a replaced token is refused at each request there (the
// Wacp-Token check), but subscriptions made with it stay.
func (r *Runtime) disconnect(p Principal) {
	if r.ns == nil {
		return
	}
	connz, err := r.ns.Connz(&server.ConnzOptions{User: p.String(), Limit: 1 << 16})
	if err != nil {
		r.cfg.Logger.Warn("list connections to close", "principal", p.String(), "err", err)
		return
	}
	for _, c := range connz.Conns {
		if err := r.ns.DisconnectClientByID(c.Cid); err != nil {
			r.cfg.Logger.Warn("close connection", "principal", p.String(), "cid", c.Cid, "err", err)
		}
	}
}
