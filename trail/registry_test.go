package trail

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestRegistryCount(t *testing.T) {
	types := EventTypes()
	if len(types) != 72 {
		t.Fatalf("len(EventTypes()) = %d, want 72", len(types))
	}
	seen := make(map[EventType]bool, len(types))
	for _, e := range types {
		if seen[e] {
			t.Errorf("EventTypes() lists %q twice", e)
		}
		seen[e] = true
	}
}

func TestRegistryCategoryCounts(t *testing.T) {
	want := map[string]int{
		"workspace":   22,
		"user":        12,
		"signal":      2,
		"envelope":    9,
		"checkpoint":  3,
		"task":        7,
		"integration": 3,
		"highway":     8,
		"recovery":    2,
		"security":    1,
		"trail":       3,
	}
	got := make(map[string]int)
	for _, e := range EventTypes() {
		got[e.Category()]++
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("category counts = %v, want %v", got, want)
	}
}

func TestRegistryOrder(t *testing.T) {
	// Spot-check Trail spec §9 order: first, last and category boundaries.
	types := EventTypes()
	tests := []struct {
		i    int
		want EventType
	}{
		{0, EventWorkspaceCreated},
		{21, EventWorkspaceReparented},
		{22, EventUserCreated},
		{33, EventCapabilityDenied},
		{34, EventSignalEmitted},
		{36, EventEnvelopeCreated},
		{45, EventCheckpointCreated},
		{48, EventTaskCreated},
		{54, EventGraphCreated},
		{55, EventIntegrationStarted},
		{58, EventGateTriggered},
		{66, EventSystemDegraded},
		{68, EventIntegrityViolation},
		{69, EventTrailCompacted},
		{71, EventTrailSnapshotCreated},
	}
	for _, tt := range tests {
		if got := types[tt.i]; got != tt.want {
			t.Errorf("EventTypes()[%d] = %q, want %q", tt.i, got, tt.want)
		}
	}
	// Categories are contiguous runs.
	var runs []string
	for _, e := range types {
		if c := e.Category(); len(runs) == 0 || runs[len(runs)-1] != c {
			runs = append(runs, c)
		}
	}
	wantRuns := []string{"workspace", "user", "signal", "envelope", "checkpoint", "task", "integration", "highway", "recovery", "security", "trail"}
	if !slices.Equal(runs, wantRuns) {
		t.Errorf("category runs = %v, want %v", runs, wantRuns)
	}
}

func TestEventTypesIsCopy(t *testing.T) {
	a := EventTypes()
	a[0] = "mutated"
	if b := EventTypes(); b[0] != EventWorkspaceCreated {
		t.Errorf("EventTypes()[0] = %q after mutating a previous result, want %q", b[0], EventWorkspaceCreated)
	}
	f := EventWorkspaceCreated.RequiredFields()
	f[0] = "mutated"
	if g := EventWorkspaceCreated.RequiredFields(); g[0] != "workspace_id" {
		t.Errorf("RequiredFields()[0] = %q after mutating a previous result, want %q", g[0], "workspace_id")
	}
}

func TestEventRequiredFieldsWellFormed(t *testing.T) {
	for _, e := range EventTypes() {
		t.Run(string(e), func(t *testing.T) {
			if !e.Valid() {
				t.Errorf("%q.Valid() = false, want true", e)
			}
			fields := e.RequiredFields()
			if len(fields) == 0 {
				t.Fatalf("%q.RequiredFields() is empty", e)
			}
			seen := make(map[string]bool)
			for _, f := range fields {
				if f == "" || f != strings.TrimSpace(f) {
					t.Errorf("%q has malformed field %q", e, f)
				}
				if seen[f] {
					t.Errorf("%q lists field %q twice", e, f)
				}
				seen[f] = true
			}
			for _, n := range e.NullableFields() {
				if !seen[n] {
					t.Errorf("%q: nullable field %q is not a required field", e, n)
				}
			}
		})
	}
}

func TestEventValid(t *testing.T) {
	tests := []struct {
		in   EventType
		want bool
	}{
		{"workspace_created", true},
		{"trail_snapshot_created", true},
		{"authentication_failed", true},
		{"permission_denied", false},
		{"transition_rejected", false},
		{"system_recovered", false},
		{"", false},
		{"Workspace_Created", false},
		{"workspace_created ", false},
	}
	for _, tt := range tests {
		if got := tt.in.Valid(); got != tt.want {
			t.Errorf("EventType(%q).Valid() = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestEventUnknownAccessors(t *testing.T) {
	e := EventType("permission_denied")
	if got := e.Category(); got != "" {
		t.Errorf("%q.Category() = %q, want \"\"", e, got)
	}
	if got := e.RequiredFields(); got != nil {
		t.Errorf("%q.RequiredFields() = %v, want nil", e, got)
	}
	if got := e.NullableFields(); got != nil {
		t.Errorf("%q.NullableFields() = %v, want nil", e, got)
	}
}

// registrySampleBodies are complete bodies, with the exact field sets the specs
// give, for a sample of events.
var registrySampleBodies = []struct {
	event  EventType
	fields []string
	body   map[string]any
}{
	{
		EventCheckpointCreated,
		[]string{"checkpoint_id", "workspace", "type", "status", "confidence", "parent", "timestamp"},
		map[string]any{
			"checkpoint_id": "01J0CP000000000000000000A1",
			"workspace":     "ws-task-03",
			"type":          "artifact",
			"status":        "final",
			"confidence":    "high",
			"parent":        nil, // first checkpoint in the chain
			"timestamp":     "2026-01-02T03:04:05.000006Z",
		},
	},
	{
		EventCheckpointRejected,
		[]string{"workspace", "type", "reason", "timestamp"},
		map[string]any{
			"workspace": "ws-task-03",
			"type":      "observation",
			"reason":    "permission_denied",
			"timestamp": "2026-01-02T03:04:05Z",
		},
	},
	{
		EventResourceDiscrepancy,
		[]string{"checkpoint_id", "workspace", "field", "agent_value", "runtime_value", "timestamp"},
		map[string]any{
			"checkpoint_id": "01J0CP000000000000000000A1",
			"workspace":     "ws-task-03",
			"field":         "tokens_consumed",
			"agent_value":   float64(1200),
			"runtime_value": float64(1450),
			"timestamp":     "2026-01-02T03:04:05Z",
		},
	},
	{
		EventSignalEmitted,
		[]string{"signal_id", "from", "type", "reason", "ref", "timestamp"},
		map[string]any{
			"signal_id": "01J0SG000000000000000000B1",
			"from":      "ws-task-03",
			"type":      "ready",
			"reason":    nil,
			"ref":       nil,
			"timestamp": "2026-01-02T03:04:05Z",
		},
	},
	{
		EventSignalDelivered,
		[]string{"signal_id", "from", "delivered_to", "delivered_at"},
		map[string]any{
			"signal_id":    "01J0SG000000000000000000B1",
			"from":         "ws-task-03",
			"delivered_to": "ws-root",
			"delivered_at": "2026-01-02T03:04:06Z",
		},
	},
	{
		EventWorkspaceCreated,
		[]string{"workspace_id", "role", "parent", "delegate", "originator", "owner", "visibility_set", "authority_set", "timeout", "budget", "priority", "group"},
		map[string]any{
			// The root workspace: no parent, no timeout, no budget, no group,
			// plus the implementation fields the root entry carries.
			"workspace_id":      "ws-root",
			"role":              "coordinator",
			"parent":            nil,
			"delegate":          false,
			"originator":        "system",
			"owner":             "system",
			"visibility_set":    []any{},
			"authority_set":     []any{"create_workspace"},
			"timeout":           nil,
			"budget":            nil,
			"priority":          "normal",
			"group":             nil,
			"hash_algorithm":    "blake3-256",
			"taxonomy_id":       "base",
			"taxonomy_version":  "0.1",
			"taxonomy_checksum": "ab12",
		},
	},
	{
		EventWorkspaceStateChanged,
		[]string{"workspace_id", "from_state", "to_state", "trigger", "initiator"},
		map[string]any{
			"workspace_id": "ws-task-03",
			"from_state":   "idle",
			"to_state":     "active",
			"trigger":      "first_envelope",
			"initiator":    "protocol",
		},
	},
	{
		EventEnvelopeCreated,
		[]string{"envelope_id", "from", "to", "type", "priority", "in_reply_to", "originator", "timestamp"},
		map[string]any{
			"envelope_id": "01J0EV000000000000000000C1",
			"from":        "ws-root",
			"to":          "ws-task-03",
			"type":        "directive",
			"priority":    "normal",
			"in_reply_to": nil,
			"originator":  "system",
			"timestamp":   "2026-01-02T03:04:05Z",
		},
	},
}

func TestValidateBodySamples(t *testing.T) {
	for _, tt := range registrySampleBodies {
		t.Run(string(tt.event), func(t *testing.T) {
			if got := tt.event.RequiredFields(); !slices.Equal(got, tt.fields) {
				t.Errorf("%q.RequiredFields() = %v, want %v", tt.event, got, tt.fields)
			}
			if err := ValidateBody(tt.event, tt.body); err != nil {
				t.Fatalf("ValidateBody(%q, complete) = %v, want nil", tt.event, err)
			}
			for _, f := range tt.fields {
				body := make(map[string]any, len(tt.body))
				for k, v := range tt.body {
					if k != f {
						body[k] = v
					}
				}
				err := ValidateBody(tt.event, body)
				if !errors.Is(err, ErrBodyInvalid) {
					t.Errorf("ValidateBody(%q, without %q) = %v, want ErrBodyInvalid", tt.event, f, err)
				}
			}
		})
	}
}

// registryFullBody returns a body with a non-null value for every required field of e.
func registryFullBody(e EventType) map[string]any {
	body := make(map[string]any)
	for _, f := range e.RequiredFields() {
		body[f] = "v"
	}
	return body
}

func TestValidateBodyMissingField(t *testing.T) {
	for _, e := range EventTypes() {
		t.Run(string(e), func(t *testing.T) {
			if err := ValidateBody(e, registryFullBody(e)); err != nil {
				t.Fatalf("ValidateBody(%q, full) = %v, want nil", e, err)
			}
			for _, f := range e.RequiredFields() {
				body := registryFullBody(e)
				delete(body, f)
				err := ValidateBody(e, body)
				if !errors.Is(err, ErrBodyInvalid) {
					t.Errorf("ValidateBody(%q, without %q) = %v, want ErrBodyInvalid", e, f, err)
					continue
				}
				if errors.Is(err, ErrUnknownEvent) {
					t.Errorf("ValidateBody(%q, without %q) = %v, also wraps ErrUnknownEvent", e, f, err)
				}
				msg := err.Error()
				if !strings.Contains(msg, string(e)) || !strings.Contains(msg, `"`+f+`"`) {
					t.Errorf("ValidateBody(%q, without %q) error %q does not name the event and field", e, f, msg)
				}
			}
		})
	}
}

func TestValidateBodyNull(t *testing.T) {
	for _, e := range EventTypes() {
		nullable := e.NullableFields()
		for _, f := range e.RequiredFields() {
			body := registryFullBody(e)
			body[f] = nil
			err := ValidateBody(e, body)
			if slices.Contains(nullable, f) {
				if err != nil {
					t.Errorf("ValidateBody(%q, %s=null) = %v, want nil (nullable)", e, f, err)
				}
			} else if !errors.Is(err, ErrBodyInvalid) {
				t.Errorf("ValidateBody(%q, %s=null) = %v, want ErrBodyInvalid", e, f, err)
			}
		}
	}
}

func TestValidateBodyNilAndExtra(t *testing.T) {
	if err := ValidateBody(EventTaskApproved, nil); !errors.Is(err, ErrBodyInvalid) {
		t.Errorf("ValidateBody(%q, nil) = %v, want ErrBodyInvalid", EventTaskApproved, err)
	}
	body := registryFullBody(EventTaskApproved)
	body["implementation_extra"] = map[string]any{"k": 1}
	if err := ValidateBody(EventTaskApproved, body); err != nil {
		t.Errorf("ValidateBody(%q, with extra field) = %v, want nil", EventTaskApproved, err)
	}
}

func TestValidateBodyUnknownEvent(t *testing.T) {
	tests := []EventType{"permission_denied", "transition_rejected", "system_recovered", "", "Workspace_Created"}
	for _, e := range tests {
		err := ValidateBody(e, map[string]any{"workspace_id": "ws-1"})
		if !errors.Is(err, ErrUnknownEvent) {
			t.Errorf("ValidateBody(%q) = %v, want ErrUnknownEvent", e, err)
		}
		if errors.Is(err, ErrBodyInvalid) {
			t.Errorf("ValidateBody(%q) = %v, also wraps ErrBodyInvalid", e, err)
		}
	}
}

// Spot checks of per-event splits the specs make explicit.
func TestEventFieldSplits(t *testing.T) {
	tests := []struct {
		event EventType
		want  []string
	}{
		{EventBudgetWarning, []string{"workspace_id", "budget_dimension", "consumed", "limit", "threshold_percent"}},
		{EventBudgetExceeded, []string{"workspace_id", "budget_dimension", "consumed", "limit"}},
		{EventBatchAbort, []string{"group_id", "affected_workspaces", "skipped_workspaces"}},
		{EventBatchPriorityChanged, []string{"group_id", "old_priority", "new_priority", "affected_workspaces", "skipped_workspaces"}},
		{EventMigrationStarted, []string{"workspace_id", "old_agent", "new_agent", "reason"}},
		{EventMigrationCompleted, []string{"workspace_id", "old_agent", "new_agent", "duration"}},
		{EventMigrationFailed, []string{"workspace_id", "old_agent", "new_agent", "reason", "error"}},
		{EventSuspensionResumed, []string{"workspace_id", "resumed_to_state", "duration"}},
		{EventAuthenticationFailed, []string{"entity", "context", "reason", "source"}},
		{EventIntegrityViolation, []string{"subject_type", "subject_id", "violation", "expected", "actual", "action_taken"}},
		{EventTrailCompacted, []string{"workspace", "entries_archived", "entries_preserved", "archive_range", "archive_hash"}},
	}
	for _, tt := range tests {
		if got := tt.event.RequiredFields(); !slices.Equal(got, tt.want) {
			t.Errorf("%q.RequiredFields() = %v, want %v", tt.event, got, tt.want)
		}
	}
}

// registryDocTable renders the registry as the markdown table docs/events.md carries.
func registryDocTable() string {
	quote := func(fs []string) string {
		if len(fs) == 0 {
			return "—"
		}
		q := make([]string, len(fs))
		for i, f := range fs {
			q[i] = "`" + f + "`"
		}
		return strings.Join(q, ", ")
	}
	var b strings.Builder
	b.WriteString("| # | Event type | Category | Required body fields (spec order) | Nullable | Source |\n")
	b.WriteString("|---|---|---|---|---|---|\n")
	for i, s := range eventRegistry {
		b.WriteString("| " + strconv.Itoa(i+1) + " | `" + string(s.Type) + "` | " + s.Category + " | " + quote(s.Fields) + " | " + quote(s.Nullable) + " | " + s.Source + " |\n")
	}
	return b.String()
}

func TestRegistryDocsListEveryEvent(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "docs", "events.md"))
	if err != nil {
		t.Fatalf("read docs/events.md: %v", err)
	}
	doc := string(raw)
	for _, e := range EventTypes() {
		if !strings.Contains(doc, "| `"+string(e)+"` |") {
			t.Errorf("docs/events.md has no table row for %q", e)
		}
	}
	if want := registryDocTable(); !strings.Contains(doc, want) {
		t.Errorf("docs/events.md table differs from the registry; want this table verbatim:\n%s", want)
	}
	if !strings.Contains(doc, "## Judgement calls") {
		t.Errorf("docs/events.md has no \"## Judgement calls\" section")
	}
}
