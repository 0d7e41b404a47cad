package workspace_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/wacpd/wacpd/internal/fixture"
	"github.com/wacpd/wacpd/workspace"
)

// nested returns n nested arrays.
func nested(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

func TestDecodeCreateRequest(t *testing.T) {
	cost := 1.5
	full := workspace.CreateRequest{
		Role: "worker", Parent: "01PARENT", Delegate: true, Owner: "bob", Timeout: "30m",
		Budget: &workspace.Budget{
			ComputeBudget: &workspace.ComputeBudget{TokenLimit: 1000, ComputeTimeout: "10m"},
			MemoryBudget:  &workspace.MemoryBudget{ContextLimit: 2000},
			StorageBudget: &workspace.StorageBudget{CheckpointLimit: 3000, TrailLimit: 4000},
			NetworkBudget: &workspace.NetworkBudget{BandwidthLimit: 5000},
			CostLimit:     &cost,
		},
		Priority: "critical", Group: "batch-3", Context: json.RawMessage(`{"k":[1,2]}`),
		Visibility: []string{"01SIBLING"}, Authority: []string{"files/a"}, TaskRef: "task-7", Liveness: "5m",
	}
	tests := []struct {
		name    string
		in      string
		want    workspace.CreateRequest
		wantErr error
	}{
		{name: "valid full request", in: fixture.FullCreateRequest, want: full},
		{name: "valid minimal request", in: `{"role":"worker"}`, want: workspace.CreateRequest{Role: "worker"}},
		{name: "trailing whitespace", in: "{\"role\":\"worker\"}\n\t ", want: workspace.CreateRequest{Role: "worker"}},
		{name: "zero budget", in: `{"role":"worker","budget":{"compute_budget":{"token_limit":0}}}`,
			want: workspace.CreateRequest{Role: "worker", Budget: &workspace.Budget{ComputeBudget: &workspace.ComputeBudget{}}}},
		{name: "each priority", in: `{"role":"worker","priority":"background"}`, want: workspace.CreateRequest{Role: "worker", Priority: "background"}},

		{name: "unknown field", in: `{"role":"worker","colour":"red"}`, wantErr: workspace.ErrInvalidRequest},
		{name: "unknown budget field", in: `{"role":"worker","budget":{"gpu_budget":{}}}`, wantErr: workspace.ErrInvalidRequest},
		{name: "missing role", in: `{"owner":"bob"}`, wantErr: workspace.ErrInvalidRequest},
		{name: "wrong type", in: `{"role":7}`, wantErr: workspace.ErrInvalidRequest},
		{name: "wrong delegate type", in: `{"role":"worker","delegate":"yes"}`, wantErr: workspace.ErrInvalidRequest},
		{name: "bad timeout", in: `{"role":"worker","timeout":"soon"}`, wantErr: workspace.ErrInvalidRequest},
		{name: "timeout without unit", in: `{"role":"worker","timeout":"30"}`, wantErr: workspace.ErrInvalidRequest},
		{name: "zero timeout", in: `{"role":"worker","timeout":"0s"}`, wantErr: workspace.ErrInvalidRequest},
		{name: "negative timeout", in: `{"role":"worker","timeout":"-1m"}`, wantErr: workspace.ErrInvalidRequest},
		{name: "bad liveness interval", in: `{"role":"worker","liveness_interval":"often"}`, wantErr: workspace.ErrInvalidRequest},
		{name: "bad compute timeout", in: `{"role":"worker","budget":{"compute_budget":{"token_limit":1,"compute_timeout":"-5s"}}}`, wantErr: workspace.ErrInvalidRequest},
		{name: "negative token limit", in: `{"role":"worker","budget":{"compute_budget":{"token_limit":-1}}}`, wantErr: workspace.ErrInvalidRequest},
		{name: "negative context limit", in: `{"role":"worker","budget":{"memory_budget":{"context_limit":-1}}}`, wantErr: workspace.ErrInvalidRequest},
		{name: "negative checkpoint limit", in: `{"role":"worker","budget":{"storage_budget":{"checkpoint_limit":-1}}}`, wantErr: workspace.ErrInvalidRequest},
		{name: "negative trail limit", in: `{"role":"worker","budget":{"storage_budget":{"trail_limit":-1}}}`, wantErr: workspace.ErrInvalidRequest},
		{name: "negative bandwidth limit", in: `{"role":"worker","budget":{"network_budget":{"bandwidth_limit":-1}}}`, wantErr: workspace.ErrInvalidRequest},
		{name: "negative cost limit", in: `{"role":"worker","budget":{"cost_limit":-0.01}}`, wantErr: workspace.ErrInvalidRequest},
		{name: "fractional token limit", in: `{"role":"worker","budget":{"compute_budget":{"token_limit":1.5}}}`, wantErr: workspace.ErrInvalidRequest},
		{name: "bad priority", in: `{"role":"worker","priority":"urgent"}`, wantErr: workspace.ErrInvalidRequest},
		{name: "priority in capitals", in: `{"role":"worker","priority":"NORMAL"}`, wantErr: workspace.ErrInvalidRequest},
		{name: "visibility all", in: `{"role":"worker","visibility":["*"]}`, wantErr: workspace.ErrInvalidRequest},
		{name: "empty visibility entry", in: `{"role":"worker","visibility":[""]}`, wantErr: workspace.ErrInvalidRequest},
		{name: "trailing object", in: `{"role":"worker"} {"role":"worker"}`, wantErr: workspace.ErrInvalidRequest},
		{name: "trailing garbage", in: `{"role":"worker"} x`, wantErr: workspace.ErrInvalidRequest},
		{name: "trailing brace", in: `{"role":"worker"}}`, wantErr: workspace.ErrInvalidRequest},
		{name: "trailing bracket", in: `{"role":"worker"}]`, wantErr: workspace.ErrInvalidRequest},
		{name: "empty input", in: ``, wantErr: workspace.ErrInvalidRequest},
		{name: "null", in: `null`, wantErr: workspace.ErrInvalidRequest},
		{name: "array", in: `[{"role":"worker"}]`, wantErr: workspace.ErrInvalidRequest},
		{name: "truncated", in: `{"role":"worker"`, wantErr: workspace.ErrInvalidRequest},
		{name: "invalid UTF-8 in the role", in: "{\"role\":\"w\xff\"}", wantErr: workspace.ErrInvalidRequest},
		{name: "invalid UTF-8 in the context", in: "{\"role\":\"worker\",\"context\":{\"k\":\"\xc3\"}}", wantErr: workspace.ErrInvalidRequest},
		{name: "context at the nesting limit", in: `{"role":"worker","context":` + nested(63) + `}`,
			want: workspace.CreateRequest{Role: "worker", Context: json.RawMessage(nested(63))}},
		{name: "context too deep", in: `{"role":"worker","context":` + nested(64) + `}`, wantErr: workspace.ErrInvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := workspace.DecodeCreateRequest([]byte(tt.in))
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("DecodeCreateRequest(%q) error = %v, want %v", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("DecodeCreateRequest(%q) error = %v, want nil", tt.in, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("DecodeCreateRequest(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
		})
	}
}

const now = "2026-11-21T22:48:25.123456789Z"

// delegateParent returns a non-root parent with a narrow scope: it sees
// itself and S1, and may act on files/a and files/b.
func delegateParent(state workspace.State) *workspace.Workspace {
	root := "ROOT"
	return &workspace.Workspace{
		ID: "P", Role: "worker", Parent: &root, State: state, Owner: "alice", Originator: "carol",
		Delegate: true, Visibility: []string{"P", "S1"}, Authority: []string{"files/a", "files/b"},
		Priority: workspace.PriorityNormal,
	}
}

func TestPlan(t *testing.T) {
	root := workspace.Root("ROOT", "operator", now)
	tests := []struct {
		name           string
		req            workspace.CreateRequest
		parent         *workspace.Workspace
		wantOwner      string
		wantOriginator string
		wantVisibility []string
		wantAuthority  []string
		wantPriority   string
		wantErr        error
	}{
		{
			name: "owner inherited from the parent", req: workspace.CreateRequest{Role: "worker"}, parent: delegateParent(workspace.Active),
			wantOwner: "alice", wantOriginator: "carol", wantVisibility: []string{"C"}, wantAuthority: []string{}, wantPriority: "normal",
		},
		{
			name: "explicit owner kept, originator still inherited", req: workspace.CreateRequest{Role: "worker", Owner: "bob"}, parent: delegateParent(workspace.Active),
			wantOwner: "bob", wantOriginator: "carol", wantVisibility: []string{"C"}, wantAuthority: []string{}, wantPriority: "normal",
		},
		{
			name: "root child inherits the root owner and the system originator", req: workspace.CreateRequest{Role: "worker"}, parent: root,
			wantOwner: "operator", wantOriginator: workspace.OriginatorSystem, wantVisibility: []string{"C"}, wantAuthority: []string{}, wantPriority: "normal",
		},
		{
			name: "visibility within the parent's", req: workspace.CreateRequest{Role: "worker", Visibility: []string{"S1", "P"}}, parent: delegateParent(workspace.Active),
			wantOwner: "alice", wantOriginator: "carol", wantVisibility: []string{"C", "S1", "P"}, wantAuthority: []string{}, wantPriority: "normal",
		},
		{
			name: "authority within the parent's", req: workspace.CreateRequest{Role: "worker", Authority: []string{"files/b"}}, parent: delegateParent(workspace.Active),
			wantOwner: "alice", wantOriginator: "carol", wantVisibility: []string{"C"}, wantAuthority: []string{"files/b"}, wantPriority: "normal",
		},
		{
			name: "the root contains everything", req: workspace.CreateRequest{Role: "worker", Visibility: []string{"X", "Y"}, Authority: []string{"files/z"}}, parent: root,
			wantOwner: "operator", wantOriginator: workspace.OriginatorSystem, wantVisibility: []string{"C", "X", "Y"}, wantAuthority: []string{"files/z"}, wantPriority: "normal",
		},
		{
			name: "explicit priority kept", req: workspace.CreateRequest{Role: "worker", Priority: workspace.PriorityCritical}, parent: root,
			wantOwner: "operator", wantOriginator: workspace.OriginatorSystem, wantVisibility: []string{"C"}, wantAuthority: []string{}, wantPriority: "critical",
		},
		{
			name: "parent idle or suspended may still create", req: workspace.CreateRequest{Role: "worker"}, parent: delegateParent(workspace.Suspended),
			wantOwner: "alice", wantOriginator: "carol", wantVisibility: []string{"C"}, wantAuthority: []string{}, wantPriority: "normal",
		},

		{name: "system owner refused", req: workspace.CreateRequest{Role: "worker", Owner: "system"}, parent: root, wantErr: workspace.ErrInvalidRequest},
		{name: "system owner refused when inherited", req: workspace.CreateRequest{Role: "worker"}, parent: func() *workspace.Workspace {
			p := delegateParent(workspace.Active)
			p.Owner = "system"
			return p
		}(), wantErr: workspace.ErrInvalidRequest},
		{name: "visibility outside the parent's", req: workspace.CreateRequest{Role: "worker", Visibility: []string{"S1", "S2"}}, parent: delegateParent(workspace.Active), wantErr: workspace.ErrContainment},
		{name: "visibility of the root from a narrow parent", req: workspace.CreateRequest{Role: "worker", Visibility: []string{"ROOT"}}, parent: delegateParent(workspace.Active), wantErr: workspace.ErrContainment},
		{name: "authority outside the parent's", req: workspace.CreateRequest{Role: "worker", Authority: []string{"files/a", "files/c"}}, parent: delegateParent(workspace.Active), wantErr: workspace.ErrContainment},
		{name: "authority all from a narrow parent", req: workspace.CreateRequest{Role: "worker", Authority: []string{"*"}}, parent: delegateParent(workspace.Active), wantErr: workspace.ErrContainment},
		{name: "closed parent", req: workspace.CreateRequest{Role: "worker"}, parent: delegateParent(workspace.Closed), wantErr: workspace.ErrParentTerminal},
		{name: "failed parent", req: workspace.CreateRequest{Role: "worker"}, parent: delegateParent(workspace.Failed), wantErr: workspace.ErrParentTerminal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := workspace.Plan(tt.req, tt.parent, "C", now)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || got != nil {
					t.Errorf("Plan(%+v, %s) = %v, %v, want nil, %v", tt.req, tt.parent.ID, got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Plan(%+v, %s) error = %v, want nil", tt.req, tt.parent.ID, err)
			}
			if got.Owner != tt.wantOwner {
				t.Errorf("Plan(%+v, %s).Owner = %q, want %q", tt.req, tt.parent.ID, got.Owner, tt.wantOwner)
			}
			if got.Originator != tt.wantOriginator {
				t.Errorf("Plan(%+v, %s).Originator = %q, want %q", tt.req, tt.parent.ID, got.Originator, tt.wantOriginator)
			}
			if !slices.Equal(got.Visibility, tt.wantVisibility) {
				t.Errorf("Plan(%+v, %s).Visibility = %q, want %q", tt.req, tt.parent.ID, got.Visibility, tt.wantVisibility)
			}
			if got.Authority == nil || !slices.Equal(got.Authority, tt.wantAuthority) {
				t.Errorf("Plan(%+v, %s).Authority = %#v, want %q", tt.req, tt.parent.ID, got.Authority, tt.wantAuthority)
			}
			if got.Priority != tt.wantPriority {
				t.Errorf("Plan(%+v, %s).Priority = %q, want %q", tt.req, tt.parent.ID, got.Priority, tt.wantPriority)
			}
			if got.ID != "C" || got.State != workspace.Idle || got.ParentID() != tt.parent.ID || got.IsRoot() ||
				got.CreatedAt != now || got.UpdatedAt != now || got.PreState != "" || got.Role != tt.req.Role {
				t.Errorf("Plan(%+v, %s) = %+v, want id C, idle, parent %s, role %s, created and updated at %s",
					tt.req, tt.parent.ID, got, tt.parent.ID, tt.req.Role, now)
			}
			if !got.Sees("C") {
				t.Errorf("Plan(%+v, %s).Sees(C) = false, want true", tt.req, tt.parent.ID)
			}
		})
	}
}

// TestPlan_CopiesRequest checks the record carries every creation field and
// does not share the request's slices.
func TestPlan_CopiesRequest(t *testing.T) {
	req, err := workspace.DecodeCreateRequest([]byte(fixture.FullCreateRequest))
	if err != nil {
		t.Fatal(err)
	}
	req.Owner = "" // inherit
	parent := workspace.Root("ROOT", "operator", now)
	w, err := workspace.Plan(req, parent, "C", now)
	if err != nil {
		t.Fatalf("Plan(full request, root) error = %v", err)
	}
	if w.Delegate != true || w.TaskRef != "task-7" || w.Timeout != "30m" || w.Group != "batch-3" ||
		w.LivenessInterval != "5m" || string(w.Context) != `{"k":[1,2]}` || !reflect.DeepEqual(w.Budget, req.Budget) {
		t.Errorf("Plan(full request, root) = %+v, want the request's delegate, task_ref, timeout, group, liveness, context and budget", w)
	}
	req.Authority[0] = "changed"
	req.Visibility[0] = "changed"
	if w.Authority[0] != "files/a" || w.Visibility[1] != "01SIBLING" {
		t.Errorf("Plan record shares the request's slices: authority %q, visibility %q", w.Authority, w.Visibility)
	}
	if parent.Visibility[0] != workspace.All || len(parent.Visibility) != 1 {
		t.Errorf("Plan changed the parent's visibility to %q", parent.Visibility)
	}
	b, err := json.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"authority":["files/a"]`)) {
		t.Errorf("json.Marshal(Plan(...)) = %s, want the authority array", b)
	}
}

// An empty authority set is stored as [], not null.
func TestPlan_EmptyAuthorityIsArray(t *testing.T) {
	w, err := workspace.Plan(workspace.CreateRequest{Role: "worker"}, workspace.Root("ROOT", "operator", now), "C", now)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"authority":[]`)) || !bytes.Contains(b, []byte(`"visibility":["C"]`)) {
		t.Errorf("json.Marshal(Plan(...)) = %s, want \"authority\":[] and \"visibility\":[\"C\"]", b)
	}
}

func TestRoot(t *testing.T) {
	r := workspace.Root("ROOT", "operator", now)
	if !r.IsRoot() || r.ParentID() != "" || r.State != workspace.Idle || r.Owner != "operator" ||
		r.Originator != workspace.OriginatorSystem || r.Budget != nil || r.Timeout != "" ||
		!slices.Equal(r.Visibility, []string{workspace.All}) || !slices.Equal(r.Authority, []string{workspace.All}) {
		t.Errorf("Root(ROOT, operator, now) = %+v, want a parentless idle record with full visibility and authority, no budget or timeout, originator system", r)
	}
	if !r.Sees("anything") {
		t.Errorf("Root(...).Sees(anything) = false, want true")
	}
}

// FuzzDecodeCreateRequest checks that DecodeCreateRequest never panics, that
// its errors wrap ErrInvalidRequest, and that an accepted request survives
// json.Marshal and a second decode unchanged.
func FuzzDecodeCreateRequest(f *testing.F) {
	f.Add([]byte(fixture.FullCreateRequest))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := workspace.DecodeCreateRequest(data)
		if err != nil {
			if !errors.Is(err, workspace.ErrInvalidRequest) {
				t.Fatalf("DecodeCreateRequest(%q) error = %v, want one wrapping ErrInvalidRequest", data, err)
			}
			return
		}
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("json.Marshal(DecodeCreateRequest(%q)) error = %v", data, err)
		}
		r2, err := workspace.DecodeCreateRequest(b)
		if err != nil {
			t.Fatalf("DecodeCreateRequest(%s) error = %v, want nil (re-marshalled from %q)", b, err, data)
		}
		if n1, n2 := normalize(t, r), normalize(t, r2); !reflect.DeepEqual(n1, n2) {
			t.Fatalf("DecodeCreateRequest(json.Marshal(%+v)) = %+v, want an equal request (input %q)", r, r2, data)
		}
	})
}

// normal is a CreateRequest with the differences JSON does not preserve
// removed: empty and nil slices are alike, and the context is compared as a
// value (json.Marshal compacts it and escapes HTML).
type normal struct {
	workspace.CreateRequest
	context any
}

func normalize(t *testing.T, r workspace.CreateRequest) normal {
	t.Helper()
	n := normal{CreateRequest: r}
	if len(r.Context) > 0 {
		dec := json.NewDecoder(bytes.NewReader(r.Context))
		dec.UseNumber()
		if err := dec.Decode(&n.context); err != nil {
			t.Fatalf("decode context %q: %v", r.Context, err)
		}
	}
	n.Context = nil
	if len(n.Visibility) == 0 {
		n.Visibility = nil
	}
	if len(n.Authority) == 0 {
		n.Authority = nil
	}
	return n
}
