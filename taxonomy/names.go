package taxonomy

// ProtocolVersion is the WACP protocol version this package implements. A
// taxonomy file's protocol_version must equal it.
const ProtocolVersion = "0.1"

// The three base roles (Roles spec §3). They are valid in every taxonomy and
// cannot be redefined.
const (
	RoleCoordinator = "coordinator"
	RoleWorker      = "worker"
	RoleObserver    = "observer"
)

// The two base checkpoint types (Checkpoint spec §2).
const (
	CheckpointArtifact    = "artifact"
	CheckpointObservation = "observation"
)

// The three base envelope types (Envelope spec §2).
const (
	EnvelopeDirective = "directive"
	EnvelopeFeedback  = "feedback"
	EnvelopeQuery     = "query"
)

// The capability actions a derived role may name in add and remove
// (TAXONOMY §3). ActionEmit is this package's extension; see the package
// documentation.
const (
	ActionSend    = "send"
	ActionReceive = "receive"
	ActionRead    = "read"
	ActionCreate  = "create"
	ActionEmit    = "emit"
)

// IsBaseRole reports whether name is one of the three base roles.
func IsBaseRole(name string) bool {
	return name == RoleCoordinator || name == RoleWorker || name == RoleObserver
}

// IsBaseEnvelopeType reports whether name is one of the three base envelope types.
func IsBaseEnvelopeType(name string) bool {
	return name == EnvelopeDirective || name == EnvelopeFeedback || name == EnvelopeQuery
}

// IsBaseCheckpointType reports whether name is one of the two base checkpoint types.
func IsBaseCheckpointType(name string) bool {
	return name == CheckpointArtifact || name == CheckpointObservation
}

// BaseRoles returns the three base roles in spec order.
func BaseRoles() []string {
	return []string{RoleCoordinator, RoleWorker, RoleObserver}
}

// coordinatorActions holds the coordinator-only protocol actions (Roles spec
// §3, §4, §5 rule 2), normalized by normalizeAction. No derived role may add a
// capability that names one of them, as action or as target.
var coordinatorActions = map[string]bool{
	"create_workspace":    true,
	"abort_workspace":     true,
	"assign_role":         true,
	"assign_roles":        true,
	"delegate":            true,
	"grant_delegate":      true,
	"grant_delegation":    true,
	"perform_integration": true,
	"manage_budget":       true,
	"manage_budgets":      true,
	"grant_visibility":    true,
	"configure_highway":   true,
}

// isCoordinatorAction reports whether s names a coordinator-only action, in
// any spelling that differs only in case or in '-', '.', ' ' for '_'.
func isCoordinatorAction(s string) bool {
	return coordinatorActions[normalizeAction(s)]
}

func normalizeAction(s string) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'A' && c <= 'Z':
			c += 'a' - 'A'
		case c == '-' || c == '.' || c == ' ' || c == '\t':
			c = '_'
		}
		b = append(b, c)
	}
	return string(b)
}
