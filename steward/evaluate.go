package steward

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"time"

	"github.com/wacpd/wacpd/atlas"
)

// TRACE event types of checkpoints (issue 17), in the session's chain.
const (
	TraceTriggered         = "checkpoint.triggered"
	TraceQuestionPresented = "checkpoint.question_presented"
	TraceResponseReceived  = "checkpoint.response_received"
	TraceValidated         = "checkpoint.validated"
	TracePassed            = "checkpoint.passed"
	TraceFailed            = "checkpoint.failed"
	TraceSkipped           = "checkpoint.skipped"
	TraceGuidanceInjected  = "checkpoint.guidance_injected"
)

// Step is a TRACE event for the engine to emit in the session's chain.
// Payloads carry hashes of what the agent said, never its words.
type Step struct {
	Type    string
	Payload map[string]any
}

// Event kinds: what happened in a session.
const (
	EventSessionStart = "session_start" // the workspace became active (or an atlas was loaded into a running session)
	EventSessionEnd   = "session_end"   // the workspace reached a terminal state
	EventResolve      = "resolve"       // a CARP resolve
	EventExecute      = "execute"       // a CARP execute, before its checks
	EventAdmitted     = "admitted"      // an execute passed every check and goes to its tool
	EventFinished     = "finished"      // an execution's outcome was recorded
)

// ActionRef is an action as an event names it.
type ActionRef struct {
	AtlasID  string
	ActionID string
	Tier     string
}

// Event is what Evaluate applies to a session.
type Event struct {
	Kind string
	Now  time.Time
	// Resolve: the task's goal, context hints, declared risk tier, the
	// atlases in scope (nil: all), the actions the request covers and
	// whether scope.actions named them.
	Goal     string
	Hints    []string
	Tier     string
	Atlases  []string
	Actions  []ActionRef
	Explicit bool
	// Finished: whether the execution failed, and its error code.
	Failed    bool
	ErrorCode string
	// Custom is the custom triggers' answers (by Key), evaluated by the
	// engine before its commit; CustomErr the evaluators that failed.
	Custom    map[string]bool
	CustomErr map[string]string
	NewID     func() string
}

// Result is what an evaluation did.
type Result struct {
	Steps     []Step
	Triggered []string // keys of the checkpoints triggered, in order
	Changed   bool
}

type eval struct {
	set *Set
	s   *Session
	ev  Event
	out Result
	// The goal's hashes, computed once per evaluation.
	goalIn, goalFull string
}

// customInput is what a custom trigger was asked about: the operation,
// the goal and the action.
func (e *eval) customInput() string {
	action := ""
	if len(e.ev.Actions) == 1 && e.ev.Kind != EventResolve {
		action = e.ev.Actions[0].ActionID
	}
	return inputHash(e.ev.Kind, e.ev.Goal, action)
}

func (e *eval) goalHashes() (in, full string) {
	if e.goalFull == "" {
		e.goalIn, e.goalFull = inputHash(e.ev.Goal), fullHash(e.ev.Goal)
	}
	return e.goalIn, e.goalFull
}

func (e *eval) step(typ string, p map[string]any) { e.out.Steps = append(e.out.Steps, Step{typ, p}) }

func (e *eval) changed() {
	if !e.out.Changed {
		e.out.Changed = true
		e.s.Version++
	}
}

// Evaluate applies ev to s (changed in place) under set's checkpoints:
// every checkpoint whose trigger ev meets fires, highest priority first
// (a blocking one presents its questions and holds its gated actions; an
// advisory one takes effect at once; an observational one is recorded),
// within each atlas's max_checkpoints_per_input (a blocking checkpoint is
// never left out for the budget: it counts, and fires). A session's
// session_start checkpoints fire on its first event, whatever it is.
func Evaluate(set *Set, s *Session, ev Event) Result {
	e := &eval{set: set, s: s, ev: ev}
	if set == nil || s.Ended || set.Empty() {
		return e.out
	}
	if set.Sync(s) {
		e.changed()
	}
	if s.Started.IsZero() {
		s.Started = ev.Now
		e.changed()
	}
	fired := map[string]int{}
	for _, d := range set.defs {
		data, ok := e.triggers(d)
		if !ok {
			continue
		}
		if n := set.Budget(d.AtlasID).MaxCheckpointsPerInput; n > 0 && fired[d.AtlasID] >= n && d.Mode != atlas.ModeBlocking {
			e.step(TraceSkipped, map[string]any{"checkpoint_id": d.CP.CheckpointID, "atlas_ref": d.AtlasRef,
				"checkpoint_type": d.Type, "reason": "budget", "max_checkpoints_per_input": n})
			e.changed()
			continue
		}
		fired[d.AtlasID]++
		e.fire(d, data)
	}
	if ev.Kind == EventSessionEnd {
		e.end()
	}
	return e.out
}

func inputHash(parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(h[:8])
}

// triggers reports whether ev fires d, and the trigger data recorded.
func (e *eval) triggers(d *Def) (map[string]any, bool) {
	ev, st := e.ev, e.s.peek(d.Key)
	open := st.Status != StatusPending && st.Status != StatusBlocked
	inScope := ev.Atlases == nil || slices.Contains(ev.Atlases, d.AtlasID)
	operation := ev.Kind == EventResolve || ev.Kind == EventExecute
	switch d.Type {
	case TypeSessionStart:
		if !(st.Fired == 0 && ev.Kind != EventSessionEnd) {
			return nil, false
		}
		return map[string]any{"event": ev.Kind}, true
	case TypeInteractive:
		if !(st.Fired == 0 && operation) {
			return nil, false
		}
		return map[string]any{"event": ev.Kind}, true
	case TypeSessionEnd:
		if !(ev.Kind == EventSessionEnd) {
			return nil, false
		}
		return map[string]any{}, true
	case TypeTimeInterval:
		base := st.LastFired
		if base.IsZero() {
			base = e.s.Started
		}
		due := ev.Now.Sub(base) >= time.Duration(d.CP.Trigger.Seconds)*time.Second
		if !(operation && open && due) {
			return nil, false
		}
		return map[string]any{"seconds": d.CP.Trigger.Seconds, "event": ev.Kind}, true
	case TypeCountInterval:
		if ev.Kind != EventAdmitted || len(ev.Actions) == 0 || ev.Actions[0].AtlasID != d.AtlasID {
			return nil, false
		}
		s := e.s.state(d.Key)
		s.Count++
		e.changed()
		if s.Count < d.CP.Trigger.Actions {
			return nil, false
		}
		s.Count = 0
		return map[string]any{"actions": d.CP.Trigger.Actions, "action_id": ev.Actions[0].ActionID}, true
	case TypeKeywordMatch:
		if ev.Kind != EventResolve || !inScope || !open || (d.CP.Trigger.OncePerSession && st.Fired > 0) {
			return nil, false
		}
		in, full := e.goalHashes()
		if st.Input == in {
			return nil, false // fired on this very input already
		}
		ok, matched := e.set.matchKeywords(d, ev.Goal, full, ev.Now)
		if !ok {
			return nil, false
		}
		return map[string]any{"keywords": matched, "goal_hash": full, "input": in}, true
	case TypeExplicitRequest:
		asked := slices.ContainsFunc(ev.Hints, func(h string) bool { return h == d.CP.CheckpointID || h == d.Key })
		if !(ev.Kind == EventResolve && inScope && open && asked) {
			return nil, false
		}
		return map[string]any{"requested": true}, true
	case TypeCustom:
		if !operation {
			return nil, false
		}
		// Like a keyword checkpoint, a custom one fires once per input
		// (the operation, its goal and its action): answered, the same
		// input does not bring it back.
		in := e.customInput()
		msg, failed := ev.CustomErr[d.Key]
		if st.EvalHeld {
			// Held because its evaluator failed: released or fired when
			// the evaluator answers (not asked, or failing again: held).
			if _, asked := ev.Custom[d.Key]; failed || !asked {
				return nil, false
			}
			live := e.s.state(d.Key)
			live.EvalHeld, live.Status = false, StatusIdle
			e.changed()
			if !ev.Custom[d.Key] {
				e.step(TraceSkipped, map[string]any{"checkpoint_id": d.CP.CheckpointID, "atlas_ref": d.AtlasRef,
					"checkpoint_type": d.Type, "instance_id": live.Instance, "reason": "evaluator_released"})
				return nil, false
			}
			return map[string]any{"trigger_id": d.CP.Trigger.TriggerID, "input": in}, true
		}
		if !open || st.Input == in {
			return nil, false
		}
		if failed {
			if d.Mode == atlas.ModeBlocking {
				return map[string]any{"trigger_id": d.CP.Trigger.TriggerID, "evaluator_error": msg, "fail_closed": true, "input": in}, true
			}
			e.step(TraceSkipped, map[string]any{"checkpoint_id": d.CP.CheckpointID, "atlas_ref": d.AtlasRef,
				"checkpoint_type": d.Type, "reason": "evaluator_error", "error": msg})
			e.changed()
			return nil, false
		}
		if !(ev.Custom[d.Key]) {
			return nil, false
		}
		return map[string]any{"trigger_id": d.CP.Trigger.TriggerID, "input": in}, true
	case TypeRiskThreshold:
		switch ev.Kind {
		case EventResolve:
			in := inputHash(ev.Goal, ev.Tier)
			if !(inScope && open && ev.Tier != "" && atlas.TierAtLeast(ev.Tier, d.CP.Trigger.MinTier) && st.Input != in) {
				return nil, false
			}
			return map[string]any{"declared_tier": ev.Tier, "min_tier": d.CP.Trigger.MinTier, "input": in}, true
		case EventExecute:
			a, ok := e.action(d)
			if !(ok && open && atlas.TierAtLeast(a.Tier, d.CP.Trigger.MinTier) && !armedFor(d, st, a.ActionID)) {
				return nil, false
			}
			return map[string]any{"action_id": a.ActionID, "risk_tier": a.Tier, "min_tier": d.CP.Trigger.MinTier}, true
		}
	case TypeActionPre:
		switch ev.Kind {
		case EventResolve:
			// Named in scope.actions: a blocking action_pre is presented
			// ahead, so that the agent can answer before it executes.
			if d.Mode != atlas.ModeBlocking || !ev.Explicit || !open {
				return nil, false
			}
			for _, a := range ev.Actions {
				if a.AtlasID == d.AtlasID && d.matchesAction(a.ActionID) && !armedFor(d, st, a.ActionID) {
					return map[string]any{"action_id": a.ActionID, "announced": true}, true
				}
			}
		case EventExecute:
			a, ok := e.action(d)
			if !(ok && d.matchesAction(a.ActionID) && open && !armedFor(d, st, a.ActionID)) {
				return nil, false
			}
			return map[string]any{"action_id": a.ActionID}, true
		}
	case TypeActionPost, TypeErrorOccurred:
		if ev.Kind != EventFinished || (d.Type == TypeErrorOccurred && !ev.Failed) {
			return nil, false
		}
		a, ok := e.action(d)
		data := map[string]any{"action_id": a.ActionID}
		if ev.Failed {
			data["error_code"] = ev.ErrorCode
		}
		return data, ok && d.matchesAction(a.ActionID) && open
	case TypeCapabilityGate:
		if st.Status != StatusIdle {
			return nil, false // pending, blocked, or passed: a capability gate is passed once a session
		}
		switch ev.Kind {
		case EventResolve:
			// Asked for: scope.actions names one of its actions (a
			// resolve of everything does not knock on every gate).
			if !inScope || !ev.Explicit {
				return nil, false
			}
			for _, a := range ev.Actions {
				if a.AtlasID == d.AtlasID && d.inCapabilities(a.ActionID) {
					return map[string]any{"capability_ids": d.CP.Trigger.CapabilityIDs, "action_id": a.ActionID}, true
				}
			}
		case EventExecute:
			a, ok := e.action(d)
			if !(ok && d.inCapabilities(a.ActionID)) {
				return nil, false
			}
			return map[string]any{"capability_ids": d.CP.Trigger.CapabilityIDs, "action_id": a.ActionID}, true
		}
	}
	return nil, false
}

// armedFor reports whether a blocking per-action checkpoint has an
// answer for an execute of action: one given for that action, or for any
// it gates.
func armedFor(d *Def, st CPState, action string) bool {
	return d.Mode == atlas.ModeBlocking && st.Armed > 0 && (st.Action == "" || st.Action == action)
}

// Sync forgets what the checkpoints of an atlas did in s when the atlas
// changed since (its checksum differs: a new version loaded): their
// states, the capabilities, overlays, guidance and contexts they gave.
// It reports whether s changed (the caller counts the change in
// s.Version).
func (set *Set) Sync(s *Session) bool {
	changed := false
	for id, sum := range set.sums {
		old, ok := s.Atlases[id]
		if ok && old == sum {
			continue
		}
		if ok {
			for k := range s.Checkpoints {
				if strings.HasPrefix(k, id+"/") {
					delete(s.Checkpoints, k)
				}
			}
			for k := range s.Capabilities {
				if strings.HasPrefix(k, id+"/") {
					delete(s.Capabilities, k)
				}
			}
			s.Allow = slices.DeleteFunc(s.Allow, func(o Overlay) bool { return o.AtlasID == id })
			s.Deny = slices.DeleteFunc(s.Deny, func(o Overlay) bool { return o.AtlasID == id })
			s.Guidance = slices.DeleteFunc(s.Guidance, func(g ActiveGuidance) bool { return g.AtlasID == id })
			s.Contexts = slices.DeleteFunc(s.Contexts, func(c ContextRef) bool { return c.AtlasID == id })
		}
		if s.Atlases == nil {
			s.Atlases = map[string]string{}
		}
		s.Atlases[id] = sum
		changed = true
	}
	return changed
}

// action returns the event's action when it is d's atlas's.
func (e *eval) action(d *Def) (ActionRef, bool) {
	if len(e.ev.Actions) != 1 || e.ev.Actions[0].AtlasID != d.AtlasID {
		return ActionRef{}, false
	}
	return e.ev.Actions[0], true
}

func fullHash(s string) string { return atlas.ContentHash([]byte(s)) }

// fire records d's triggering with data and does what its mode says.
func (e *eval) fire(d *Def, data map[string]any) {
	st := e.s.state(d.Key)
	st.Fired++
	st.LastFired = e.ev.Now
	if in, ok := data["input"].(string); ok {
		st.Input = in
		delete(data, "input")
	}
	if d.perAction() {
		// An answer covers one execute of the action it was asked for
		// (any action it gates when it was asked for a declared tier).
		st.Action, st.Armed = "", 0
		if id, ok := data["action_id"].(string); ok {
			st.Action = id
		}
	}
	st.Instance = ""
	if e.ev.NewID != nil {
		st.Instance = e.ev.NewID()
	}
	st.Attempts = 0
	e.changed()
	e.out.Triggered = append(e.out.Triggered, d.Key)
	e.expire(d)
	e.step(TraceTriggered, map[string]any{"checkpoint_id": d.CP.CheckpointID, "atlas_ref": d.AtlasRef, "checkpoint_type": d.Type,
		"trigger_type": d.CP.Trigger.Type, "mode": d.Mode, "priority": d.Priority, "instance_id": st.Instance,
		"event": e.ev.Kind, "trigger_data": data})
	switch d.Mode {
	case atlas.ModeObservational:
		st.Status = StatusIdle
		return
	case atlas.ModeAdvisory:
		e.effects(d, st)
		if len(d.questions) > 0 {
			e.present(d, st) // answerable, never waited for
			st.Status = StatusPending
		}
		return
	}
	if data["fail_closed"] == true {
		// Its evaluator failed: it holds its actions until the evaluator
		// answers, and takes no answers meanwhile.
		st.Status, st.EvalHeld = StatusPending, true
		return
	}
	if e.ev.Kind == EventSessionEnd {
		// Nothing is left to hold back: a blocking session_end is
		// recorded, and its questions go unasked.
		st.Status = StatusIdle
		if len(d.questions) > 0 {
			e.step(TraceSkipped, map[string]any{"checkpoint_id": d.CP.CheckpointID, "atlas_ref": d.AtlasRef,
				"checkpoint_type": d.Type, "instance_id": st.Instance, "reason": "session_ended"})
		}
		return
	}
	if len(d.questions) == 0 {
		e.pass(d, st, "no_questions")
		return
	}
	st.Status = StatusPending
	e.present(d, st)
}

func (e *eval) present(d *Def, st *CPState) {
	for _, q := range d.questions {
		e.step(TraceQuestionPresented, map[string]any{"checkpoint_id": d.CP.CheckpointID, "atlas_ref": d.AtlasRef,
			"instance_id": st.Instance, "question_id": q.QuestionID, "response_type": q.ResponseType, "required": q.IsRequired()})
	}
}

// pass marks d passed and applies its effects; a per-action checkpoint's
// pass is armed for the next execute of a gated action.
func (e *eval) pass(d *Def, st *CPState, outcome string) {
	st.Status = StatusPassed
	if d.perAction() {
		st.Armed++
	}
	e.changed()
	e.effects(d, st)
	p := map[string]any{"checkpoint_id": d.CP.CheckpointID, "atlas_ref": d.AtlasRef, "instance_id": st.Instance, "outcome": outcome,
		"unlocked_capabilities": nonNil(d.CP.UnlockCapabilities), "locked_capabilities": nonNil(d.CP.LockCapabilities),
		"injected_contexts": nonNil(d.CP.InjectContexts), "allow_actions": nonNil(d.CP.AllowActions), "deny_actions": nonNil(d.CP.DenyActions)}
	e.step(TracePassed, p)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// effects applies d's effects to the session: contexts, guidance,
// capabilities (unlock, then lock: a capability a checkpoint both
// unlocks and locks ends locked) and action overlays.
func (e *eval) effects(d *Def, st *CPState) {
	s := e.s
	for _, id := range d.CP.InjectContexts {
		if !slices.ContainsFunc(s.Contexts, func(c ContextRef) bool { return c.AtlasID == d.AtlasID && c.ContextID == id }) {
			s.Contexts = append(s.Contexts, ContextRef{AtlasID: d.AtlasID, ContextID: id, Checkpoint: d.CP.CheckpointID})
		}
	}
	if g := d.CP.Guidance; g != nil {
		if g.Append != nil && !*g.Append {
			s.Guidance = slices.DeleteFunc(s.Guidance, func(a ActiveGuidance) bool { return a.AtlasID == d.AtlasID })
		}
		// The same checkpoint firing again replaces its own block.
		s.Guidance = slices.DeleteFunc(s.Guidance, func(a ActiveGuidance) bool {
			return a.AtlasID == d.AtlasID && a.Checkpoint == d.CP.CheckpointID
		})
		seq := 1
		for _, a := range s.Guidance {
			seq = max(seq, a.Seq+1)
		}
		ag := ActiveGuidance{AtlasID: d.AtlasID, AtlasRef: d.AtlasRef, Checkpoint: d.CP.CheckpointID, Guidance: *g,
			Hash: fullHash(g.Content), Seq: seq}
		s.Guidance = append(s.Guidance, ag)
		e.step(TraceGuidanceInjected, map[string]any{"checkpoint_id": d.CP.CheckpointID, "atlas_ref": d.AtlasRef,
			"instance_id": st.Instance, "format": orText(g.Format), "priority": g.Priority, "content_hash": ag.Hash,
			"append": g.Append == nil || *g.Append, "expires_after": g.ExpiresAfter, "labels": nonNil(g.Labels)})
	}
	if len(d.CP.UnlockCapabilities)+len(d.CP.LockCapabilities) > 0 && s.Capabilities == nil {
		s.Capabilities = map[string]string{}
	}
	for _, c := range d.CP.UnlockCapabilities {
		s.Capabilities[Key(d.AtlasID, c)] = CapUnlocked
	}
	for _, c := range d.CP.LockCapabilities {
		s.Capabilities[Key(d.AtlasID, c)] = CapLocked
	}
	for _, p := range d.CP.AllowActions {
		o := Overlay{AtlasID: d.AtlasID, Pattern: p, Checkpoint: d.CP.CheckpointID}
		if !slices.Contains(s.Allow, o) {
			s.Allow = append(s.Allow, o)
		}
	}
	for _, p := range d.CP.DenyActions {
		o := Overlay{AtlasID: d.AtlasID, Pattern: p, Checkpoint: d.CP.CheckpointID}
		if !slices.Contains(s.Deny, o) {
			s.Deny = append(s.Deny, o)
		}
	}
	e.changed()
}

func orText(f string) string {
	if f == "" {
		return atlas.GuidanceText
	}
	return f
}

// expire removes the guidance blocks whose expires_after names d (its
// checkpoint_id or its type) from d's atlas.
func (e *eval) expire(d *Def) {
	n := len(e.s.Guidance)
	e.s.Guidance = slices.DeleteFunc(e.s.Guidance, func(a ActiveGuidance) bool {
		x := a.Guidance.ExpiresAfter
		if x == "" || a.AtlasID != d.AtlasID {
			return false
		}
		return x == d.CP.CheckpointID || TypeOf(strings.ReplaceAll(x, "-", "_")) == d.Type
	})
	if len(e.s.Guidance) != n {
		e.changed()
	}
}

// end closes the session: what is pending is skipped, nothing fires
// again.
func (e *eval) end() {
	for _, d := range e.set.defs {
		st, ok := e.s.Checkpoints[d.Key]
		if !ok || st.Status != StatusPending {
			continue
		}
		st.Status, st.EvalHeld = StatusIdle, false
		e.step(TraceSkipped, map[string]any{"checkpoint_id": d.CP.CheckpointID, "atlas_ref": d.AtlasRef,
			"checkpoint_type": d.Type, "instance_id": st.Instance, "reason": "session_ended"})
	}
	e.s.Ended = true
	e.s.Guidance = nil
	e.changed()
}

// Admit records that an execute of action passed every check: the armed
// answers of the per-action checkpoints that gate it are used (one
// each), and the count_interval checkpoints count it (Evaluate with
// EventAdmitted). It returns the keys of the answers used.
func Admit(set *Set, s *Session, a ActionRef, now time.Time, newID func() string) (Result, []string) {
	if set == nil || set.Empty() || s.Ended {
		return Result{}, nil
	}
	// Counted first (count_interval; the evaluation also syncs s with
	// the atlases), then the answers used.
	res := Evaluate(set, s, Event{Kind: EventAdmitted, Now: now, Actions: []ActionRef{a}, NewID: newID})
	var used []string
	for _, d := range set.defs {
		if !d.perAction() || d.Mode != atlas.ModeBlocking || !d.Gates(a.AtlasID, a.ActionID, a.Tier) {
			continue
		}
		st, ok := s.Checkpoints[d.Key]
		if !ok || !armedFor(d, *st, a.ActionID) {
			continue
		}
		st.Armed--
		if st.Armed == 0 {
			st.Status = StatusIdle
		}
		used = append(used, d.CP.CheckpointID)
	}
	if len(used) > 0 && !res.Changed {
		res.Changed = true
		s.Version++
	}
	return res, used
}
