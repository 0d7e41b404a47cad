package user

import (
	"fmt"
	"slices"

	"github.com/wacpd/wacpd/trail"
)

// Capability is one of the spec's seventeen capabilities (User spec §6.2).
// Persisted as its string value.
type Capability string

// The seventeen capabilities.
const (
	CreateWorkspace       Capability = "create_workspace"
	CreateWorkspaceAny    Capability = "create_workspace_any"
	SuspendOwn            Capability = "suspend_own"
	SuspendAny            Capability = "suspend_any"
	AbortOwn              Capability = "abort_own"
	AbortAny              Capability = "abort_any"
	TransferOwnership     Capability = "transfer_ownership"
	InjectDirective       Capability = "inject_directive"
	InjectDirectiveAny    Capability = "inject_directive_any"
	ApproveIntegration    Capability = "approve_integration"
	ApproveIntegrationAny Capability = "approve_integration_any"
	ModifyBudget          Capability = "modify_budget"
	ModifyBudgetAny       Capability = "modify_budget_any"
	ViewTrailOwn          Capability = "view_trail_own"
	ViewTrailAny          Capability = "view_trail_any"
	GrantDelegation       Capability = "grant_delegation"
	DeactivateUser        Capability = "deactivate_user"
)

// Capabilities returns the seventeen capabilities in spec order.
func Capabilities() []Capability {
	return []Capability{CreateWorkspace, CreateWorkspaceAny, SuspendOwn, SuspendAny, AbortOwn, AbortAny,
		TransferOwnership, InjectDirective, InjectDirectiveAny, ApproveIntegration, ApproveIntegrationAny,
		ModifyBudget, ModifyBudgetAny, ViewTrailOwn, ViewTrailAny, GrantDelegation, DeactivateUser}
}

// Valid reports whether c is one of the seventeen.
func (c Capability) Valid() bool { return slices.Contains(Capabilities(), c) }

// Has reports whether u holds c: granted, or view_trail_own, which every
// user holds (it counts only while the user is active: Authorize).
func (u User) Has(c Capability) bool {
	return c == ViewTrailOwn || slices.Contains(u.Capabilities, c)
}

// Grant gives u capability c, by actor by, and returns the record with
// capability_granted. Granting one u holds changes nothing and writes no
// event; view_trail_own is implicit (no event either).
func Grant(u User, c Capability, by, ts string) (User, []Event, error) {
	if !c.Valid() {
		return u, nil, fmt.Errorf("%w: %q", ErrUnknownCapability, c)
	}
	if u.Has(c) {
		return u, nil, nil
	}
	caps := append(slices.Clone(u.Capabilities), c)
	slices.Sort(caps)
	u.Capabilities, u.UpdatedAt = caps, ts
	return u, []Event{{trail.EventCapabilityGranted, map[string]any{"user_id": u.ID, "capability": string(c), "granted_by": by, "timestamp": ts}}}, nil
}

// Revoke takes capability c from u, by actor by, and returns the record
// with capability_revoked. Revoking one u does not hold changes nothing;
// view_trail_own cannot be revoked (ErrUnknownCapability says so).
func Revoke(u User, c Capability, by, reason, ts string) (User, []Event, error) {
	switch {
	case !c.Valid():
		return u, nil, fmt.Errorf("%w: %q", ErrUnknownCapability, c)
	case c == ViewTrailOwn:
		return u, nil, fmt.Errorf("%w: view_trail_own is every active user's and cannot be revoked", ErrUnknownCapability)
	case !slices.Contains(u.Capabilities, c):
		return u, nil, nil
	}
	u.Capabilities = slices.DeleteFunc(slices.Clone(u.Capabilities), func(x Capability) bool { return x == c })
	u.UpdatedAt = ts
	var r any
	if reason != "" {
		r = reason
	}
	return u, []Event{{trail.EventCapabilityRevoked, map[string]any{"user_id": u.ID, "capability": string(c), "revoked_by": by, "reason": r, "timestamp": ts}}}, nil
}

// Need is what an action requires: its _own capability (which covers a
// target the user owns) and its _any one. Either may be empty: an action
// with only an _any capability (transfer_ownership, deactivate_user) or
// only an _own one (grant_delegation).
type Need struct {
	Own, Any Capability
}

// Needs returns what each action a user can take requires (User spec
// §6.2), by action name: the wire operations and the highway's gate
// types (the capability to resolve a gate of that type).
func Needs() map[string]Need {
	return map[string]Need{
		"workspace.create":         {CreateWorkspace, CreateWorkspaceAny},
		"workspace.suspend":        {SuspendOwn, SuspendAny},
		"workspace.resume":         {SuspendOwn, SuspendAny},
		"workspace.abort":          {AbortOwn, AbortAny},
		"workspace.transfer":       {"", TransferOwnership},
		"workspace.budget":         {ModifyBudget, ModifyBudgetAny},
		"workspace.delegate":       {GrantDelegation, ""},
		"highway.inject":           {InjectDirective, InjectDirectiveAny},
		"trail.read":               {ViewTrailOwn, ViewTrailAny},
		"user.deactivate":          {"", DeactivateUser},
		"user.reactivate":          {"", DeactivateUser},
		"gate.task_approval":       {CreateWorkspace, CreateWorkspaceAny},
		"gate.workspace_create":    {CreateWorkspace, CreateWorkspaceAny},
		"gate.envelope_delivery":   {InjectDirective, InjectDirectiveAny},
		"gate.integration":         {ApproveIntegration, ApproveIntegrationAny},
		"gate.conflict_resolution": {ApproveIntegration, ApproveIntegrationAny},
		"gate.workspace_abort":     {AbortOwn, AbortAny},
		"escalation.respond":       {InjectDirective, InjectDirectiveAny}, // an envelope or a delegation
		// A session's approvals (issue 16) are governed as its envelope
		// deliveries are: who may answer its checkpoints may set its
		// checkpoint mode, revoke its permits and restore its trust.
		"approval.mode":            {InjectDirective, InjectDirectiveAny},
		"permit.revoke":            {InjectDirective, InjectDirectiveAny},
		"trust.restore":            {InjectDirective, InjectDirectiveAny},
		"escalation.respond.abort": {AbortOwn, AbortAny},
	}
}

// Denial reasons of capability_denied (§6.4).
const (
	MissingCapability = "missing_capability"
	WrongScope        = "wrong_scope"
	NotActive         = "user_not_active"
)

// Target is what an action is taken on: a workspace (or a task graph's
// coordinator) and its owner. A zero Target is no target: only an _any
// capability covers it.
type Target struct {
	ID    string
	Owner string
}

// Decision is Authorize's answer: allowed, or the capability required and
// why it is denied, with the capability_denied event to write.
type Decision struct {
	Allowed    bool
	Capability Capability // the capability that allowed it, or the one required
	Reason     string     // MissingCapability, WrongScope or NotActive when denied
	Event      Event      // capability_denied, when denied
}

// Authorize decides whether u may take action on target (deny by default,
// in the order of the package doc). An action not in Needs is denied as
// missing_capability with no capability named.
func Authorize(u User, action string, target Target, ts string) Decision {
	need, known := Needs()[action]
	required := need.Own
	if required == "" {
		required = need.Any
	}
	deny := func(reason string) Decision {
		var tgt any
		if target.ID != "" {
			tgt = target.ID
		}
		return Decision{Capability: required, Reason: reason, Event: Event{trail.EventCapabilityDenied, map[string]any{
			"user_id": u.ID, "capability": string(required), "action": action, "target": tgt, "reason": reason, "timestamp": ts}}}
	}
	switch {
	case !known:
		return deny(MissingCapability)
	case u.State != Active:
		return deny(NotActive)
	case need.Any != "" && u.Has(need.Any):
		return Decision{Allowed: true, Capability: need.Any}
	case need.Own != "" && u.Has(need.Own):
		if target.ID != "" && target.Owner == u.ID {
			return Decision{Allowed: true, Capability: need.Own}
		}
		return deny(WrongScope)
	}
	return deny(MissingCapability)
}
