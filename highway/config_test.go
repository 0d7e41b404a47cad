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
