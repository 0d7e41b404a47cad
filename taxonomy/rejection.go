package taxonomy

import "fmt"

// Reason is why the protocol refuses a checkpoint, an envelope or a
// signal: a WACP rejection reason, which is also its wire error code.
type Reason string

// Rejection is a refusal by the protocol with its reason: the one type of
// the checkpoint, envelope and signal rules (each package names its
// reasons and its sentinel). Use errors.As to get it; it unwraps to the
// sentinel of the package that refused (checkpointchain.ErrRejected,
// envelope.ErrRejected, signal.ErrRejected).
type Rejection struct {
	Reason  Reason
	Message string
	// Of is the refusing package's sentinel error.
	Of error
}

// Reject returns a Rejection unwrapping to of.
func Reject(of error, reason Reason, format string, args ...any) *Rejection {
	return &Rejection{Reason: reason, Message: fmt.Sprintf(format, args...), Of: of}
}

func (r *Rejection) Error() string {
	if r.Of == nil {
		return fmt.Sprintf("rejected (%s): %s", r.Reason, r.Message)
	}
	return fmt.Sprintf("%v (%s): %s", r.Of, r.Reason, r.Message)
}

// Unwrap returns the refusing package's sentinel.
func (r *Rejection) Unwrap() error { return r.Of }
