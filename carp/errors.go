package carp

import (
	"fmt"
	"net/http"
)

// Error codes (§5.1).
const (
	CodeInvalidRequest     = "INVALID_REQUEST"
	CodeInvalidVersion     = "INVALID_VERSION"
	CodeMissingField       = "MISSING_FIELD"
	CodeInvalidFormat      = "INVALID_FORMAT"
	CodeUnauthorized       = "UNAUTHORIZED"
	CodeForbidden          = "FORBIDDEN"
	CodeTokenExpired       = "TOKEN_EXPIRED"
	CodeAtlasNotFound      = "ATLAS_NOT_FOUND"
	CodeDomainNotFound     = "DOMAIN_NOT_FOUND"
	CodeResolutionExpired  = "RESOLUTION_EXPIRED"
	CodeResolutionNotFound = "RESOLUTION_NOT_FOUND"
	CodeActionNotPermitted = "ACTION_NOT_PERMITTED"
	CodeActionDenied       = "ACTION_DENIED"
	CodeConstraintViolated = "CONSTRAINT_VIOLATED"
	CodeExecutionFailed    = "EXECUTION_FAILED"
	CodeTimeout            = "TIMEOUT"
	CodeRateLimited        = "RATE_LIMITED"
	CodeInternalError      = "INTERNAL_ERROR"
	CodeServiceUnavailable = "SERVICE_UNAVAILABLE"
	// CodeCheckpointRequired (wacpd's extension, issue 17): a blocking
	// steward checkpoint holds the action back until the agent answers
	// it (carp.respond); error.details.checkpoint is the checkpoint.
	CodeCheckpointRequired = "CHECKPOINT_REQUIRED"
)

// Codes returns the error codes of §5.1 with the HTTP status each maps to
// on the HTTP transport.
func Codes() map[string]int {
	return map[string]int{
		CodeInvalidRequest:     http.StatusBadRequest,
		CodeInvalidVersion:     http.StatusBadRequest,
		CodeMissingField:       http.StatusBadRequest,
		CodeInvalidFormat:      http.StatusBadRequest,
		CodeUnauthorized:       http.StatusUnauthorized,
		CodeForbidden:          http.StatusForbidden,
		CodeTokenExpired:       http.StatusUnauthorized,
		CodeAtlasNotFound:      http.StatusNotFound,
		CodeDomainNotFound:     http.StatusNotFound,
		CodeResolutionExpired:  http.StatusGone,
		CodeResolutionNotFound: http.StatusNotFound,
		CodeActionNotPermitted: http.StatusForbidden,
		CodeActionDenied:       http.StatusForbidden,
		CodeConstraintViolated: http.StatusUnprocessableEntity,
		CodeExecutionFailed:    http.StatusBadGateway,
		CodeTimeout:            http.StatusGatewayTimeout,
		CodeRateLimited:        http.StatusTooManyRequests,
		CodeInternalError:      http.StatusInternalServerError,
		CodeServiceUnavailable: http.StatusServiceUnavailable,
		CodeCheckpointRequired: http.StatusPreconditionRequired,
	}
}

// Retriable reports whether a request refused with code may succeed when
// sent again unchanged (later).
func Retriable(code string) bool {
	switch code {
	case CodeRateLimited, CodeTimeout, CodeServiceUnavailable, CodeInternalError:
		return true
	}
	return false
}

// Error is a refusal with a CARP error code; ErrorResponse is its wire form.
type Error struct {
	Code       string
	Message    string
	Details    map[string]any
	RetryAfter int // seconds, for RATE_LIMITED
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Errorf returns an *Error with code and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorResponse is CARPError (§5.1).
type ErrorResponse struct {
	CARPVersion string    `json:"carp_version"`
	RequestID   string    `json:"request_id"`
	Timestamp   string    `json:"timestamp"`
	Error       ErrorBody `json:"error"`
	Retry       *Retry    `json:"retry,omitempty"`
}

// ErrorBody is CARPError.error.
type ErrorBody struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
	TraceID string         `json:"trace_id,omitempty"`
}

// Retry is CARPError.retry.
type Retry struct {
	Retriable         bool `json:"retriable"`
	RetryAfterSeconds int  `json:"retry_after_seconds,omitempty"`
	MaxRetries        int  `json:"max_retries,omitempty"`
}

// Response returns e as a CARPError answering request requestID at ts.
func (e *Error) Response(requestID, ts, traceID string) ErrorResponse {
	return ErrorResponse{
		CARPVersion: Version, RequestID: requestID, Timestamp: ts,
		Error: ErrorBody{Code: e.Code, Message: e.Message, Details: e.Details, TraceID: traceID},
		Retry: &Retry{Retriable: Retriable(e.Code), RetryAfterSeconds: e.RetryAfter},
	}
}
