package steward

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/wacpd/wacpd/atlas"
)

// Why a response is refused before its answers are checked.
const (
	ErrNotFound        = "not_found"        // no such checkpoint in effect
	ErrAmbiguous       = "ambiguous"        // the checkpoint_id is in several atlases: name the atlas
	ErrNotPending      = "not_pending"      // the checkpoint waits for no answer
	ErrBlocked         = "blocked"          // it refused this session's answers for good
	ErrUnknownQuestion = "unknown_question" // an answer to a question the checkpoint does not ask
)

// RespondError is a response refused before its answers were checked;
// nothing changed.
type RespondError struct {
	Reason  string
	Message string
}

func (e *RespondError) Error() string { return e.Message }

// Response is what the agent answers to a pending checkpoint.
type Response struct {
	AtlasID      string // optional when the checkpoint_id is in one atlas only
	CheckpointID string
	Answers      map[string]json.RawMessage // by question_id
}

// RespondResult is what a response did: its outcome (passed, warned,
// logged: the checkpoint passed; retry: it stays pending; blocked), each
// answer's check and the warnings for the agent.
type RespondResult struct {
	Def      *Def
	Instance string
	Outcome  string
	Results  []AnswerResult
	Warnings []string
	Steps    []Step
}

// Passed reports whether the checkpoint passed.
func (r RespondResult) Passed() bool {
	return r.Outcome == OutcomePassed || r.Outcome == OutcomeWarned || r.Outcome == OutcomeLogged
}

// Find returns the checkpoint a response names.
func (set *Set) Find(atlasID, checkpointID string) (*Def, *RespondError) {
	if atlasID != "" {
		if d, ok := set.byKey[Key(atlasID, checkpointID)]; ok {
			return d, nil
		}
		return nil, &RespondError{ErrNotFound, fmt.Sprintf("atlas %s has no checkpoint %q", atlasID, checkpointID)}
	}
	var found []*Def
	for _, d := range set.defs {
		if d.CP.CheckpointID == checkpointID {
			found = append(found, d)
		}
	}
	switch len(found) {
	case 0:
		return nil, &RespondError{ErrNotFound, fmt.Sprintf("no loaded atlas has a checkpoint %q", checkpointID)}
	case 1:
		return found[0], nil
	}
	return nil, &RespondError{ErrAmbiguous, fmt.Sprintf("checkpoint %q is in several atlases: name the atlas (atlas_id)", checkpointID)}
}

// Respond checks r's answers to its checkpoint, pending in s, and
// applies the outcome: passed (its effects), retry (pending still),
// blocked (its gated actions refused for the session). The warn and log
// outcomes pass. Answers reach the steps only as hashes.
func Respond(set *Set, s *Session, r Response, now time.Time) (RespondResult, *RespondError) {
	d, rerr := set.Find(r.AtlasID, r.CheckpointID)
	if rerr != nil {
		return RespondResult{}, rerr
	}
	set.Sync(s)
	st := s.peek(d.Key)
	if st.EvalHeld {
		return RespondResult{}, &RespondError{ErrNotPending, fmt.Sprintf("checkpoint %s waits for its evaluator, not for answers: ask again later", d.CP.CheckpointID)}
	}
	switch st.Status {
	case StatusBlocked:
		return RespondResult{}, &RespondError{ErrBlocked, fmt.Sprintf("checkpoint %s refused this session's answers (on_invalid block); it takes no more", d.CP.CheckpointID)}
	case StatusPending:
	default:
		return RespondResult{}, &RespondError{ErrNotPending, fmt.Sprintf("checkpoint %s is not waiting for answers", d.CP.CheckpointID)}
	}
	ids := make([]string, 0, len(r.Answers))
	for id := range r.Answers {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if !slices.ContainsFunc(d.questions, func(q *Question) bool { return q.QuestionID == id }) {
			return RespondResult{}, &RespondError{ErrUnknownQuestion, fmt.Sprintf("checkpoint %s asks no question %q", d.CP.CheckpointID, id)}
		}
	}
	e := &eval{set: set, s: s, ev: Event{Now: now}}
	live := s.state(d.Key)
	live.Attempts++
	e.changed()
	res := RespondResult{Def: d, Instance: live.Instance}
	hashes := map[string]string{}
	for _, q := range d.questions {
		a, present := r.Answers[q.QuestionID]
		if present {
			hashes[q.QuestionID] = fullHash(string(a))
		}
		res.Results = append(res.Results, q.Check(a, present))
	}
	res.Outcome = Outcome(res.Results)
	e.step(TraceResponseReceived, map[string]any{"checkpoint_id": d.CP.CheckpointID, "atlas_ref": d.AtlasRef,
		"instance_id": live.Instance, "attempt": live.Attempts, "answer_hashes": hashes})
	checks := make([]map[string]any, 0, len(res.Results))
	for _, x := range res.Results {
		c := map[string]any{"question_id": x.QuestionID, "answered": x.Answered, "valid": x.Valid}
		if !x.Valid {
			c["reason"], c["on_invalid"] = x.Reason, x.OnInvalid
			if x.OnInvalid == atlas.OnInvalidWarnAndContinue {
				res.Warnings = append(res.Warnings, "question "+x.QuestionID+": "+x.Message+" (accepted with a warning)")
			}
		}
		checks = append(checks, c)
	}
	e.step(TraceValidated, map[string]any{"checkpoint_id": d.CP.CheckpointID, "atlas_ref": d.AtlasRef,
		"instance_id": live.Instance, "outcome": res.Outcome, "results": checks})
	switch res.Outcome {
	case OutcomeRetry, OutcomeBlocked:
		if res.Outcome == OutcomeBlocked {
			live.Status = StatusBlocked
		}
		e.step(TraceFailed, map[string]any{"checkpoint_id": d.CP.CheckpointID, "atlas_ref": d.AtlasRef,
			"instance_id": live.Instance, "outcome": res.Outcome, "reason": "invalid answers",
			"blocked_actions": d.GatesWhat(), "retry": res.Outcome == OutcomeRetry})
	default:
		if d.Mode == atlas.ModeBlocking {
			e.pass(d, live, res.Outcome)
		} else {
			// An advisory checkpoint took effect when it fired: its
			// answers are recorded, and it is done.
			live.Status = StatusIdle
			e.step(TracePassed, map[string]any{"checkpoint_id": d.CP.CheckpointID, "atlas_ref": d.AtlasRef,
				"instance_id": live.Instance, "outcome": res.Outcome})
		}
	}
	res.Steps = e.out.Steps
	return res, nil
}

// Asks reports whether hint names an explicit_request checkpoint (its
// checkpoint_id, or atlas_id "/" checkpoint_id): a context hint that
// asks for it.
func (set *Set) Asks(hint string) bool {
	for _, d := range set.defs {
		if d.Type == TypeExplicitRequest && (hint == d.CP.CheckpointID || hint == d.Key) {
			return true
		}
	}
	return false
}
