package highway

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"time"

	"gopkg.in/yaml.v3"
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

// file is the YAML form of a configuration: a document whose one key is
// highway. Timeouts are yaml.Nodes so that null (wait indefinitely) and
// absent (keep the base's) differ.
type file struct {
	Highway *block `yaml:"highway"`
}

type block struct {
	Preset        string                 `yaml:"preset"` // wacpd's: the base the other fields change
	Visibility    *bool                  `yaml:"visibility"`
	Gates         map[string]bool        `yaml:"gates"`
	GateDefaults  *policyBlock           `yaml:"gate_defaults"`
	GateOverrides map[string]policyBlock `yaml:"gate_overrides"`
	Injection     *bool                  `yaml:"injection"`
	Escalation    *escalationBlock       `yaml:"escalation"`
}

type policyBlock struct {
	Timeout  yaml.Node `yaml:"timeout"`
	Fallback string    `yaml:"fallback"`
}

type escalationBlock struct {
	Enabled  *bool     `yaml:"enabled"`
	Timeout  yaml.Node `yaml:"timeout"`
	Fallback string    `yaml:"fallback"`
}

// Parse reads a configuration file: YAML with one key, highway, holding
// the spec's block (§5) and, as wacpd's extension, preset: the named
// preset the block starts from (without one, the defaults). A field the
// block leaves out keeps the base's value; a timeout of null waits
// indefinitely. Unknown keys, gate types other than the six, timeouts
// that are not positive durations and unknown fallbacks are errors
// wrapping ErrInvalidConfig, and nothing is returned.
func Parse(data []byte) (Config, error) {
	var f file
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return Config{}, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	if f.Highway == nil {
		return Config{}, fmt.Errorf("%w: no highway block", ErrInvalidConfig)
	}
	b := f.Highway
	c := Default()
	if b.Preset != "" {
		var err error
		if c, err = Preset(b.Preset); err != nil {
			return Config{}, err
		}
	}
	if b.Visibility != nil {
		c.Visibility = *b.Visibility
	}
	if b.Injection != nil {
		c.Injection = *b.Injection
	}
	for _, name := range slices.Sorted(maps.Keys(b.Gates)) {
		t := GateType(name)
		if !t.Valid() {
			return Config{}, fmt.Errorf("%w: gates: %q is not one of the six gate types", ErrInvalidConfig, name)
		}
		c.Gates[t] = b.Gates[name]
	}
	if b.GateDefaults != nil {
		p, err := b.GateDefaults.apply(c.Defaults, "gate_defaults")
		if err != nil {
			return Config{}, err
		}
		c.Defaults = p
	}
	for _, name := range slices.Sorted(maps.Keys(b.GateOverrides)) {
		t := GateType(name)
		if !t.Valid() {
			return Config{}, fmt.Errorf("%w: gate_overrides: %q is not one of the six gate types", ErrInvalidConfig, name)
		}
		p, err := b.GateOverrides[name].apply(c.Policy(t), "gate_overrides."+name)
		if err != nil {
			return Config{}, err
		}
		c.Overrides[t] = p
	}
	if e := b.Escalation; e != nil {
		if e.Enabled != nil {
			c.Escalation.Enabled = *e.Enabled
		}
		if d, set, err := timeout(e.Timeout, "escalation.timeout"); err != nil {
			return Config{}, err
		} else if set {
			c.Escalation.Timeout = d
		}
		if e.Fallback != "" {
			f := EscalationFallback(e.Fallback)
			if !f.Valid() {
				return Config{}, fmt.Errorf("%w: escalation.fallback %q is not approve, reject or delegate_to_coordinator", ErrInvalidConfig, e.Fallback)
			}
			c.Escalation.Fallback = f
		}
	}
	return c, nil
}

// apply returns base changed by p.
func (p policyBlock) apply(base Policy, where string) (Policy, error) {
	d, set, err := timeout(p.Timeout, where+".timeout")
	if err != nil {
		return Policy{}, err
	}
	if set {
		base.Timeout = d
	}
	if p.Fallback != "" {
		f := Fallback(p.Fallback)
		if !f.Valid() {
			return Policy{}, fmt.Errorf("%w: %s.fallback %q is not approve, reject or escalate_to_coordinator", ErrInvalidConfig, where, p.Fallback)
		}
		base.Fallback = f
	}
	return base, nil
}

// timeout reads a timeout node: absent (set false), null (nil: wait
// indefinitely) or a positive Go duration.
func timeout(n yaml.Node, where string) (d *time.Duration, set bool, err error) {
	switch {
	case n.Kind == 0:
		return nil, false, nil
	case n.Kind == yaml.ScalarNode && n.Tag == "!!null":
		return nil, true, nil
	case n.Kind == yaml.ScalarNode:
		v, err := time.ParseDuration(n.Value)
		if err != nil || v <= 0 {
			return nil, false, fmt.Errorf("%w: %s %q is not a positive duration or null", ErrInvalidConfig, where, n.Value)
		}
		return &v, true, nil
	}
	return nil, false, fmt.Errorf("%w: %s is not a duration or null", ErrInvalidConfig, where)
}
