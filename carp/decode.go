package carp

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/wacpd/wacpd/atlas"
	"github.com/wacpd/wacpd/internal/strictjson"
)

// MaxRequest bounds a request's size.
const MaxRequest = 1 << 20

// MaxAnswers bounds the answers of one respond.
const MaxAnswers = 256

// DecodeRequest decodes and validates a request for operation op (§9.1
// rule 3: every request is validated before it is processed): strictly
// (unknown or duplicate fields, wrong types: INVALID_REQUEST), then the
// fields: carp_version 1.0 (INVALID_VERSION), the required ones
// (MISSING_FIELD), and their forms (INVALID_FORMAT): request_id a UUID
// (the seed's clients make UUIDv7; any RFC 9562 UUID is accepted),
// timestamp RFC 3339 with its zone, risk tiers, scope patterns.
func DecodeRequest(data []byte, op string) (Request, *Error) {
	if len(data) > MaxRequest {
		return Request{}, Errorf(CodeInvalidRequest, "the request is larger than %d bytes", MaxRequest)
	}
	var r Request
	if err := strictjson.Decode(data, &r); err != nil {
		return Request{}, Errorf(CodeInvalidRequest, "%v", err)
	}
	return r, r.check(op)
}

func (r *Request) check(op string) *Error {
	missing := func(field string) *Error { return Errorf(CodeMissingField, "%s is required", field) }
	switch {
	case r.CARPVersion == "":
		return missing("carp_version")
	case r.CARPVersion != Version:
		return Errorf(CodeInvalidVersion, "carp_version %q is not %s", r.CARPVersion, Version)
	case r.RequestID == "":
		return missing("request_id")
	case r.Timestamp == "":
		return missing("timestamp")
	case r.Operation == "":
		return missing("operation")
	case r.Requester.AgentID == "":
		return missing("requester.agent_id")
	case r.Requester.SessionID == "":
		return missing("requester.session_id")
	}
	if _, err := uuid.Parse(r.RequestID); err != nil || len(r.RequestID) != 36 {
		return Errorf(CodeInvalidFormat, "request_id %q is not a UUID", r.RequestID)
	}
	if _, err := time.Parse(time.RFC3339Nano, r.Timestamp); err != nil {
		return Errorf(CodeInvalidFormat, "timestamp %q is not RFC 3339 with a time zone", r.Timestamp)
	}
	if r.Operation != op {
		return Errorf(CodeInvalidRequest, "operation %q sent to %s", r.Operation, op)
	}
	switch op {
	case OpResolve:
		if r.Task == nil {
			return missing("task")
		}
		if r.Task.Goal == "" {
			return missing("task.goal")
		}
		if r.Task.RiskTier != "" && !slices.Contains(atlas.RiskTiers(), r.Task.RiskTier) {
			return Errorf(CodeInvalidFormat, "task.risk_tier %q is not low, medium, high or critical", r.Task.RiskTier)
		}
		if r.Task.GoalHash != "" && r.Task.GoalHash != GoalHash(r.Task.Goal) {
			return Errorf(CodeInvalidRequest, "task.goal_hash is not the SHA-256 of task.goal")
		}
		if r.Action != nil || r.ExecutionOptions != nil {
			return Errorf(CodeInvalidRequest, "a resolve has a task, not an action")
		}
	case OpExecute, OpValidate:
		a := r.Action
		switch {
		case a == nil:
			return missing("action")
		case a.ActionID == "":
			return missing("action.action_id")
		case a.ActionType == "":
			return missing("action.action_type")
		case a.ResolutionID == "":
			return missing("action.resolution_id")
		case a.Parameters == nil:
			return missing("action.parameters")
		}
		if o := r.ExecutionOptions; o != nil && o.TimeoutMS < 0 {
			return Errorf(CodeInvalidFormat, "execution_options.timeout_ms is negative")
		}
	case OpRespond:
		c := r.CheckpointResponse
		switch {
		case c == nil:
			return missing("checkpoint_response")
		case c.CheckpointID == "":
			return missing("checkpoint_response.checkpoint_id")
		case c.Answers == nil:
			return missing("checkpoint_response.answers")
		case r.Task != nil || r.Action != nil || r.ExecutionOptions != nil || r.Scope != nil:
			return Errorf(CodeInvalidRequest, "a respond has a checkpoint_response only, not a task, an action or a scope")
		case len(c.Answers) > MaxAnswers:
			return Errorf(CodeInvalidRequest, "at most %d answers", MaxAnswers)
		}
	}
	if r.CheckpointResponse != nil && op != OpRespond {
		return Errorf(CodeInvalidRequest, "checkpoint_response belongs to a respond")
	}
	if s := r.Scope; s != nil {
		if s.MaxContextTokens < 0 || s.MaxActions < 0 {
			return Errorf(CodeInvalidFormat, "scope limits are negative")
		}
		for _, p := range s.Actions {
			if _, err := atlas.ParsePattern(p); err != nil {
				return Errorf(CodeInvalidFormat, "scope.actions: %v", err)
			}
		}
	}
	if t := r.Telemetry; t != nil && t.SamplingRate != nil && (*t.SamplingRate < 0 || *t.SamplingRate > 1) {
		return Errorf(CodeInvalidFormat, "telemetry.sampling_rate is outside 0.0-1.0")
	}
	return nil
}

// GoalHash is the SHA-256 of a goal, in hex (task.goal_hash).
func GoalHash(goal string) string {
	sum := sha256.Sum256([]byte(goal))
	return hex.EncodeToString(sum[:])
}

// ContentHash is the SHA-256 of content as CARP's content hashes carry
// it: "sha256:" and 64 hex digits.
func ContentHash(content []byte) string { return atlas.ContentHash(content) }
