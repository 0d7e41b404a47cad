package signal_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/wacpd/wacpd/signal"
	"github.com/wacpd/wacpd/taxonomy"
)

// reasonOf returns the reason of a *signal.Rejection, "" for nil, and fails
// the test for any other error.
func reasonOf(t *testing.T, err error) signal.Reason {
	t.Helper()
	if err == nil {
		return ""
	}
	var rej *signal.Rejection
	if !errors.As(err, &rej) {
		t.Fatalf("error %v (%T) is not a *signal.Rejection", err, err)
	}
	if !errors.Is(err, signal.ErrRejected) {
		t.Errorf("errors.Is(%v, ErrRejected) = false, want true", err)
	}
	return rej.Reason
}

func TestDecodeRequest(t *testing.T) {
	longReason := strings.Repeat("r", signal.MaxReason)
	tests := []struct {
		name       string
		in         string
		want       signal.Request
		wantReason signal.Reason
	}{
		{"type only", `{"type":"ready"}`, signal.Request{Type: "ready"}, ""},
		{"all fields", `{"type":"blocked","reason":"waiting on review","ref":"01JDAXQ5Z0B2C3D4E5F6G7H8J9"}`,
			signal.Request{Type: "blocked", Reason: "waiting on review", Ref: "01JDAXQ5Z0B2C3D4E5F6G7H8J9"}, ""},
		{"surrounding white space", " \n\t{\"type\":\"started\"}\n ", signal.Request{Type: "started"}, ""},
		{"reason at the limit", `{"type":"failed","reason":"` + longReason + `"}`, signal.Request{Type: "failed", Reason: longReason}, ""},
		{"multibyte reason", `{"type":"failed","reason":"ünïcödé ✓"}`, signal.Request{Type: "failed", Reason: "ünïcödé ✓"}, ""},
		{"unknown type decodes", `{"type":"paused"}`, signal.Request{Type: "paused"}, ""},
		{"null reason", `{"type":"ready","reason":null}`, signal.Request{Type: "ready"}, ""},

		{"unknown field", `{"type":"ready","from":"ws-a"}`, signal.Request{}, signal.ReasonInvalidStructure},
		{"runtime field", `{"type":"ready","timestamp":"2026-11-21T22:48:25.123456789Z"}`, signal.Request{}, signal.ReasonInvalidStructure},
		{"invalid UTF-8", "{\"type\":\"ready\",\"reason\":\"\xff\xfe\"}", signal.Request{}, signal.ReasonInvalidStructure},
		{"missing type", `{"reason":"x"}`, signal.Request{}, signal.ReasonInvalidStructure},
		{"empty type", `{"type":""}`, signal.Request{}, signal.ReasonInvalidStructure},
		{"empty object", `{}`, signal.Request{}, signal.ReasonInvalidStructure},
		{"reason too long", `{"type":"failed","reason":"` + longReason + `x"}`, signal.Request{}, signal.ReasonInvalidStructure},
		{"type not a string", `{"type":5}`, signal.Request{}, signal.ReasonInvalidStructure},
		{"reason not a string", `{"type":"failed","reason":["x"]}`, signal.Request{}, signal.ReasonInvalidStructure},
		{"not an object", `["ready"]`, signal.Request{}, signal.ReasonInvalidStructure},
		{"null", `null`, signal.Request{}, signal.ReasonInvalidStructure},
		{"empty", ``, signal.Request{}, signal.ReasonInvalidStructure},
		{"truncated", `{"type":"ready"`, signal.Request{}, signal.ReasonInvalidStructure},
		{"trailing object", `{"type":"ready"}{"type":"failed"}`, signal.Request{}, signal.ReasonInvalidStructure},
		{"trailing garbage", `{"type":"ready"} x`, signal.Request{}, signal.ReasonInvalidStructure},
		{"trailing brace", `{"type":"ready"}}`, signal.Request{}, signal.ReasonInvalidStructure},
		{"trailing bracket", `{"type":"ready"}]`, signal.Request{}, signal.ReasonInvalidStructure},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := signal.DecodeRequest([]byte(tt.in))
			if r := reasonOf(t, err); r != tt.wantReason {
				t.Fatalf("DecodeRequest(%q) error = %v, want reason %q", tt.in, err, tt.wantReason)
			}
			if got != tt.want {
				t.Errorf("DecodeRequest(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
		})
	}
}

// TestCheckBaseRoles is the exhaustive 11 types × 3 base roles table. emit is
// the role's base emit set (Roles §6); want is what Check returns for a
// request carrying a reason: agents never emit the runtime-only signals
// (checkpoint, acknowledged, integrate) nor the coordinator-operation ones
// (suspend, migrate), even when the role's set lists them.
func TestCheckBaseRoles(t *testing.T) {
	const (
		ok     = signal.Reason("")
		denied = signal.ReasonPermissionDenied
	)
	tests := []struct {
		role string
		typ  taxonomy.SignalType
		emit bool
		want signal.Reason
	}{
		{taxonomy.RoleCoordinator, taxonomy.SignalReady, true, ok},
		{taxonomy.RoleCoordinator, taxonomy.SignalStarted, true, ok},
		{taxonomy.RoleCoordinator, taxonomy.SignalBlocked, false, denied},
		{taxonomy.RoleCoordinator, taxonomy.SignalCheckpoint, false, denied},
		{taxonomy.RoleCoordinator, taxonomy.SignalComplete, false, denied},
		{taxonomy.RoleCoordinator, taxonomy.SignalFailed, true, ok},
		{taxonomy.RoleCoordinator, taxonomy.SignalIntegrate, true, denied},
		{taxonomy.RoleCoordinator, taxonomy.SignalAcknowledged, true, denied},
		{taxonomy.RoleCoordinator, taxonomy.SignalEscalation, false, denied},
		{taxonomy.RoleCoordinator, taxonomy.SignalSuspend, false, denied},
		{taxonomy.RoleCoordinator, taxonomy.SignalMigrate, false, denied},

		{taxonomy.RoleWorker, taxonomy.SignalReady, true, ok},
		{taxonomy.RoleWorker, taxonomy.SignalStarted, true, ok},
		{taxonomy.RoleWorker, taxonomy.SignalBlocked, true, ok},
		{taxonomy.RoleWorker, taxonomy.SignalCheckpoint, true, denied},
		{taxonomy.RoleWorker, taxonomy.SignalComplete, true, ok},
		{taxonomy.RoleWorker, taxonomy.SignalFailed, true, ok},
		{taxonomy.RoleWorker, taxonomy.SignalIntegrate, false, denied},
		{taxonomy.RoleWorker, taxonomy.SignalAcknowledged, false, denied},
		{taxonomy.RoleWorker, taxonomy.SignalEscalation, true, ok},
		{taxonomy.RoleWorker, taxonomy.SignalSuspend, false, denied},
		{taxonomy.RoleWorker, taxonomy.SignalMigrate, false, denied},

		{taxonomy.RoleObserver, taxonomy.SignalReady, true, ok},
		{taxonomy.RoleObserver, taxonomy.SignalStarted, true, ok},
		{taxonomy.RoleObserver, taxonomy.SignalBlocked, false, denied},
		{taxonomy.RoleObserver, taxonomy.SignalCheckpoint, false, denied},
		{taxonomy.RoleObserver, taxonomy.SignalComplete, true, ok},
		{taxonomy.RoleObserver, taxonomy.SignalFailed, true, ok},
		{taxonomy.RoleObserver, taxonomy.SignalIntegrate, false, denied},
		{taxonomy.RoleObserver, taxonomy.SignalAcknowledged, false, denied},
		{taxonomy.RoleObserver, taxonomy.SignalEscalation, true, ok},
		{taxonomy.RoleObserver, taxonomy.SignalSuspend, false, denied},
		{taxonomy.RoleObserver, taxonomy.SignalMigrate, false, denied},
	}
	if want := 3 * len(taxonomy.SignalTypes()); len(tests) != want {
		t.Fatalf("table has %d rows, want %d (every type for every base role)", len(tests), want)
	}
	tax := taxonomy.Base()
	for _, tt := range tests {
		t.Run(tt.role+"/"+string(tt.typ), func(t *testing.T) {
			if got := tax.CanEmit(tt.role, tt.typ); got != tt.emit {
				t.Errorf("Base().CanEmit(%s, %s) = %v, want %v", tt.role, tt.typ, got, tt.emit)
			}
			req := signal.Request{Type: string(tt.typ), Reason: "because"}
			err := signal.Check(tax, tt.role, req)
			if got := reasonOf(t, err); got != tt.want {
				t.Errorf("Check(%s, %+v) = %v, want reason %q", tt.role, req, err, tt.want)
			}
		})
	}
}

func TestCheckRefusals(t *testing.T) {
	tax := taxonomy.Base()
	tests := []struct {
		name string
		role string
		req  signal.Request
		want signal.Reason
	}{
		// Runtime-only types, refused for the roles whose set lists them.
		{"checkpoint is runtime-only", taxonomy.RoleWorker, signal.Request{Type: "checkpoint", Ref: "cp-1"}, signal.ReasonPermissionDenied},
		{"acknowledged is runtime-only", taxonomy.RoleCoordinator, signal.Request{Type: "acknowledged", Ref: "env-1"}, signal.ReasonPermissionDenied},
		{"integrate is runtime-only", taxonomy.RoleCoordinator, signal.Request{Type: "integrate"}, signal.ReasonPermissionDenied},
		// Coordinator operations, refused even for the coordinator.
		{"suspend by coordinator", taxonomy.RoleCoordinator, signal.Request{Type: "suspend", Reason: "x"}, signal.ReasonPermissionDenied},
		{"migrate by coordinator", taxonomy.RoleCoordinator, signal.Request{Type: "migrate", Reason: "x"}, signal.ReasonPermissionDenied},
		{"suspend by worker", taxonomy.RoleWorker, signal.Request{Type: "suspend"}, signal.ReasonPermissionDenied},
		// Outside the closed set.
		{"paused", taxonomy.RoleWorker, signal.Request{Type: "paused"}, signal.ReasonInvalidType},
		{"wrong case", taxonomy.RoleWorker, signal.Request{Type: "Ready"}, signal.ReasonInvalidType},
		{"padded", taxonomy.RoleWorker, signal.Request{Type: " ready"}, signal.ReasonInvalidType},
		{"empty", taxonomy.RoleWorker, signal.Request{}, signal.ReasonInvalidType},
		{"unknown type without reason", taxonomy.RoleWorker, signal.Request{Type: "stalled"}, signal.ReasonInvalidType},
		{"unknown type, unknown role", "ghost", signal.Request{Type: "paused"}, signal.ReasonInvalidType},
		// Reason required for blocked, failed and escalation.
		{"blocked without reason", taxonomy.RoleWorker, signal.Request{Type: "blocked"}, signal.ReasonInvalidStructure},
		{"failed without reason", taxonomy.RoleWorker, signal.Request{Type: "failed", Ref: "x"}, signal.ReasonInvalidStructure},
		{"escalation without reason", taxonomy.RoleWorker, signal.Request{Type: "escalation"}, signal.ReasonInvalidStructure},
		{"observer escalation without reason", taxonomy.RoleObserver, signal.Request{Type: "escalation"}, signal.ReasonInvalidStructure},
		{"coordinator failed without reason", taxonomy.RoleCoordinator, signal.Request{Type: "failed"}, signal.ReasonInvalidStructure},
		// Permission is checked before the reason.
		{"coordinator blocked without reason", taxonomy.RoleCoordinator, signal.Request{Type: "blocked"}, signal.ReasonPermissionDenied},
		{"observer blocked without reason", taxonomy.RoleObserver, signal.Request{Type: "blocked"}, signal.ReasonPermissionDenied},
		{"unknown role", "ghost", signal.Request{Type: "ready"}, signal.ReasonPermissionDenied},
		// Reason optional elsewhere.
		{"ready without reason", taxonomy.RoleWorker, signal.Request{Type: "ready"}, ""},
		{"complete without reason", taxonomy.RoleObserver, signal.Request{Type: "complete"}, ""},
		{"started with reason and ref", taxonomy.RoleCoordinator, signal.Request{Type: "started", Reason: "go", Ref: "x"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := signal.Check(tax, tt.role, tt.req)
			if got := reasonOf(t, err); got != tt.want {
				t.Errorf("Check(%s, %+v) = %v, want reason %q", tt.role, tt.req, err, tt.want)
			}
		})
	}
}

func TestSignal_ExactlyElevenTypes(t *testing.T) {
	want := []taxonomy.SignalType{
		"ready", "started", "blocked", "checkpoint", "complete", "failed",
		"integrate", "acknowledged", "escalation", "suspend", "migrate",
	}
	got := taxonomy.SignalTypes()
	if !slices.Equal(got, want) {
		t.Fatalf("SignalTypes() = %v, want %v", got, want)
	}
	tax := taxonomy.Base()
	for _, typ := range got {
		if !typ.Valid() {
			t.Errorf("%s.Valid() = false", typ)
		}
		for _, role := range []string{taxonomy.RoleCoordinator, taxonomy.RoleWorker, taxonomy.RoleObserver} {
			if r := reasonOf(t, signal.Check(tax, role, signal.Request{Type: string(typ), Reason: "r"})); r == signal.ReasonInvalidType {
				t.Errorf("Check(%s, %s) = invalid_type for one of the eleven types", role, typ)
			}
		}
	}

	// The three classifications partition as the spec says.
	var reason, runtimeOnly, coordinatorOnly []taxonomy.SignalType
	for _, typ := range got {
		if signal.RequiresReason(typ) {
			reason = append(reason, typ)
		}
		if signal.RuntimeOnly(typ) {
			runtimeOnly = append(runtimeOnly, typ)
		}
		if signal.CoordinatorOnly(typ) {
			coordinatorOnly = append(coordinatorOnly, typ)
		}
	}
	checks := []struct {
		name      string
		got, want []taxonomy.SignalType
	}{
		{"RequiresReason", reason, []taxonomy.SignalType{"blocked", "failed", "escalation"}},
		{"RuntimeOnly", runtimeOnly, []taxonomy.SignalType{"checkpoint", "integrate", "acknowledged"}},
		{"CoordinatorOnly", coordinatorOnly, []taxonomy.SignalType{"suspend", "migrate"}},
	}
	for _, c := range checks {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("types with %s = %v, want %v", c.name, c.got, c.want)
		}
	}

	// Near misses are not signal types.
	for _, typ := range []taxonomy.SignalType{"", "paused", "Ready", "READY", "resume", "abort", "ack", "complete ", "checkpoint_created"} {
		if typ.Valid() {
			t.Errorf("%q.Valid() = true, want false", typ)
		}
		if r := reasonOf(t, signal.Check(tax, taxonomy.RoleWorker, signal.Request{Type: string(typ), Reason: "r"})); r != signal.ReasonInvalidType {
			t.Errorf("Check(worker, %q) reason = %q, want invalid_type", typ, r)
		}
	}
}

func TestSubject(t *testing.T) {
	parent := "01JDAXQ5Z0AAAAAAAAAAAAAAAA"
	tests := []struct {
		name string
		s    signal.Signal
		want string
	}{
		{"delivered", signal.Signal{From: "01JDAXQ5Z1BBBBBBBBBBBBBBBB", Type: taxonomy.SignalComplete, DeliveredTo: &parent},
			"wacp.v1.sig.01JDAXQ5Z0AAAAAAAAAAAAAAAA.01JDAXQ5Z1BBBBBBBBBBBBBBBB.complete"},
		{"checkpoint", signal.Signal{From: "child", Type: taxonomy.SignalCheckpoint, DeliveredTo: &parent},
			"wacp.v1.sig.01JDAXQ5Z0AAAAAAAAAAAAAAAA.child.checkpoint"},
		{"root signal is not published", signal.Signal{From: parent, Type: taxonomy.SignalStarted}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := signal.Subject(tt.s); got != tt.want {
				t.Errorf("Subject(%+v) = %q, want %q", tt.s, got, tt.want)
			}
		})
	}
}

func TestSignalRecordJSON(t *testing.T) {
	// The wire record (contract §3.2): every field present, reason, ref and
	// delivered_to null when unset.
	to, reason := "01JDAXQ5Z0AAAAAAAAAAAAAAAA", "waiting"
	tests := []struct {
		name string
		s    signal.Signal
		want string
	}{
		{"root", signal.Signal{ID: "s1", From: to, Type: taxonomy.SignalStarted, Timestamp: "t1", DeliveredAt: "t1"},
			`{"id":"s1","from":"01JDAXQ5Z0AAAAAAAAAAAAAAAA","type":"started","reason":null,"ref":null,"timestamp":"t1","delivered_to":null,"delivered_at":"t1"}`},
		{"delivered", signal.Signal{ID: "s2", From: "c", Type: taxonomy.SignalBlocked, Reason: &reason, Timestamp: "t1", DeliveredTo: &to, DeliveredAt: "t2"},
			`{"id":"s2","from":"c","type":"blocked","reason":"waiting","ref":null,"timestamp":"t1","delivered_to":"01JDAXQ5Z0AAAAAAAAAAAAAAAA","delivered_at":"t2"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.s)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Errorf("json.Marshal(%+v) = %s, want %s", tt.s, b, tt.want)
			}
		})
	}
}

func TestRejection(t *testing.T) {
	err := signal.Reject(signal.ReasonInvalidTransition, "workspace %s is %s", "ws-a", "closed")
	if got, want := err.Error(), "signal: rejected (invalid_transition): workspace ws-a is closed"; got != want {
		t.Errorf("Reject(...).Error() = %q, want %q", got, want)
	}
	if !errors.Is(err, signal.ErrRejected) {
		t.Errorf("errors.Is(Reject(...), ErrRejected) = false, want true")
	}
}
