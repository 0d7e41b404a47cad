// Package hwfile reads a run's human highway configuration from YAML
// (highway.Config): the -highway file of wacpd.
package hwfile

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"slices"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/wacpd/wacpd/highway"
)

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
// wrapping highway.ErrInvalidConfig, and nothing is returned.
func Parse(data []byte) (highway.Config, error) {
	var f file
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return highway.Config{}, fmt.Errorf("%w: %v", highway.ErrInvalidConfig, err)
	}
	if f.Highway == nil {
		return highway.Config{}, fmt.Errorf("%w: no highway block", highway.ErrInvalidConfig)
	}
	b := f.Highway
	c := highway.Default()
	if b.Preset != "" {
		var err error
		if c, err = highway.Preset(b.Preset); err != nil {
			return highway.Config{}, err
		}
	}
	if b.Visibility != nil {
		c.Visibility = *b.Visibility
	}
	if b.Injection != nil {
		c.Injection = *b.Injection
	}
	for _, name := range slices.Sorted(maps.Keys(b.Gates)) {
		t := highway.GateType(name)
		if !t.Valid() {
			return highway.Config{}, fmt.Errorf("%w: gates: %q is not one of the six gate types", highway.ErrInvalidConfig, name)
		}
		c.Gates[t] = b.Gates[name]
	}
	if b.GateDefaults != nil {
		p, err := b.GateDefaults.apply(c.Defaults, "gate_defaults")
		if err != nil {
			return highway.Config{}, err
		}
		c.Defaults = p
	}
	for _, name := range slices.Sorted(maps.Keys(b.GateOverrides)) {
		t := highway.GateType(name)
		if !t.Valid() {
			return highway.Config{}, fmt.Errorf("%w: gate_overrides: %q is not one of the six gate types", highway.ErrInvalidConfig, name)
		}
		p, err := b.GateOverrides[name].apply(c.Policy(t), "gate_overrides."+name)
		if err != nil {
			return highway.Config{}, err
		}
		c.Overrides[t] = p
	}
	if e := b.Escalation; e != nil {
		if e.Enabled != nil {
			c.Escalation.Enabled = *e.Enabled
		}
		if d, set, err := timeout(e.Timeout, "escalation.timeout"); err != nil {
			return highway.Config{}, err
		} else if set {
			c.Escalation.Timeout = d
		}
		if e.Fallback != "" {
			f := highway.EscalationFallback(e.Fallback)
			if !f.Valid() {
				return highway.Config{}, fmt.Errorf("%w: escalation.fallback %q is not approve, reject or delegate_to_coordinator", highway.ErrInvalidConfig, e.Fallback)
			}
			c.Escalation.Fallback = f
		}
	}
	return c, nil
}

// apply returns base changed by p.
func (p policyBlock) apply(base highway.Policy, where string) (highway.Policy, error) {
	d, set, err := timeout(p.Timeout, where+".timeout")
	if err != nil {
		return highway.Policy{}, err
	}
	if set {
		base.Timeout = d
	}
	if p.Fallback != "" {
		f := highway.Fallback(p.Fallback)
		if !f.Valid() {
			return highway.Policy{}, fmt.Errorf("%w: %s.fallback %q is not approve, reject or escalate_to_coordinator", highway.ErrInvalidConfig, where, p.Fallback)
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
			return nil, false, fmt.Errorf("%w: %s %q is not a positive duration or null", highway.ErrInvalidConfig, where, n.Value)
		}
		return &v, true, nil
	}
	return nil, false, fmt.Errorf("%w: %s is not a duration or null", highway.ErrInvalidConfig, where)
}

// Load returns the configuration -highway names: one of the three preset
// names, or the path of a file Parse reads. Errors name the file.
func Load(arg string) (highway.Config, error) {
	if slices.Contains(highway.Presets(), arg) {
		return highway.Preset(arg)
	}
	data, err := os.ReadFile(arg)
	if err != nil {
		return highway.Config{}, fmt.Errorf("highway configuration: %w", err)
	}
	c, err := Parse(data)
	if err != nil {
		return highway.Config{}, fmt.Errorf("highway configuration %s: %w", arg, err)
	}
	return c, nil
}
