package steward

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Custom triggers (seed 001, "Custom Checkpoint Types"): a custom
// checkpoint's trigger_id names an Evaluator registered in Go, or the
// manifest names a NATS subject whose service answers (the daemon
// registers that caller). The engine asks them before its commit, each
// within its atlas's max_checkpoint_time_ms (DefaultEvalTimeout), and
// caches the answers for the atlas's policy TTL.

// DefaultEvalTimeout is a custom evaluator's deadline when the atlas's
// budget sets none.
const DefaultEvalTimeout = 500 * time.Millisecond

// EvalContext is what a custom evaluator is asked about: the session,
// the operation and its input.
type EvalContext struct {
	TriggerID string          `json:"trigger_id"`
	Params    json.RawMessage `json:"params,omitempty"`
	AtlasID   string          `json:"atlas_id"`
	SessionID string          `json:"session_id"`
	AgentID   string          `json:"agent_id"`
	Operation string          `json:"operation"` // resolve or execute
	Goal      string          `json:"goal,omitempty"`
	RiskTier  string          `json:"risk_tier,omitempty"`
	ActionID  string          `json:"action_id,omitempty"`
}

// Input is the part of ec an answer depends on (the cache key).
func (ec EvalContext) Input() string {
	return inputHash(ec.Operation, ec.Goal, ec.RiskTier, ec.ActionID, ec.SessionID)
}

// Evaluator answers whether a custom trigger fires.
type Evaluator func(ctx context.Context, ec EvalContext) (bool, error)

// ErrNoEvaluator is returned for a custom trigger nothing evaluates.
var ErrNoEvaluator = errors.New("steward: no evaluator is registered for the custom trigger")

// Registry is the custom triggers' evaluators by trigger_id; safe for
// concurrent use.
type Registry struct {
	mu sync.RWMutex
	m  map[string]Evaluator
}

// Register registers ev for trigger id; a second registration of one id
// is refused.
func (r *Registry) Register(id string, ev Evaluator) error {
	if id == "" || ev == nil {
		return fmt.Errorf("steward: a custom evaluator needs a trigger id and a function")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]Evaluator{}
	}
	if _, ok := r.m[id]; ok {
		return fmt.Errorf("steward: trigger %q has an evaluator already", id)
	}
	r.m[id] = ev
	return nil
}

// Lookup returns the evaluator of trigger id.
func (r *Registry) Lookup(id string) (Evaluator, bool) {
	if r == nil {
		return nil, false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	ev, ok := r.m[id]
	return ev, ok
}

// SubjectCaller asks the NATS service on subject (a custom trigger's
// subject) whether it fires.
type SubjectCaller func(ctx context.Context, subject string, ec EvalContext) (bool, error)

// EvaluateCustom asks every custom checkpoint of set that want accepts
// (nil: every one) whether it
// fires for ec (TriggerID, Params and AtlasID are filled per checkpoint):
// cached answers first, then the subject's service (when the trigger
// names one and call is set) or the registered evaluator, each within
// its atlas's budget. It returns the answers and the failures by Key,
// for Event.Custom and Event.CustomErr.
func EvaluateCustom(ctx context.Context, set *Set, reg *Registry, call SubjectCaller, ec EvalContext, want func(*Def) bool, now time.Time) (map[string]bool, map[string]string) {
	if set == nil || !set.custom {
		return nil, nil
	}
	got, failed := map[string]bool{}, map[string]string{}
	for _, d := range set.defs {
		if d.Type != TypeCustom || (want != nil && !want(d)) {
			continue
		}
		c := ec
		c.TriggerID, c.Params, c.AtlasID = d.CP.Trigger.TriggerID, d.CP.Trigger.Params, d.AtlasID
		in := c.Input()
		if v, ok := set.CachedCustom(d.Key, in, now); ok {
			got[d.Key] = v
			continue
		}
		timeout := DefaultEvalTimeout
		if ms := set.Budget(d.AtlasID).MaxCheckpointTimeMS; ms > 0 {
			timeout = time.Duration(ms) * time.Millisecond
		}
		cctx, cancel := context.WithTimeout(ctx, timeout)
		var v bool
		var err error
		switch ev, ok := reg.Lookup(c.TriggerID); {
		case d.CP.Trigger.Subject != "" && call != nil:
			v, err = call(cctx, d.CP.Trigger.Subject, c)
		case ok:
			v, err = ev(cctx, c)
		default:
			err = ErrNoEvaluator
		}
		cancel()
		if err != nil {
			failed[d.Key] = err.Error()
			continue
		}
		got[d.Key] = v
		set.StoreCustom(d.Key, in, v, now)
	}
	return got, failed
}
