// Package principal names who a token authenticates (wire-v1 §2): the
// coordinator, a workspace's agent, a human user or an auditor. The daemon
// authenticates and authorizes by it; package tokenstore keeps the token
// records (hashed) in the engine's database.
package principal

// Kind is the kind of principal a token stands for.
type Kind string

// Principal kinds.
const (
	KindCoordinator Kind = "coordinator" // the admin token: the root workspace's agent
	KindAgent       Kind = "agent"       // one workspace's agent
	KindUser        Kind = "user"        // a human user
	KindAuditor     Kind = "auditor"     // reads and verifies the trail
	KindTool        Kind = "tool"        // a tool service: serves wacp.v1.tool.<action_id> (issue 15)
)

// Principal is who a token authenticates.
type Principal struct {
	Kind      Kind   `json:"kind"`
	Workspace string `json:"workspace,omitempty"` // coordinator and agent
	Name      string `json:"name,omitempty"`      // user, auditor and tool
}

// String names the principal in logs and as the NATS user name; it never
// contains the token.
func (p Principal) String() string {
	switch {
	case p.Workspace != "":
		return string(p.Kind) + ":" + p.Workspace
	case p.Name != "":
		return string(p.Kind) + ":" + p.Name
	}
	return string(p.Kind)
}
