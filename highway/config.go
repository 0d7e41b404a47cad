package highway

import (
	"fmt"
	"time"
)

// Policy is a gate type's timeout and fallback. A nil Timeout waits
// indefinitely (and Fallback is then never used).
type Policy struct {
	Timeout  *time.Duration
	Fallback Fallback
}

// EscalationFallback is what an escalation's timeout does (Human Highway
// §5). Persisted as its string value.
type EscalationFallback string

// The three escalation fallbacks.
const (
	EscalationApprove     EscalationFallback = "approve"
	EscalationReject      EscalationFallback = "reject"
	EscalationCoordinator EscalationFallback = "delegate_to_coordinator"
)

// Valid reports whether f is one of the three escalation fallbacks.
func (f EscalationFallback) Valid() bool {
	return f == EscalationApprove || f == EscalationReject || f == EscalationCoordinator
}

// Escalation is the escalation block of the configuration.
type Escalation struct {
	Enabled  bool
	Timeout  *time.Duration // nil: wait indefinitely
	Fallback EscalationFallback
}

// Config is a run's highway configuration (Human Highway §5), resolved:
// every field has its value.
type Config struct {
	Preset     string // the preset it started from; "" for the spec's defaults
	Visibility bool
	Gates      map[GateType]bool
	Defaults   Policy
	Overrides  map[GateType]Policy
	Injection  bool
	Escalation Escalation
}

// Gated reports whether c gates transitions of type t.
func (c Config) Gated(t GateType) bool { return c.Gates[t] }

// Policy returns the timeout and fallback of gates of type t: its override,
// or the defaults.
func (c Config) Policy(t GateType) Policy {
	if p, ok := c.Overrides[t]; ok {
		return p
	}
	return c.Defaults
}

// The timeouts of the presets: short (autonomous) and medium (supervised,
// and the spec's defaults without a configuration).
const (
	ShortTimeout  = 30 * time.Second
	MediumTimeout = 15 * time.Minute
)

// Default returns the configuration of a run without one (§5, default
// behavior): visibility, injection and escalation on, only task_approval
// gated; gates and escalations wait MediumTimeout and then reject.
func Default() Config {
	m := MediumTimeout
	return Config{
		Visibility: true, Injection: true,
		Gates:      map[GateType]bool{TaskApproval: true},
		Defaults:   Policy{Timeout: &m, Fallback: FallbackReject},
		Overrides:  map[GateType]Policy{},
		Escalation: Escalation{Enabled: true, Timeout: &m, Fallback: EscalationReject},
	}
}

// Presets returns the names of the three presets.
func Presets() []string { return []string{"autonomous", "supervised", "gated"} }

// Preset returns a named preset (§5):
//   - autonomous: task_approval gated, ShortTimeout, fallback approve;
//     escalation ShortTimeout, fallback delegate_to_coordinator;
//   - supervised: task_approval and integration gated, MediumTimeout,
//     fallback reject; escalation MediumTimeout, fallback reject;
//   - gated: all six gated, no timeout; escalation without a timeout.
func Preset(name string) (Config, error) {
	c := Default()
	c.Preset = name
	switch name {
	case "autonomous":
		s := ShortTimeout
		c.Defaults = Policy{Timeout: &s, Fallback: FallbackApprove}
		c.Escalation = Escalation{Enabled: true, Timeout: &s, Fallback: EscalationCoordinator}
	case "supervised":
		c.Gates[Integration] = true
	case "gated":
		for _, t := range GateTypes() {
			c.Gates[t] = true
		}
		c.Defaults = Policy{Fallback: FallbackReject}
		c.Escalation = Escalation{Enabled: true, Fallback: EscalationReject}
	default:
		return Config{}, fmt.Errorf("%w: preset %q is not one of %v", ErrInvalidConfig, name, Presets())
	}
	return c, nil
}
