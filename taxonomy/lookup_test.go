package taxonomy

import (
	"slices"
	"testing"
)

var baseEnvelopeTypes = []string{EnvelopeDirective, EnvelopeFeedback, EnvelopeQuery}

// TestLookup_BaseMatrixExactlyThreeRows checks every (sender, base type,
// receiver) over the base roles: exactly the three rows of Roles spec §6.
func TestLookup_BaseMatrixExactlyThreeRows(t *testing.T) {
	want := map[[3]string]bool{
		{RoleCoordinator, EnvelopeDirective, RoleWorker}: true,
		{RoleCoordinator, EnvelopeFeedback, RoleWorker}:  true,
		{RoleWorker, EnvelopeQuery, RoleCoordinator}:     true,
	}
	for _, tax := range []*Taxonomy{Base(), mustLoad(t, validFile("empty.yaml"))} {
		n := 0
		for _, from := range BaseRoles() {
			for _, typ := range baseEnvelopeTypes {
				for _, to := range BaseRoles() {
					got := tax.CanSend(from, typ, to)
					if got {
						n++
					}
					if w := want[[3]string{from, typ, to}]; got != w {
						t.Errorf("CanSend(%s, %s, %s) = %v, want %v", from, typ, to, got, w)
					}
				}
			}
		}
		if n != 3 {
			t.Errorf("base matrix has %d rows, want 3", n)
		}
	}
}

func TestLookup_EmitSets(t *testing.T) {
	want := map[string][]SignalType{
		RoleCoordinator: {SignalReady, SignalStarted, SignalFailed, SignalIntegrate, SignalAcknowledged},
		RoleWorker:      {SignalReady, SignalStarted, SignalBlocked, SignalCheckpoint, SignalComplete, SignalFailed, SignalEscalation},
		RoleObserver:    {SignalReady, SignalStarted, SignalComplete, SignalFailed, SignalEscalation},
		"reviewer":      {SignalReady, SignalStarted, SignalBlocked, SignalCheckpoint, SignalComplete, SignalFailed, SignalEscalation},
		"nobody":        nil,
	}
	tax := mustLoad(t, validFile("reviewer.yaml"))
	for role, signals := range want {
		for _, s := range SignalTypes() {
			if got, w := tax.CanEmit(role, s), slices.Contains(signals, s); got != w {
				t.Errorf("CanEmit(%s, %s) = %v, want %v", role, s, got, w)
			}
		}
		if tax.CanEmit(role, "ping") {
			t.Errorf("CanEmit(%s, ping) = true, want false", role)
		}
	}
	auditor := mustLoad(t, validFile("senior_auditor.yaml"))
	for _, s := range SignalTypes() {
		if got, w := auditor.CanEmit("auditor", s), auditor.CanEmit(RoleObserver, s); got != w {
			t.Errorf("CanEmit(auditor, %s) = %v, want observer's %v", s, got, w)
		}
	}
}

func TestLookup_Checkpoints(t *testing.T) {
	tests := []struct {
		file, role, typ string
		want            bool
	}{
		{"reviewer.yaml", "reviewer", "review", true},
		{"reviewer.yaml", "reviewer", CheckpointArtifact, false},
		{"reviewer.yaml", "reviewer", CheckpointObservation, false},
		{"reviewer.yaml", RoleWorker, CheckpointArtifact, true},
		{"reviewer.yaml", RoleWorker, "review", false},
		{"reviewer.yaml", RoleObserver, CheckpointObservation, true},
		{"reviewer.yaml", RoleCoordinator, CheckpointArtifact, false},
		{"reviewer.yaml", RoleCoordinator, "review", false},
		{"reviewer.yaml", "nobody", CheckpointArtifact, false},
		{"reviewer.yaml", "reviewer", "nothing", false},
		{"senior_auditor.yaml", "senior_worker", CheckpointArtifact, true},
		{"senior_auditor.yaml", "senior_worker", "decision", true},
		{"senior_auditor.yaml", "auditor", CheckpointObservation, true},
		{"senior_auditor.yaml", "auditor", "audit_finding", true},
		{"senior_auditor.yaml", "auditor", "decision", false},
		{"senior_auditor.yaml", RoleWorker, "decision", false},
		{"map_roles.yaml", "analyst", CheckpointArtifact, true}, // no override: base create set kept
		{"map_roles.yaml", "analyst", "analysis", true},
		{"map_roles.yaml", "watcher", CheckpointObservation, true},
		{"list_roles.yaml", "scribe", "minutes", true},
		{"list_roles.yaml", RoleObserver, "minutes", true}, // permitted_roles names a base role
		{"list_roles.yaml", "tester", CheckpointArtifact, true},
	}
	for _, tt := range tests {
		tax := mustLoad(t, validFile(tt.file))
		if got := tax.CanCreateCheckpoint(tt.role, tt.typ); got != tt.want {
			t.Errorf("%s: CanCreateCheckpoint(%s, %s) = %v, want %v", tt.file, tt.role, tt.typ, got, tt.want)
		}
	}
}

func TestLookup_Send(t *testing.T) {
	tests := []struct {
		file, from, typ, to string
		want                bool
	}{
		{"reviewer.yaml", "reviewer", "report", RoleCoordinator, true},
		{"reviewer.yaml", "reviewer", EnvelopeQuery, RoleCoordinator, false}, // removed
		{"reviewer.yaml", RoleWorker, EnvelopeQuery, RoleCoordinator, true},
		{"reviewer.yaml", RoleWorker, "report", RoleCoordinator, false},
		{"reviewer.yaml", RoleCoordinator, EnvelopeDirective, "reviewer", true}, // reviewer is a worker
		{"reviewer.yaml", RoleCoordinator, EnvelopeFeedback, "reviewer", true},
		{"reviewer.yaml", "reviewer", "report", RoleWorker, false},
		{"reviewer.yaml", "reviewer", "unknown", RoleCoordinator, false},
		{"reviewer.yaml", "nobody", EnvelopeQuery, RoleCoordinator, false},
		{"reviewer.yaml", RoleWorker, EnvelopeQuery, "nobody", false},
		{"senior_auditor.yaml", "senior_worker", EnvelopeQuery, RoleCoordinator, true}, // inherited
		{"senior_auditor.yaml", RoleCoordinator, EnvelopeDirective, "auditor", false},  // auditor is an observer
		{"senior_auditor.yaml", "auditor", EnvelopeQuery, RoleCoordinator, false},
		{"map_roles.yaml", "analyst", "finding", RoleCoordinator, true},
		{"map_roles.yaml", "watcher", "finding", RoleCoordinator, true},
		{"map_roles.yaml", RoleObserver, "finding", RoleCoordinator, false},
		{"list_roles.yaml", "tester", "verdict", RoleCoordinator, true},
		{"list_roles.yaml", "tester", EnvelopeQuery, RoleCoordinator, false},
		{"list_roles.yaml", RoleCoordinator, "verdict", "scribe", true},
		{"list_roles.yaml", RoleCoordinator, "verdict", RoleObserver, false},
	}
	for _, tt := range tests {
		tax := mustLoad(t, validFile(tt.file))
		if got := tax.CanSend(tt.from, tt.typ, tt.to); got != tt.want {
			t.Errorf("%s: CanSend(%s, %s, %s) = %v, want %v", tt.file, tt.from, tt.typ, tt.to, got, tt.want)
		}
	}
}

func TestLookup_RolesAndTypes(t *testing.T) {
	tax := mustLoad(t, validFile("reviewer.yaml"))
	for _, tt := range []struct{ role, base string }{
		{RoleCoordinator, RoleCoordinator}, {RoleWorker, RoleWorker}, {RoleObserver, RoleObserver},
		{"reviewer", RoleWorker}, {"report", ""}, {"", ""},
	} {
		if got := tax.BaseOf(tt.role); got != tt.base {
			t.Errorf("BaseOf(%q) = %q, want %q", tt.role, got, tt.base)
		}
		if got := tax.HasRole(tt.role); got != (tt.base != "") {
			t.Errorf("HasRole(%q) = %v, want %v", tt.role, got, tt.base != "")
		}
	}
	if !tax.HasEnvelopeType("report") || tax.HasEnvelopeType("review") {
		t.Errorf("HasEnvelopeType(report, review) = %v, %v, want true, false", tax.HasEnvelopeType("report"), tax.HasEnvelopeType("review"))
	}
	if !tax.HasCheckpointType("review") || tax.HasCheckpointType("report") {
		t.Errorf("HasCheckpointType(review, report) = %v, %v, want true, false", tax.HasCheckpointType("review"), tax.HasCheckpointType("report"))
	}
	if got := tax.ReadScopes("reviewer"); !slices.Equal(got, []string{"assigned_workspace"}) {
		t.Errorf("ReadScopes(reviewer) = %v, want [assigned_workspace]", got)
	}
	if got := tax.ReadScopes(RoleWorker); got != nil {
		t.Errorf("ReadScopes(worker) = %v, want nil", got)
	}
}

func TestSignalTypes(t *testing.T) {
	want := []SignalType{"ready", "started", "blocked", "checkpoint", "complete", "failed",
		"integrate", "acknowledged", "escalation", "suspend", "migrate"}
	got := SignalTypes()
	if !slices.Equal(got, want) {
		t.Errorf("SignalTypes() = %v, want %v", got, want)
	}
	got[0] = "mutated"
	if SignalTypes()[0] != SignalReady {
		t.Errorf("SignalTypes() shares its backing array")
	}
	for _, s := range want {
		if !s.Valid() {
			t.Errorf("%q.Valid() = false, want true", s)
		}
	}
	for _, s := range []SignalType{"", "Ready", "ping", "checkpoint "} {
		if s.Valid() {
			t.Errorf("%q.Valid() = true, want false", s)
		}
	}
}
