package carp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/wacpd/wacpd/atlas"
)

// Check is what an execute or a validate checks before anything runs:
// the grant (the resolution) and the request.
type Check struct {
	Grant   Grant
	Request Request // an execute or validate, decoded and validated
	Now     time.Time
	// Loaded returns the checksum of atlas id as loaded now, "" when it is
	// not loaded: a grant made under another version of an atlas is void.
	Loaded func(atlasID string) string
	// Usage is as in Input; it counts executions, not resolutions.
	Usage func(Limit) (used int, resetsAt time.Time)
	// Approved says the request runs under an operator's approval whose
	// permit is usable (issue 16): the resolution's TTL alone does not
	// refuse it — the permit, bound to the request and the policy
	// version, is the authority. Every other check stands.
	Approved bool
}

// Authorize runs the checks of an execute in order and returns the granted
// action, or the first refusal: a resolution of another session
// (FORBIDDEN), expired (RESOLUTION_EXPIRED) or made under an atlas since
// changed or unloaded (RESOLUTION_EXPIRED); an action it does not permit
// (ACTION_NOT_PERMITTED); parameters that fail the action's schema or its
// parameter constraints (CONSTRAINT_VIOLATED, with the violations in the
// details); a rate limit or budget used up (RATE_LIMITED, retry after the
// oldest use leaves the window). All are checked, none counted: the
// caller counts an execution when it is recorded.
func Authorize(c Check) (*GrantedAction, []Violation, *Error) {
	g, req := c.Grant, c.Request
	a := req.Action
	switch {
	case g.SessionID != req.Requester.SessionID || g.AgentID != req.Requester.AgentID:
		return nil, nil, Errorf(CodeForbidden, "resolution %s belongs to another session", g.ResolutionID)
	case !c.Now.Before(g.ExpiresAt) && !c.Approved:
		e := Errorf(CodeResolutionExpired, "resolution %s expired at %s; resolve again", g.ResolutionID, formatTime(g.ExpiresAt))
		e.Details = map[string]any{"expired_at": formatTime(g.ExpiresAt)}
		return nil, nil, e
	}
	for id, sum := range g.Atlases {
		if c.Loaded != nil && c.Loaded(id) != sum {
			return nil, nil, Errorf(CodeResolutionExpired, "atlas %s changed or was unloaded since resolution %s; resolve again", id, g.ResolutionID)
		}
	}
	i := slices.IndexFunc(g.Actions, func(x GrantedAction) bool { return x.ActionID == a.ActionID })
	if i < 0 {
		return nil, nil, Errorf(CodeActionNotPermitted, "resolution %s does not permit %s", g.ResolutionID, a.ActionID)
	}
	ga := g.Actions[i]
	if a.ActionType != ga.ActionID {
		return nil, nil, Errorf(CodeActionNotPermitted, "action_type %q is not the action %s", a.ActionType, ga.ActionID)
	}
	if vs := Parameters(ga, a.Parameters); len(vs) > 0 {
		e := Errorf(CodeConstraintViolated, "the parameters of %s: %s", a.ActionID, vs[0].Message)
		e.Details = map[string]any{"violations": vs}
		return &ga, vs, e
	}
	for _, l := range ga.Limits {
		if c.Usage == nil {
			break
		}
		used, resets := c.Usage(l)
		if used >= l.Requests {
			what := "rate limit"
			if l.Window == 0 {
				what = "budget"
			}
			e := Errorf(CodeRateLimited, "%s %s of %s: %d of %d used", what, l.Source, a.ActionID, used, l.Requests)
			e.Details = map[string]any{"limit": l.Source, "requests": l.Requests, "window_seconds": l.Window, "current_usage": used}
			if !resets.IsZero() {
				e.Details["resets_at"] = formatTime(resets)
				e.RetryAfter = max(1, int(resets.Sub(c.Now).Seconds()+0.999))
			}
			return &ga, nil, e
		}
	}
	return &ga, nil, nil
}

// Parameters checks params against ga's schema and parameter constraints
// and returns what fails (nothing when they pass).
func Parameters(ga GrantedAction, params map[string]any) []Violation {
	var out []Violation
	if len(ga.Schema) > 0 {
		if s, err := atlas.CompileSchema(ga.Schema); err != nil {
			out = append(out, Violation{Code: CodeInternalError, Message: "the action's schema does not compile: " + err.Error()})
		} else if err := validateSchema(s, params); err != nil {
			out = append(out, Violation{Code: CodeConstraintViolated, Message: err.Error(), Path: "parameters"})
		}
	}
	for _, pc := range ga.ParameterConstraints {
		if v := constraint(pc, params); v != nil {
			out = append(out, *v)
		}
	}
	return out
}

func validateSchema(s *jsonschema.Schema, params map[string]any) error {
	// Round trip through JSON so that numbers are what the schema library
	// expects (json.Number), whatever the caller decoded them as.
	b, err := json.Marshal(params)
	if err != nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return err
	}
	if err := s.Validate(inst); err != nil {
		return fmt.Errorf("does not match the action's parameters_schema: %v", err)
	}
	return nil
}

// constraint checks one parameter constraint.
func constraint(pc atlas.ParameterConstraint, params map[string]any) *Violation {
	v, present := params[pc.Parameter]
	fail := func(format string, args ...any) *Violation {
		msg := pc.Message
		if msg == "" {
			msg = fmt.Sprintf(format, args...)
		}
		return &Violation{Code: CodeConstraintViolated, Message: msg, Path: "parameters." + pc.Parameter}
	}
	switch pc.ConstraintType {
	case "required":
		if !present {
			return fail("%s is required", pc.Parameter)
		}
	case "forbidden":
		if present {
			return fail("%s is forbidden", pc.Parameter)
		}
	case "enum":
		var allowed []any
		if present && json.Unmarshal(pc.Value, &allowed) == nil && !slices.ContainsFunc(allowed, func(x any) bool { return jsonEqual(x, v) }) {
			return fail("%s is not one of %s", pc.Parameter, pc.Value)
		}
	case "range":
		var r struct{ Min, Max *float64 }
		n, isNum := v.(float64)
		if present && json.Unmarshal(pc.Value, &r) == nil {
			if !isNum || (r.Min != nil && n < *r.Min) || (r.Max != nil && n > *r.Max) {
				return fail("%s is out of range %s", pc.Parameter, pc.Value)
			}
		}
	case "pattern":
		var expr string
		s, isStr := v.(string)
		if present && json.Unmarshal(pc.Value, &expr) == nil {
			re, err := regexp.Compile(expr)
			if err != nil || !isStr || !re.MatchString(s) {
				return fail("%s does not match %s", pc.Parameter, expr)
			}
		}
	case "max_length":
		var n int
		s, isStr := v.(string)
		if present && json.Unmarshal(pc.Value, &n) == nil && (!isStr || utf8.RuneCountInString(s) > n) {
			return fail("%s is longer than %d characters", pc.Parameter, n)
		}
	}
	return nil
}

func jsonEqual(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}
