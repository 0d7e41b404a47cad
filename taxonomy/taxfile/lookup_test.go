package taxfile

import (
	"slices"
	"testing"

	"github.com/wacpd/wacpd/taxonomy"
)

var baseEnvelopeTypes = []string{taxonomy.EnvelopeDirective, taxonomy.EnvelopeFeedback, taxonomy.EnvelopeQuery}

// TestLookup_BaseMatrixExactlyThreeRows checks every (sender, base type,
// receiver) over the base roles: exactly the three rows of Roles spec §6.
func TestLookup_BaseMatrixExactlyThreeRows(t *testing.T) {
	want := map[[3]string]bool{
		{taxonomy.RoleCoordinator, taxonomy.EnvelopeDirective, taxonomy.RoleWorker}: true,
		{taxonomy.RoleCoordinator, taxonomy.EnvelopeFeedback, taxonomy.RoleWorker}:  true,
		{taxonomy.RoleWorker, taxonomy.EnvelopeQuery, taxonomy.RoleCoordinator}:     true,
	}
	for _, tax := range []*taxonomy.Taxonomy{taxonomy.Base(), mustLoad(t, validFile("empty.yaml"))} {
		n := 0
		for _, from := range taxonomy.BaseRoles() {
			for _, typ := range baseEnvelopeTypes {
				for _, to := range taxonomy.BaseRoles() {
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
	want := map[string][]taxonomy.SignalType{
		taxonomy.RoleCoordinator: {taxonomy.SignalReady, taxonomy.SignalStarted, taxonomy.SignalFailed, taxonomy.SignalIntegrate, taxonomy.SignalAcknowledged},
		taxonomy.RoleWorker:      {taxonomy.SignalReady, taxonomy.SignalStarted, taxonomy.SignalBlocked, taxonomy.SignalCheckpoint, taxonomy.SignalComplete, taxonomy.SignalFailed, taxonomy.SignalEscalation},
		taxonomy.RoleObserver:    {taxonomy.SignalReady, taxonomy.SignalStarted, taxonomy.SignalComplete, taxonomy.SignalFailed, taxonomy.SignalEscalation},
		"reviewer":               {taxonomy.SignalReady, taxonomy.SignalStarted, taxonomy.SignalBlocked, taxonomy.SignalCheckpoint, taxonomy.SignalComplete, taxonomy.SignalFailed, taxonomy.SignalEscalation},
		"nobody":                 nil,
	}
	tax := mustLoad(t, validFile("reviewer.yaml"))
	for role, signals := range want {
		for _, s := range taxonomy.SignalTypes() {
			if got, w := tax.CanEmit(role, s), slices.Contains(signals, s); got != w {
				t.Errorf("CanEmit(%s, %s) = %v, want %v", role, s, got, w)
			}
		}
		if tax.CanEmit(role, "ping") {
			t.Errorf("CanEmit(%s, ping) = true, want false", role)
		}
	}
	auditor := mustLoad(t, validFile("senior_auditor.yaml"))
	for _, s := range taxonomy.SignalTypes() {
		if got, w := auditor.CanEmit("auditor", s), auditor.CanEmit(taxonomy.RoleObserver, s); got != w {
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
		{"reviewer.yaml", "reviewer", taxonomy.CheckpointArtifact, false},
		{"reviewer.yaml", "reviewer", taxonomy.CheckpointObservation, false},
		{"reviewer.yaml", taxonomy.RoleWorker, taxonomy.CheckpointArtifact, true},
		{"reviewer.yaml", taxonomy.RoleWorker, "review", false},
		{"reviewer.yaml", taxonomy.RoleObserver, taxonomy.CheckpointObservation, true},
		{"reviewer.yaml", taxonomy.RoleCoordinator, taxonomy.CheckpointArtifact, false},
		{"reviewer.yaml", taxonomy.RoleCoordinator, "review", false},
		{"reviewer.yaml", "nobody", taxonomy.CheckpointArtifact, false},
		{"reviewer.yaml", "reviewer", "nothing", false},
		{"senior_auditor.yaml", "senior_worker", taxonomy.CheckpointArtifact, true},
		{"senior_auditor.yaml", "senior_worker", "decision", true},
		{"senior_auditor.yaml", "auditor", taxonomy.CheckpointObservation, true},
		{"senior_auditor.yaml", "auditor", "audit_finding", true},
		{"senior_auditor.yaml", "auditor", "decision", false},
		{"senior_auditor.yaml", taxonomy.RoleWorker, "decision", false},
		{"map_roles.yaml", "analyst", taxonomy.CheckpointArtifact, true}, // no override: base create set kept
		{"map_roles.yaml", "analyst", "analysis", true},
		{"map_roles.yaml", "watcher", taxonomy.CheckpointObservation, true},
		{"list_roles.yaml", "scribe", "minutes", true},
		{"list_roles.yaml", taxonomy.RoleObserver, "minutes", true}, // permitted_roles names a base role
		{"list_roles.yaml", "tester", taxonomy.CheckpointArtifact, true},
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
		{"reviewer.yaml", "reviewer", "report", taxonomy.RoleCoordinator, true},
		{"reviewer.yaml", "reviewer", taxonomy.EnvelopeQuery, taxonomy.RoleCoordinator, false}, // removed
		{"reviewer.yaml", taxonomy.RoleWorker, taxonomy.EnvelopeQuery, taxonomy.RoleCoordinator, true},
		{"reviewer.yaml", taxonomy.RoleWorker, "report", taxonomy.RoleCoordinator, false},
		{"reviewer.yaml", taxonomy.RoleCoordinator, taxonomy.EnvelopeDirective, "reviewer", true}, // reviewer is a worker
		{"reviewer.yaml", taxonomy.RoleCoordinator, taxonomy.EnvelopeFeedback, "reviewer", true},
		{"reviewer.yaml", "reviewer", "report", taxonomy.RoleWorker, false},
		{"reviewer.yaml", "reviewer", "unknown", taxonomy.RoleCoordinator, false},
		{"reviewer.yaml", "nobody", taxonomy.EnvelopeQuery, taxonomy.RoleCoordinator, false},
		{"reviewer.yaml", taxonomy.RoleWorker, taxonomy.EnvelopeQuery, "nobody", false},
		{"senior_auditor.yaml", "senior_worker", taxonomy.EnvelopeQuery, taxonomy.RoleCoordinator, true}, // inherited
		{"senior_auditor.yaml", taxonomy.RoleCoordinator, taxonomy.EnvelopeDirective, "auditor", false},  // auditor is an observer
		{"senior_auditor.yaml", "auditor", taxonomy.EnvelopeQuery, taxonomy.RoleCoordinator, false},
		{"map_roles.yaml", "analyst", "finding", taxonomy.RoleCoordinator, true},
		{"map_roles.yaml", "watcher", "finding", taxonomy.RoleCoordinator, true},
		{"map_roles.yaml", taxonomy.RoleObserver, "finding", taxonomy.RoleCoordinator, false},
		{"list_roles.yaml", "tester", "verdict", taxonomy.RoleCoordinator, true},
		{"list_roles.yaml", "tester", taxonomy.EnvelopeQuery, taxonomy.RoleCoordinator, false},
		{"list_roles.yaml", taxonomy.RoleCoordinator, "verdict", "scribe", true},
		{"list_roles.yaml", taxonomy.RoleCoordinator, "verdict", taxonomy.RoleObserver, false},
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
		{taxonomy.RoleCoordinator, taxonomy.RoleCoordinator}, {taxonomy.RoleWorker, taxonomy.RoleWorker}, {taxonomy.RoleObserver, taxonomy.RoleObserver},
		{"reviewer", taxonomy.RoleWorker}, {"report", ""}, {"", ""},
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
	if got := tax.ReadScopes(taxonomy.RoleWorker); got != nil {
		t.Errorf("ReadScopes(worker) = %v, want nil", got)
	}
}

func TestSignalTypes(t *testing.T) {
	want := []taxonomy.SignalType{"ready", "started", "blocked", "checkpoint", "complete", "failed",
		"integrate", "acknowledged", "escalation", "suspend", "migrate"}
	got := taxonomy.SignalTypes()
	if !slices.Equal(got, want) {
		t.Errorf("SignalTypes() = %v, want %v", got, want)
	}
	got[0] = "mutated"
	if taxonomy.SignalTypes()[0] != taxonomy.SignalReady {
		t.Errorf("SignalTypes() shares its backing array")
	}
	for _, s := range want {
		if !s.Valid() {
			t.Errorf("%q.Valid() = false, want true", s)
		}
	}
	for _, s := range []taxonomy.SignalType{"", "Ready", "ping", "checkpoint "} {
		if s.Valid() {
			t.Errorf("%q.Valid() = true, want false", s)
		}
	}
}
