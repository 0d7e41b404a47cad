package workspace

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Liveness is what the liveness monitor (WACP Workspace §6) remembers of a
// workspace between its looks: the id of the last liveness_warning it
// wrote and the last activity that warning named. Warning equal to the id
// of the workspace's last trail entry means the silence goes on; any other
// entry since is activity.
type Liveness struct {
	Warning string `json:"warning,omitempty"`
	Since   string `json:"since,omitempty"`
}

// LivenessApplies reports whether the liveness monitor looks at a
// workspace in state s: active and blocked, where its agent is expected to
// work or to be unblocked. An idle workspace waits for its coordinator, a
// suspended, migrating, integrating or conflicted one for the runtime or
// the coordinator.
func LivenessApplies(s State) bool { return s == Active || s == Blocked }

// LivenessDue reports whether w, whose local trail's last entry is head
// (its id) written at headTS (a record timestamp), owes a liveness_warning
// at now, and the last_activity_timestamp that warning names. The interval
// counts from the last entry of the workspace's trail, a previous
// liveness_warning included, so a silence is warned about once per
// interval; the activity it names stays the last entry before the first
// warning. Pure.
func LivenessDue(w *Workspace, head, headTS string, now time.Time) (due bool, activity string) {
	if w.LivenessInterval == "" || !LivenessApplies(w.State) || head == "" {
		return false, ""
	}
	iv, err1 := time.ParseDuration(w.LivenessInterval)
	at, err2 := time.Parse(time.RFC3339Nano, headTS)
	if err1 != nil || err2 != nil || iv <= 0 || now.Before(at.Add(iv)) {
		return false, ""
	}
	activity = headTS
	if head == w.Liveness.Warning && w.Liveness.Since != "" {
		activity = w.Liveness.Since
	}
	return true, activity
}

// Grace is a graceful termination in progress (WACP Workspace §3): the
// coordinator's feedback envelope asked the agent to wind down, and the
// workspace fails with graceful_termination_expired unless it emits
// complete before Deadline.
type Grace struct {
	Period   string `json:"period,omitempty"`
	Deadline string `json:"deadline,omitempty"`
	Reason   string `json:"reason,omitempty"`
	Envelope string `json:"envelope,omitempty"`
	// Checkpoints is the length of the workspace's checkpoint register
	// when the request came: a later checkpoint is the partial one.
	Checkpoints uint64 `json:"checkpoints,omitempty"`
}

// IntentGracefulTermination is the intent of the feedback envelope that
// asks an agent to wind down (WACP Workspace §3, PROTOCOL §6.10).
const IntentGracefulTermination = "graceful_termination"

// GraceRequest is what a graceful termination request says: the members
// of the feedback envelope's JSON payload (payload.format json) that the
// runtime reads. Other members are the agent's.
type GraceRequest struct {
	Intent      string `json:"intent"`
	GracePeriod string `json:"grace_period"`
	Reason      string `json:"reason"`
}

// ParseGraceRequest reads a feedback envelope's payload. ok is false when
// the payload is not a graceful termination request: its format is not
// json, its content is not a JSON object, or its intent is another. A
// request whose grace_period is missing or not a positive duration (Go
// syntax, "30s", "5m") is an error wrapping ErrInvalidRequest. Pure.
func ParseGraceRequest(format, content string) (req GraceRequest, period time.Duration, ok bool, err error) {
	if format != "json" || !strings.HasPrefix(strings.TrimSpace(content), "{") {
		return GraceRequest{}, 0, false, nil
	}
	var probe struct {
		Intent      any `json:"intent"`
		GracePeriod any `json:"grace_period"`
		Reason      any `json:"reason"`
	}
	if json.Unmarshal([]byte(content), &probe) != nil || probe.Intent != IntentGracefulTermination {
		return GraceRequest{}, 0, false, nil
	}
	req.Intent = IntentGracefulTermination
	s, isString := probe.GracePeriod.(string)
	if !isString {
		return req, 0, true, fmt.Errorf("%w: a graceful_termination needs grace_period, a duration such as \"30s\"", ErrInvalidRequest)
	}
	period, perr := time.ParseDuration(s)
	if perr != nil || period <= 0 {
		return req, 0, true, fmt.Errorf("%w: grace_period %q is not a positive duration", ErrInvalidRequest, s)
	}
	req.GracePeriod = s
	switch r := probe.Reason.(type) {
	case nil:
	case string:
		req.Reason = r
	default:
		return req, 0, true, fmt.Errorf("%w: reason must be a string", ErrInvalidRequest)
	}
	return req, period, true, nil
}

// GraceApplies reports whether a graceful termination may be asked of a
// workspace in state s: idle (the feedback is its first envelope), active
// or blocked, where its agent can still emit complete.
func GraceApplies(s State) bool { return s == Idle || s == Active || s == Blocked }

// GraceRunOut reports whether w's grace period has run out at now and it
// fails: it is active or blocked (complete moved it on in time, or it is
// suspended or migrating and fails once it is back), and its deadline has
// passed. Pure.
func GraceRunOut(w *Workspace, now time.Time) bool {
	if w.Grace.Deadline == "" || (w.State != Active && w.State != Blocked) {
		return false
	}
	d, err := time.Parse(time.RFC3339Nano, w.Grace.Deadline)
	return err == nil && !now.Before(d)
}
