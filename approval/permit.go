package approval

import (
	"fmt"
	"time"
)

// Permit is what an approval issues: the right to run one tool, either
// for exactly one canonical request (Digest) or within an approved
// envelope's scope (Paths, Digest empty), under one policy version, a
// number of times, until it expires or is revoked.
type Permit struct {
	ID              string      `json:"permit_id"`
	ApprovalID      string      `json:"approval_id"` // the checkpoint's gate
	Session         string      `json:"session"`
	Tool            string      `json:"tool"`
	Digest          string      `json:"digest,omitempty"` // the canonical request's; empty for an envelope permit
	Paths           []string    `json:"paths"`            // the scope: path patterns
	SideEffectClass string      `json:"side_effect_class"`
	RiskTier        string      `json:"risk_tier"`
	PolicyVersion   string      `json:"policy_version"`
	IssuedAt        time.Time   `json:"issued_at"`
	ExpiresAt       time.Time   `json:"expires_at"`
	MaxUses         int         `json:"max_uses"`
	Uses            []string    `json:"uses"` // the executions that used it, in order
	Revoked         *Revocation `json:"revoked,omitempty"`
	TrustSeq        int         `json:"trust_seq"` // the session's last trust event when it was issued
}

// Revocation is why a permit stopped: an operator's revoke, or the
// protocol's cancel (arguments mutated, envelope invalidated).
type Revocation struct {
	By     string    `json:"by"`
	At     time.Time `json:"at"`
	Reason string    `json:"reason"`
}

// Permit states (Status).
const (
	PermitActive    = "active"
	PermitUsed      = "used"
	PermitExpired   = "expired"
	PermitRevoked   = "revoked"
	PermitCancelled = "cancelled"
)

// Reasons a permit is revoked by the protocol.
const (
	ReasonArgumentsMutated    = "arguments_mutated"
	ReasonEnvelopeInvalidated = "envelope_invalidated"
)

// Status returns p's state at now.
func (p Permit) Status(now time.Time) string {
	switch {
	case p.Revoked != nil && p.Revoked.By == "protocol":
		return PermitCancelled
	case p.Revoked != nil:
		return PermitRevoked
	case len(p.Uses) >= p.MaxUses:
		return PermitUsed
	case !now.Before(p.ExpiresAt):
		return PermitExpired
	}
	return PermitActive
}

// Usable returns nil when p may be used at now, else why not (wrapping
// ErrPermitVoid).
func (p Permit) Usable(now time.Time) error {
	switch s := p.Status(now); s {
	case PermitActive:
		return nil
	case PermitRevoked, PermitCancelled:
		return fmt.Errorf("%w: permit %s was %s by %s (%s)", ErrPermitVoid, p.ID, s, p.Revoked.By, p.Revoked.Reason)
	case PermitUsed:
		return fmt.Errorf("%w: permit %s was used %d of %d times", ErrPermitVoid, p.ID, len(p.Uses), p.MaxUses)
	default:
		return fmt.Errorf("%w: permit %s expired at %s", ErrPermitVoid, p.ID, p.ExpiresAt.UTC().Format(time.RFC3339))
	}
}

// Bind checks that request c is the one permit p was issued for: nil, or
// ErrMutated when p is bound to another digest (the caller cancels the
// approval), or why p is not usable.
func Bind(p Permit, c Canonical, now time.Time) error {
	if err := p.Usable(now); err != nil {
		return err
	}
	if p.Tool != c.Tool {
		return fmt.Errorf("%w: permit %s is for %s, not %s", ErrMutated, p.ID, p.Tool, c.Tool)
	}
	if p.Digest != "" && !SameDigest(p.Digest, c.Digest) {
		return fmt.Errorf("%w: the request's canonical digest %s is not the approved %s", ErrMutated, c.Digest, p.Digest)
	}
	return nil
}

// Use records execution x's use of p.
func (p Permit) Use(x string) Permit {
	p.Uses = append(append([]string(nil), p.Uses...), x)
	return p
}

// Revoke returns p revoked by by at at for reason.
func (p Permit) Revoke(by string, at time.Time, reason string) Permit {
	if p.Revoked == nil {
		p.Revoked = &Revocation{By: by, At: at, Reason: reason}
	}
	return p
}
