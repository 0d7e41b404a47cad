package runtime

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/wacpd/wacpd/casstore"
	"github.com/wacpd/wacpd/checkpointchain"
	"github.com/wacpd/wacpd/internal/strictjson"
	"github.com/wacpd/wacpd/taxonomy"
	"github.com/wacpd/wacpd/trail/traillog"
	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

// These errors can be returned by Engine methods. Test with errors.Is.
var (
	// ErrClosed is returned after Close.
	ErrClosed = errors.New("runtime: engine closed")
	// ErrNotTaken wraps the context's cause when a write operation's
	// context ended before the committer took it: nothing of it ran. Once
	// taken, an operation completes whatever its context does.
	ErrNotTaken = errors.New("runtime: not taken before the context ended")
	// ErrTaxonomyChanged is returned by Open when the data dir's run was
	// started with another taxonomy (its checksum is in trail entry #1).
	ErrTaxonomyChanged = errors.New("runtime: taxonomy differs from the run's")
	// ErrRootMismatch is returned by Open when Config.RootID is set and
	// the data dir's root workspace has another id: the data dir belongs
	// to another deployment.
	ErrRootMismatch = errors.New("runtime: root workspace differs from the deployment's")
	// ErrStorage wraps a failed durable write: nothing of the operation
	// happened.
	ErrStorage = errors.New("runtime: storage write failed")
	// ErrTrailCorrupt is returned by Open when the trail fails the
	// integrity check at start and has no valid prefix to keep: its first
	// entry fails, the damage lies inside the latest signed tree head
	// (dropping signed entries would contradict the signature), or the
	// signed tree head itself is unreadable. The data dir is left as it was
	// (docs/operations.md, Recovery).
	ErrTrailCorrupt = errors.New("runtime: trail failed its integrity check")
)

// Error is an engine refusal with its wire code. It unwraps to the
// package-level cause when there is one.
type Error struct {
	Code    string
	Message string
	Err     error
	// Details go into the wire error's details (a gate_pending refusal
	// names its gate).
	Details map[string]any
}

func (e *Error) Error() string { return fmt.Sprintf("runtime: %s: %s", e.Code, e.Message) }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Refuse returns the typed refusal code with a formatted message.
func Refuse(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Code returns the wire error code of err: the protocol's rejection reason
// for rejections, not_found, unavailable for storage failures, internal for
// anything unexpected.
func Code(err error) string {
	if err == nil {
		return ""
	}
	if code, _, ok := typed(err); ok {
		return code
	}
	switch {
	case errors.Is(err, workspace.ErrInvalidTransition):
		return wire.CodeInvalidTransition
	case errors.Is(err, workspace.ErrInvalidRequest), errors.Is(err, workspace.ErrContainment):
		return wire.CodeInvalidStructure
	case errors.Is(err, workspace.ErrParentTerminal):
		return wire.CodeTargetTerminal
	case errors.Is(err, workspace.ErrNotFound), errors.Is(err, checkpointchain.ErrNotFound),
		errors.Is(err, traillog.ErrNotFound), errors.Is(err, casstore.ErrNotFound):
		return wire.CodeNotFound
	case errors.Is(err, casstore.ErrTooLarge):
		return wire.CodeTooLarge
	case errors.Is(err, ErrStorage), errors.Is(err, ErrClosed), errors.Is(err, ErrNotTaken),
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return wire.CodeUnavailable
	}
	return wire.CodeInternal
}

// Message returns the human part of err for an error reply: a rejection's
// or refusal's own message, without the package prefixes and the code that
// the reply carries separately.
func Message(err error) string {
	if _, msg, ok := typed(err); ok {
		return msg
	}
	return err.Error()
}

// Details returns the details of the refusal err carries, nil when none.
func Details(err error) map[string]any {
	var re *Error
	if errors.As(err, &re) {
		return re.Details
	}
	return nil
}

// typed returns the code and message of the refusal err carries: a
// runtime Error or a protocol Rejection (of a checkpoint, envelope or
// signal).
func typed(err error) (code, msg string, ok bool) {
	var (
		re *Error
		rj *taxonomy.Rejection
		rc *CarpError
	)
	switch {
	case errors.As(err, &re):
		return re.Code, re.Message, true
	case errors.As(err, &rc):
		return WireCode(rc.Err.Code), rc.Err.Message, true
	case errors.As(err, &rj):
		return string(rj.Reason), rj.Message, true
	}
	return "", "", false
}

// Decode reads a small request body strictly: anything but one JSON object,
// invalid UTF-8, nesting deeper than taxonomy.MaxNesting, unknown fields,
// wrong types and trailing data are invalid_structure.
func Decode(body []byte, v any) error {
	if !utf8.Valid(body) {
		return Refuse(wire.CodeInvalidStructure, "request body is not valid UTF-8")
	}
	if taxonomy.Nesting(body) > taxonomy.MaxNesting {
		return Refuse(wire.CodeInvalidStructure, "request body nests objects and arrays deeper than %d levels", taxonomy.MaxNesting)
	}
	if err := strictjson.Decode(body, v); err != nil {
		return Refuse(wire.CodeInvalidStructure, "malformed request: %v", err)
	}
	return nil
}
