package carp_test

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/wacpd/wacpd/carp"
)

// uses is an in-memory sliding-window counter, as the engine keeps one
// durably: a use is counted when an execution is recorded.
type uses map[string][]time.Time

func (u uses) usage(at *time.Time) func(carp.Limit) (int, time.Time) {
	return func(l carp.Limit) (int, time.Time) {
		var n int
		var oldest time.Time
		for _, t := range u[l.Key] {
			if l.Window == 0 || at.Sub(t) < time.Duration(l.Window)*time.Second {
				if n == 0 {
					oldest = t
				}
				n++
			}
		}
		if n == 0 || l.Window == 0 {
			return n, time.Time{}
		}
		return n, oldest.Add(time.Duration(l.Window) * time.Second)
	}
}

func (u uses) record(ga *carp.GrantedAction, at time.Time) {
	for _, l := range ga.Limits {
		u[l.Key] = append(u[l.Key], at)
	}
}

func executeReq(res carp.Resolution, action string, params map[string]any) carp.Request {
	return carp.Request{CARPVersion: "1.0", RequestID: uuid.Must(uuid.NewV7()).String(), Timestamp: now.Format(time.RFC3339),
		Operation: carp.OpExecute, Requester: carp.Requester{AgentID: "agent-1", SessionID: "session-1"},
		Action: &carp.ActionSpec{ActionID: action, ActionType: action, Parameters: params, ResolutionID: res.ResolutionID}}
}

// TestRateLimitCountsExecutions: 2 per 60 s: resolving never counts;
// execute, execute, and the third is RATE_LIMITED with a retry time; after
// the window it passes again.
func TestRateLimitCountsExecutions(t *testing.T) {
	m := manifest(t, "a.test", `[{"policy_id":"all","type":"allow","actions":["*"]},{"policy_id":"two","type":"rate_limit","actions":["data.update"],"rate_limit":{"requests":2,"window_seconds":60,"scope":"session"}}]`, dataActions, "", "")
	u := uses{}
	at := now
	for range 3 { // resolutions are not executions
		resolve(t, request("x"), u.usage(&at), m)
	}
	out := resolve(t, request("x"), u.usage(&at), m)
	i := indexAction(out.Resolution.AllowedActions, "data.update")
	if rl := out.Resolution.AllowedActions[i].RateLimit; rl == nil || rl.Requests != 2 || *rl.CurrentUsage != 0 || out.Resolution.Decision.Type != carp.DecisionAllowWithConstraints {
		t.Fatalf("rate limit shown = %+v, decision %s", rl, out.Resolution.Decision.Type)
	}
	check := func() (*carp.GrantedAction, *carp.Error) {
		ga, _, err := carp.Authorize(carp.Check{Grant: out.Grant, Request: executeReq(out.Resolution, "data.update", map[string]any{}), Now: at, Usage: u.usage(&at)})
		return ga, err
	}
	for n := 1; n <= 2; n++ {
		ga, err := check()
		if err != nil {
			t.Fatalf("execution %d: %v", n, err)
		}
		u.record(ga, at)
		at = at.Add(time.Second)
	}
	_, err := check()
	if err == nil || err.Code != carp.CodeRateLimited || err.RetryAfter < 1 || err.RetryAfter > 60 {
		t.Fatalf("third execution: %+v, want RATE_LIMITED with a retry", err)
	}
	at = now.Add(61 * time.Second)
	if _, err := check(); err != nil && err.Code != carp.CodeResolutionExpired {
		t.Fatalf("after the window: %v", err)
	}
}

func indexAction(ps []carp.ActionPermission, id string) int {
	for i, p := range ps {
		if p.ActionID == id {
			return i
		}
	}
	return -1
}

// TestExecuteChecks: an expired resolution, an action not granted, another
// session, parameters failing the schema or a constraint, an atlas changed
// since: each refused with its code.
func TestExecuteChecks(t *testing.T) {
	m := manifest(t, "a.test", `[{"policy_id":"all","type":"allow","actions":["data.*"]},{"policy_id":"nd","type":"deny","actions":["data.delete"]}]`,
		`[{"action_id":"data.get","parameters_schema":{"type":"object","required":["id"],"properties":{"id":{"type":"string"}},"additionalProperties":false},
		   "parameter_constraints":[{"parameter":"id","constraint_type":"pattern","value":"^d-[0-9]+$","message":"ids look like d-123"}]},
		  {"action_id":"data.delete"}]`, "", "")
	out := resolve(t, request("x"), nil, m)
	ok := map[string]any{"id": "d-1"}
	for _, tt := range []struct {
		name   string
		req    carp.Request
		at     time.Time
		loaded func(string) string
		code   string
	}{
		{"passes", executeReq(out.Resolution, "data.get", ok), now.Add(time.Minute), nil, ""},
		{"expired", executeReq(out.Resolution, "data.get", ok), now.Add(carp.DefaultResolutionTTL * time.Second), nil, carp.CodeResolutionExpired},
		{"denied action", executeReq(out.Resolution, "data.delete", map[string]any{}), now, nil, carp.CodeActionNotPermitted},
		{"unknown action", executeReq(out.Resolution, "data.explode", map[string]any{}), now, nil, carp.CodeActionNotPermitted},
		{"schema: missing id", executeReq(out.Resolution, "data.get", map[string]any{}), now, nil, carp.CodeConstraintViolated},
		{"schema: wrong type", executeReq(out.Resolution, "data.get", map[string]any{"id": 7.0}), now, nil, carp.CodeConstraintViolated},
		{"schema: extra field", executeReq(out.Resolution, "data.get", map[string]any{"id": "d-1", "drop": true}), now, nil, carp.CodeConstraintViolated},
		{"constraint", executeReq(out.Resolution, "data.get", map[string]any{"id": "x"}), now, nil, carp.CodeConstraintViolated},
		{"other session", func() carp.Request {
			r := executeReq(out.Resolution, "data.get", ok)
			r.Requester.SessionID = "session-2"
			return r
		}(), now, nil, carp.CodeForbidden},
		{"atlas reloaded", executeReq(out.Resolution, "data.get", ok), now, func(string) string { return "another" }, carp.CodeResolutionExpired},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := carp.Authorize(carp.Check{Grant: out.Grant, Request: tt.req, Now: tt.at, Loaded: tt.loaded})
			switch {
			case tt.code == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.code != "" && (err == nil || err.Code != tt.code):
				t.Fatalf("Authorize = %v, want %s", err, tt.code)
			}
		})
	}
}
