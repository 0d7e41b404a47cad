package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/wacpd/wacpd/wire"
)

// These errors can be returned by Client methods and Dial. Test with errors.Is.
var (
	// ErrRefused is matched by every *Error whose code is a refusal by the
	// protocol (wire.LookupCode(code).Refusal): a rejection, a denial,
	// an unknown token. The wacp command exits 2 for it.
	ErrRefused = errors.New("client: refused by the daemon")
	// ErrPermission is wrapped by the *Error (code permission_denied) a
	// call returns when the NATS server refuses to carry it: the token may
	// not publish or subscribe there (wire-v1 §2), so the daemon never
	// sees the request.
	ErrPermission = errors.New("client: nats permission violation")
	// ErrUnreachable is wrapped when the daemon cannot be found or does
	// not answer: no wacpd.json, no server at the URL, no responders, a
	// timeout, a closed connection.
	ErrUnreachable = errors.New("client: daemon unreachable")
)

// Error is an error reply of the daemon (wire-v1 §3), or a refusal by the
// NATS server reported in the same form. It matches ErrRefused with
// errors.Is when its code is a protocol refusal.
type Error struct {
	Code    string         // wire error code, e.g. "invalid_parent"
	Status  int            // HTTP-like status from Nats-Service-Error-Code
	Message string         // human-readable explanation
	Details map[string]any // code-specific details; may be nil
	Err     error          // the cause when the error did not come from the daemon
	// Body is the error reply's body exactly as the daemon sent it
	// (wire.ErrorBody, or CARP's error envelope on the carp.* endpoints);
	// nil when the error did not come from the daemon.
	Body []byte
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Unwrap returns the cause, if any.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is ErrRefused and e's code is a refusal.
func (e *Error) Is(target error) bool {
	return target == ErrRefused && wire.LookupCode(e.Code).Refusal
}

// ExitCode returns the exit code of the wacp command for err (wire-v1 §1):
// 0 for nil, 2 for a refusal or a permission violation, 5 when the daemon
// is unreachable, 1 for anything else.
func ExitCode(err error) int {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrRefused), errors.Is(err, ErrPermission):
		return 2
	case errors.Is(err, ErrUnreachable):
		return 5
	}
	return 1
}

// Headers of a micro service error reply.
const (
	headerError     = wire.ErrorHeader     // the code string
	headerErrorCode = wire.ErrorCodeHeader // the status number
	// TokenHeader carries the caller's token on every request; the daemon
	// requires it when it runs on an external NATS server.
	TokenHeader = wire.TokenHeader
)

// replyError returns the *Error of an error reply, or nil for a success.
func replyError(m *nats.Msg) error {
	code := m.Header.Get(headerError)
	if code == "" {
		return nil
	}
	e := &Error{Code: code, Body: m.Data}
	e.Status, _ = strconv.Atoi(m.Header.Get(headerErrorCode))
	var body wire.ErrorBody
	if err := json.Unmarshal(m.Data, &body); err == nil && body.Error.Code != "" {
		e.Code, e.Message, e.Details = body.Error.Code, body.Error.Message, body.Error.Details
	} else {
		e.Message = string(m.Data)
	}
	if e.Status == 0 {
		e.Status = wire.LookupCode(e.Code).Status
	}
	return e
}

var permSubject = regexp.MustCompile(`(?i)(publish|subscription) to "([^"]+)"`)

// permissionError returns the error for a NATS permission violation, and
// the subject and operation it names ("" when it names none).
func permissionError(err error) (e *Error, op, subject string) {
	if m := permSubject.FindStringSubmatch(err.Error()); m != nil {
		op, subject = m[1], m[2]
	}
	msg := "the NATS server refused it: this token may not do that"
	if subject != "" {
		msg = fmt.Sprintf("the NATS server refused %s to %s: this token may not use that subject", strings.ToLower(op), subject)
	}
	return &Error{Code: "permission_denied", Status: 403, Message: msg, Err: ErrPermission}, op, subject
}

// transportError classifies an error of a NATS call on subject.
func transportError(ctx context.Context, subject string, err error) error {
	switch cause := context.Cause(ctx); {
	case cause == nil:
	case errors.Is(cause, ErrPermission):
		return cause
	case errors.Is(cause, errCallTimeout):
		return fmt.Errorf("%s: %w: no reply in time", subject, ErrUnreachable)
	}
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return fmt.Errorf("%s: %w: no wacpd serves this subject", subject, ErrUnreachable)
	case errors.Is(err, nats.ErrPermissionViolation):
		e, _, _ := permissionError(err)
		return e
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
		return fmt.Errorf("%s: %w: no reply in time", subject, ErrUnreachable)
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("%s: %w", subject, err)
	case errors.Is(err, nats.ErrConnectionClosed), errors.Is(err, nats.ErrConnectionDraining),
		errors.Is(err, nats.ErrDisconnected), errors.Is(err, nats.ErrInvalidConnection):
		return fmt.Errorf("%s: %w: %w", subject, ErrUnreachable, err)
	}
	return fmt.Errorf("%s: %w", subject, err)
}
