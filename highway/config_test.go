package highway

import (
	"errors"
	"testing"
	"time"
)

func TestDefaultsAndPresets(t *testing.T) {
	d := Default()
	if !d.Visibility || !d.Injection || !d.Escalation.Enabled || d.Preset != "" {
		t.Errorf("Default() = %+v", d)
	}
	for _, typ := range GateTypes() {
		if got, want := d.Gated(typ), typ == TaskApproval; got != want {
			t.Errorf("Default().Gated(%s) = %v, want %v", typ, got, want)
		}
	}
	tests := []struct {
		preset   string
		gated    []GateType
		timeout  *time.Duration
		fallback Fallback
		esc      EscalationFallback
		escT     *time.Duration
	}{
		{"autonomous", []GateType{TaskApproval}, ptr(ShortTimeout), FallbackApprove, EscalationCoordinator, ptr(ShortTimeout)},
		{"supervised", []GateType{TaskApproval, Integration}, ptr(MediumTimeout), FallbackReject, EscalationReject, ptr(MediumTimeout)},
		{"gated", GateTypes(), nil, FallbackReject, EscalationReject, nil},
	}
	for _, tt := range tests {
		c := mustPreset(t, tt.preset)
		n := 0
		for _, typ := range GateTypes() {
			if c.Gated(typ) {
				n++
			}
		}
		if n != len(tt.gated) {
			t.Errorf("%s gates %d types, want %v", tt.preset, n, tt.gated)
		}
		for _, typ := range tt.gated {
			if !c.Gated(typ) {
				t.Errorf("%s does not gate %s", tt.preset, typ)
			}
			p := c.Policy(typ)
			if !eqDur(p.Timeout, tt.timeout) || (p.Timeout != nil && p.Fallback != tt.fallback) {
				t.Errorf("%s.Policy(%s) = %v %s", tt.preset, typ, p.Timeout, p.Fallback)
			}
		}
		if !c.Escalation.Enabled || c.Escalation.Fallback != tt.esc || !eqDur(c.Escalation.Timeout, tt.escT) {
			t.Errorf("%s escalation = %+v", tt.preset, c.Escalation)
		}
	}
	if _, err := Preset("relaxed"); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("Preset(relaxed) = %v", err)
	}
}

func eqDur(a, b *time.Duration) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func TestParse(t *testing.T) {
	c, err := Parse([]byte(`
highway:
  preset: autonomous
  visibility: false
  gates:
    integration: true
    task_approval: false
  gate_defaults:
    timeout: 2m
  gate_overrides:
    integration:
      timeout: null
    workspace_abort:
      fallback: escalate_to_coordinator
  injection: false
  escalation:
    timeout: null
    fallback: reject
`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Preset != "autonomous" || c.Visibility || c.Injection || !c.Gated(Integration) || c.Gated(TaskApproval) {
		t.Errorf("Parse = %+v", c)
	}
	if p := c.Policy(TaskApproval); !eqDur(p.Timeout, ptr(2*time.Minute)) || p.Fallback != FallbackApprove {
		t.Errorf("task_approval policy = %v %s, want 2m approve (the preset's fallback kept)", p.Timeout, p.Fallback)
	}
	if p := c.Policy(Integration); p.Timeout != nil {
		t.Errorf("integration timeout = %v, want none (null)", *p.Timeout)
	}
	if p := c.Policy(WorkspaceAbort); !eqDur(p.Timeout, ptr(2*time.Minute)) || p.Fallback != FallbackCoordinator {
		t.Errorf("workspace_abort policy = %v %s", p.Timeout, p.Fallback)
	}
	if c.Escalation.Timeout != nil || c.Escalation.Fallback != EscalationReject || !c.Escalation.Enabled {
		t.Errorf("escalation = %+v", c.Escalation)
	}
	// Without a preset, the spec's defaults.
	c, err = Parse([]byte("highway: {}\n"))
	if err != nil || !c.Gated(TaskApproval) || c.Gated(Integration) || !eqDur(c.Policy(TaskApproval).Timeout, ptr(MediumTimeout)) {
		t.Errorf("Parse(empty block) = %+v, %v", c, err)
	}
	for _, in := range []string{
		"",
		"other: {}\n",
		"highway: {}\nother: 1\n",
		"highway:\n  preset: relaxed\n",
		"highway:\n  gates:\n    deploy: true\n",
		"highway:\n  gate_overrides:\n    deploy: {timeout: 1m}\n",
		"highway:\n  gate_defaults:\n    timeout: 0s\n",
		"highway:\n  gate_defaults:\n    timeout: soon\n",
		"highway:\n  gate_defaults:\n    timeout: [1m]\n",
		"highway:\n  gate_defaults:\n    fallback: maybe\n",
		"highway:\n  escalation:\n    fallback: escalate_to_coordinator\n",
		"highway:\n  escalation:\n    timeout: -1s\n",
		"highway:\n  visibility: sometimes\n",
		"highway:\n  gate_defaults:\n    timeout: 1m\n    retries: 3\n",
	} {
		if c, err := Parse([]byte(in)); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("Parse(%q) = %+v, %v; want ErrInvalidConfig", in, c, err)
		}
	}
}
