package approval

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/wacpd/wacpd/atlas"
	"github.com/wacpd/wacpd/internal/strictjson"
)

// Outcome is how a checkpoint ended (seed 003, "Checkpoint outcomes").
type Outcome string

// The five outcomes.
const (
	OutcomeContinue = Outcome("continue")          // continue under the existing envelope: a permit for exactly the request
	OutcomeModified = Outcome("continue_modified") // continue under a modified envelope with renewed approval
	OutcomePerStep  = Outcome("per_step")          // approve the request, and every later step needs its own approval
	OutcomeDeny     = Outcome("deny")              // deny further execution of the request
	OutcomeHalt     = Outcome("halt")              // deny, and halt the workflow until an operator acts
)

// OutcomeOf returns the outcome of a gate answer: approve (continue, or
// per_step), modify (continue_modified) or reject (deny, or halt).
// outcome "" takes the answer's default.
func OutcomeOf(action, outcome string) (Outcome, error) {
	o := Outcome(outcome)
	allowed := map[string][]Outcome{
		"approve": {OutcomeContinue, OutcomePerStep},
		"modify":  {OutcomeModified},
		"reject":  {OutcomeDeny, OutcomeHalt},
	}[action]
	if len(allowed) == 0 {
		return "", fmt.Errorf("%w: a checkpoint is answered approve, modify or reject, not %q", ErrOutcome, action)
	}
	if o == "" {
		return allowed[0], nil
	}
	if !slices.Contains(allowed, o) {
		return "", fmt.Errorf("%w: %s takes outcome %v, not %q", ErrOutcome, action, allowed, outcome)
	}
	return o, nil
}

// MaxPermitTTL bounds a modified envelope's ttl_seconds.
const MaxPermitTTL = 7 * 24 * time.Hour

// DecodeProposal decodes a modified envelope (a modify's payload) and
// checks it against cp and policy p: path patterns that still cover the
// held request's paths, 1 to p.MaxPermitUses uses, 1 second to
// MaxPermitTTL.
func DecodeProposal(raw json.RawMessage, cp Checkpoint, p Policy) (Proposal, error) {
	var pr Proposal
	if err := strictjson.Decode(raw, &pr); err != nil {
		return Proposal{}, fmt.Errorf("%w: payload is {\"paths\": [...], \"uses\": n, \"ttl_seconds\": n}: %v", ErrEnvelope, err)
	}
	for _, pat := range pr.Paths {
		if err := atlas.CheckPathPattern(pat); err != nil {
			return Proposal{}, fmt.Errorf("%w: %v", ErrEnvelope, err)
		}
	}
	for _, path := range cp.Paths {
		if !covered(path, pr.Paths) {
			return Proposal{}, fmt.Errorf("%w: the envelope's paths do not cover %s, which the held request touches", ErrEnvelope, path)
		}
	}
	switch {
	case pr.Uses < 1 || pr.Uses > p.MaxPermitUses:
		return Proposal{}, fmt.Errorf("%w: uses %d is not between 1 and %d", ErrEnvelope, pr.Uses, p.MaxPermitUses)
	case pr.TTLSeconds < 1 || time.Duration(pr.TTLSeconds)*time.Second > MaxPermitTTL:
		return Proposal{}, fmt.Errorf("%w: ttl_seconds %d is not between 1 and %d", ErrEnvelope, pr.TTLSeconds, int(MaxPermitTTL/time.Second))
	}
	return pr, nil
}

// Settlement is what an outcome does: the permit it issues (nil for a
// denial), the session's envelope after it, and whether the workflow
// halts.
type Settlement struct {
	Outcome  Outcome
	Permit   *Permit
	Envelope Envelope
	Halt     bool
}

// Decide settles checkpoint cp with outcome o (and, for
// continue_modified, the operator's proposal pr) given the session's
// envelope env: an approval issues permit id, valid from now — for
// exactly the request, or within the modified envelope's scope — and
// acknowledges in the envelope what the operator saw change in the
// session's standing (a policy version; with a modified envelope, a
// provider class too); per_step
// shifts the session to per-step approval. Nothing else widens: what may
// run is the permit's.
func Decide(cp Checkpoint, o Outcome, pr Proposal, env Envelope, id string, now time.Time, trustSeq int) (Settlement, error) {
	s := Settlement{Outcome: o, Envelope: env}
	switch o {
	case OutcomeDeny:
		return s, nil
	case OutcomeHalt:
		s.Halt = true
		return s, nil
	case OutcomeContinue, OutcomePerStep:
		pr = Proposal{Paths: cp.Paths, Uses: 1, TTLSeconds: cp.Proposal.TTLSeconds}
	case OutcomeModified:
	default:
		return s, fmt.Errorf("%w: %q", ErrOutcome, o)
	}
	pm := Permit{ID: id, ApprovalID: cp.ApprovalID, Session: cp.Session, Tool: cp.Tool, Paths: nonNil(pr.Paths),
		SideEffectClass: cp.SideEffectClass, RiskTier: cp.RiskTier, PolicyVersion: cp.PolicyVersion, IssuedAt: now,
		ExpiresAt: now.Add(time.Duration(pr.TTLSeconds) * time.Second), MaxUses: pr.Uses, Uses: []string{}, TrustSeq: trustSeq}
	if o != OutcomeModified {
		pm.Digest = cp.Digest
	}
	s.Permit = &pm
	e := env
	if o == OutcomeModified && cp.ProviderClass != "" && !slices.Contains(e.Providers, cp.ProviderClass) {
		e.Providers = append(slices.Clone(e.Providers), cp.ProviderClass)
	}
	e.PolicyVersions = withVersion(e.PolicyVersions, cp.Atlas, cp.PolicyVersion)
	if o == OutcomePerStep {
		e.PerStep = true
	}
	s.Envelope = e
	return s, nil
}
