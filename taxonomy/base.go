package taxonomy

import "sync"

// BaseID and BaseVersion identify the base taxonomy: the protocol's built-in
// vocabulary with nothing registered.
const (
	BaseID      = "wacp-base"
	BaseVersion = "0.1.0"
)

// BaseDocument is the canonical encoding of the base taxonomy. Base().Checksum()
// is the BLAKE3 hash of exactly these bytes (no trailing newline).
const BaseDocument = `{"id":"wacp-base","version":"0.1.0","protocol_version":"0.1"}`

// A row is one permission matrix row: sender may send typ to receiver.
type row struct{ sender, typ, receiver string }

// baseRows is the base permission matrix (Roles spec §6). It is never modified.
var baseRows = []row{
	{RoleCoordinator, EnvelopeDirective, RoleWorker},
	{RoleCoordinator, EnvelopeFeedback, RoleWorker},
	{RoleWorker, EnvelopeQuery, RoleCoordinator},
}

// baseEmit is the signal permission table (Roles spec §6). Derived roles emit
// exactly their base role's set.
var baseEmit = map[string]map[SignalType]bool{
	RoleCoordinator: set(SignalReady, SignalStarted, SignalFailed, SignalIntegrate, SignalAcknowledged),
	RoleWorker:      set(SignalReady, SignalStarted, SignalBlocked, SignalCheckpoint, SignalComplete, SignalFailed, SignalEscalation),
	RoleObserver:    set(SignalReady, SignalStarted, SignalComplete, SignalFailed, SignalEscalation),
}

// baseCreate is the checkpoint permission table (Roles spec §6).
var baseCreate = map[string][]string{
	RoleCoordinator: nil,
	RoleWorker:      {CheckpointArtifact},
	RoleObserver:    {CheckpointObservation},
}

func set[T comparable](vs ...T) map[T]bool {
	m := make(map[T]bool, len(vs))
	for _, v := range vs {
		m[v] = true
	}
	return m
}

var base = sync.OnceValue(func() *Taxonomy {
	root, err := DecodeJSON([]byte(BaseDocument))
	var t *Taxonomy
	if err == nil {
		t, err = FromNode(BaseID, []byte(BaseDocument), root)
	}
	if err != nil {
		panic("taxonomy: base document invalid: " + err.Error())
	}
	return t
})

// Base returns the base taxonomy: the three base roles, the three base
// envelope types, the two base checkpoint types, and nothing else. Its ID is
// BaseID, its Version BaseVersion and its Checksum the hash of BaseDocument.
// Every call returns the same immutable value.
func Base() *Taxonomy { return base() }
