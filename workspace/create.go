package workspace

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/wacpd/wacpd/internal/strictjson"
	"github.com/wacpd/wacpd/taxonomy"
)

// CreateRequest is the body of a workspace.create call (wire contract §3.2).
type CreateRequest struct {
	Role       string          `json:"role"`
	Parent     string          `json:"parent,omitempty"`
	Delegate   bool            `json:"delegate,omitempty"`
	Owner      string          `json:"owner,omitempty"`
	Timeout    string          `json:"timeout,omitempty"`
	Budget     *Budget         `json:"budget,omitempty"`
	Priority   string          `json:"priority,omitempty"`
	Group      string          `json:"group,omitempty"`
	Context    json.RawMessage `json:"context,omitempty"`
	Visibility []string        `json:"visibility,omitempty"`
	Authority  []string        `json:"authority,omitempty"`
	TaskRef    string          `json:"task_ref,omitempty"`
	Liveness   string          `json:"liveness_interval,omitempty"`
	// Injection names the envelope a person injected (origin human) that
	// caused this workspace: the new workspace's originator is that
	// person, not its parent's (User spec §5.2 rule 4). The runtime checks
	// it and sets Originator.
	Injection string `json:"injection,omitempty"`
	// Originator, when set, is the new workspace's originator instead of
	// its parent's. Never decoded from a request: the runtime sets it from
	// Injection, or to the person who creates a workspace on the highway.
	Originator string `json:"-"`
}

// DecodeCreateRequest decodes and checks the shape of a create request.
// Invalid UTF-8, nesting deeper than taxonomy.MaxNesting (the context is
// free-form JSON), unknown fields, wrong types and malformed values are
// errors wrapping ErrInvalidRequest. Role existence and permissions are
// checked by Plan.
func DecodeCreateRequest(data []byte) (CreateRequest, error) {
	if !utf8.Valid(data) {
		return CreateRequest{}, fmt.Errorf("%w: request is not valid UTF-8", ErrInvalidRequest)
	}
	if taxonomy.Nesting(data) > taxonomy.MaxNesting {
		return CreateRequest{}, fmt.Errorf("%w: request nests objects and arrays deeper than %d levels", ErrInvalidRequest, taxonomy.MaxNesting)
	}
	var r CreateRequest
	if err := strictjson.Decode(data, &r); err != nil {
		return CreateRequest{}, fmt.Errorf("%w: %v", ErrInvalidRequest, err)
	}
	return r, r.check()
}

func (r CreateRequest) check() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidRequest, fmt.Sprintf(format, args...))
	}
	if r.Role == "" {
		return bad("role is required")
	}
	for _, d := range []struct{ name, v string }{{"timeout", r.Timeout}, {"liveness_interval", r.Liveness}} {
		if d.v == "" {
			continue
		}
		if v, err := time.ParseDuration(d.v); err != nil || v <= 0 {
			return bad("%s %q is not a positive duration", d.name, d.v)
		}
	}
	switch r.Priority {
	case "", PriorityCritical, PriorityInteractive, PriorityNormal, PriorityBackground:
	default:
		return bad("priority %q is not one of critical, interactive, normal, background", r.Priority)
	}
	if b := r.Budget; b != nil {
		if err := b.check(); err != nil {
			return bad("budget: %v", err)
		}
	}
	if err := checkGroup(r.Group); err != nil { // groups.go
		return bad("%v", err)
	}
	if len(r.Context) > 0 && !json.Valid(r.Context) {
		return bad("context is not JSON")
	}
	for _, v := range r.Visibility {
		if v == "" || v == All {
			return bad("visibility entries must be workspace ids")
		}
	}
	return nil
}

func (b *Budget) check() error {
	if c := b.ComputeBudget; c != nil {
		if c.TokenLimit < 0 {
			return fmt.Errorf("token_limit is negative")
		}
		if c.ComputeTimeout != "" {
			if d, err := time.ParseDuration(c.ComputeTimeout); err != nil || d <= 0 {
				return fmt.Errorf("compute_timeout %q is not a positive duration", c.ComputeTimeout)
			}
		}
	}
	if m := b.MemoryBudget; m != nil && m.ContextLimit < 0 {
		return fmt.Errorf("context_limit is negative")
	}
	if s := b.StorageBudget; s != nil && (s.CheckpointLimit < 0 || s.TrailLimit < 0) {
		return fmt.Errorf("storage limits are negative")
	}
	if n := b.NetworkBudget; n != nil && n.BandwidthLimit < 0 {
		return fmt.Errorf("bandwidth_limit is negative")
	}
	if b.CostLimit != nil && *b.CostLimit < 0 {
		return fmt.Errorf("cost_limit is negative")
	}
	return nil
}

// Plan builds the record of a new workspace from a create request made by
// creator, under parent. It checks the rules that need no I/O: the parent is
// not terminal, the child's visibility and authority are within the
// parent's (WACP Tree containment), and owner and originator inheritance.
// The caller checks who may create and whether the role exists.
func Plan(req CreateRequest, parent *Workspace, id, now string) (*Workspace, error) {
	if parent.State.Terminal() {
		return nil, fmt.Errorf("%w: parent %s is %s", ErrParentTerminal, parent.ID, parent.State)
	}
	for _, v := range req.Visibility {
		if !parent.Sees(v) {
			return nil, fmt.Errorf("%w: visibility %s is outside the parent's", ErrContainment, v)
		}
	}
	for _, a := range req.Authority {
		if !slices.Contains(parent.Authority, All) && !slices.Contains(parent.Authority, a) {
			return nil, fmt.Errorf("%w: authority %q is outside the parent's", ErrContainment, a)
		}
	}
	owner := req.Owner
	if owner == "" {
		owner = parent.Owner
	}
	if owner == OriginatorSystem {
		return nil, fmt.Errorf("%w: only the root may be owned by %q", ErrInvalidRequest, OriginatorSystem)
	}
	priority := req.Priority
	if priority == "" {
		priority = PriorityNormal
	}
	pid := parent.ID
	w := &Workspace{
		ID: id, Role: req.Role, Parent: &pid, State: Idle, Owner: owner,
		Originator: cmp.Or(req.Originator, parent.Originator), Delegate: req.Delegate, TaskRef: req.TaskRef,
		Context: req.Context, Visibility: append([]string{id}, req.Visibility...),
		Authority: slices.Clone(req.Authority), Timeout: req.Timeout, Budget: req.Budget,
		Priority: priority, Group: req.Group, LivenessInterval: req.Liveness,
		CreatedAt: now, UpdatedAt: now, Agent: id + "/agent/1",
	}
	if w.Authority == nil {
		w.Authority = []string{}
	}
	return w, nil
}

// Root returns the record of the root workspace: the coordinator, with no
// parent, full visibility and authority, no budget and no timeout.
func Root(id, owner, now string) *Workspace {
	return &Workspace{
		ID: id, Role: "coordinator", State: Idle, Owner: owner, Originator: OriginatorSystem,
		Visibility: []string{All}, Authority: []string{All}, Priority: PriorityNormal,
		CreatedAt: now, UpdatedAt: now, Agent: id + "/agent/1",
	}
}
