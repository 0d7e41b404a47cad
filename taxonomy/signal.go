package taxonomy

// SignalType is one of the eleven protocol signal types (PROTOCOL §12.5). The
// set is closed: a taxonomy cannot add to it. It is persisted as its string.
type SignalType string

// The eleven signal types, in spec order.
const (
	SignalReady        SignalType = "ready"
	SignalStarted      SignalType = "started"
	SignalBlocked      SignalType = "blocked"
	SignalCheckpoint   SignalType = "checkpoint"
	SignalComplete     SignalType = "complete"
	SignalFailed       SignalType = "failed"
	SignalIntegrate    SignalType = "integrate"
	SignalAcknowledged SignalType = "acknowledged"
	SignalEscalation   SignalType = "escalation"
	SignalSuspend      SignalType = "suspend"
	SignalMigrate      SignalType = "migrate"
)

// SignalTypes returns the eleven signal types in spec order. The caller owns
// the returned slice.
func SignalTypes() []SignalType {
	return []SignalType{
		SignalReady, SignalStarted, SignalBlocked, SignalCheckpoint, SignalComplete, SignalFailed,
		SignalIntegrate, SignalAcknowledged, SignalEscalation, SignalSuspend, SignalMigrate,
	}
}

// Valid reports whether s is one of the eleven signal types.
func (s SignalType) Valid() bool {
	switch s {
	case SignalReady, SignalStarted, SignalBlocked, SignalCheckpoint, SignalComplete, SignalFailed,
		SignalIntegrate, SignalAcknowledged, SignalEscalation, SignalSuspend, SignalMigrate:
		return true
	}
	return false
}

// String returns s as persisted.
func (s SignalType) String() string { return string(s) }
