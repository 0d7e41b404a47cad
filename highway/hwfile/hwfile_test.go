package hwfile

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/wacpd/wacpd/highway"
)

func ptr[T any](v T) *T { return &v }

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
	if c.Preset != "autonomous" || c.Visibility || c.Injection || !c.Gated(highway.Integration) || c.Gated(highway.TaskApproval) {
		t.Errorf("Parse = %+v", c)
	}
	if p := c.Policy(highway.TaskApproval); !eqDur(p.Timeout, ptr(2*time.Minute)) || p.Fallback != highway.FallbackApprove {
		t.Errorf("task_approval policy = %v %s, want 2m approve (the preset's fallback kept)", p.Timeout, p.Fallback)
	}
	if p := c.Policy(highway.Integration); p.Timeout != nil {
		t.Errorf("integration timeout = %v, want none (null)", *p.Timeout)
	}
	if p := c.Policy(highway.WorkspaceAbort); !eqDur(p.Timeout, ptr(2*time.Minute)) || p.Fallback != highway.FallbackCoordinator {
		t.Errorf("workspace_abort policy = %v %s", p.Timeout, p.Fallback)
	}
	if c.Escalation.Timeout != nil || c.Escalation.Fallback != highway.EscalationReject || !c.Escalation.Enabled {
		t.Errorf("escalation = %+v", c.Escalation)
	}
	// Without a preset, the spec's defaults.
	c, err = Parse([]byte("highway: {}\n"))
	if err != nil || !c.Gated(highway.TaskApproval) || c.Gated(highway.Integration) || !eqDur(c.Policy(highway.TaskApproval).Timeout, ptr(highway.MediumTimeout)) {
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
		if c, err := Parse([]byte(in)); !errors.Is(err, highway.ErrInvalidConfig) {
			t.Errorf("Parse(%q) = %+v, %v; want highway.ErrInvalidConfig", in, c, err)
		}
	}
}

// FuzzParse: a configuration file parses to a resolved configuration (every
// gated type has a policy whose timeout, if any, is positive and whose
// fallback is valid) or is refused with highway.ErrInvalidConfig; nothing panics.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"highway: {}\n",
		"highway:\n  preset: gated\n",
		"highway:\n  preset: autonomous\n  gates: {integration: true}\n  gate_defaults: {timeout: 2m, fallback: reject}\n",
		"highway:\n  gate_overrides:\n    integration: {timeout: null, fallback: escalate_to_coordinator}\n  escalation: {enabled: false, timeout: 1h, fallback: delegate_to_coordinator}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			if !errors.Is(err, highway.ErrInvalidConfig) {
				t.Fatalf("Parse = %v, want highway.ErrInvalidConfig", err)
			}
			return
		}
		for _, typ := range highway.GateTypes() {
			p := c.Policy(typ)
			if p.Timeout != nil && (*p.Timeout <= 0 || !p.Fallback.Valid()) {
				t.Fatalf("Policy(%s) = %v %q", typ, *p.Timeout, p.Fallback)
			}
		}
		if c.Escalation.Timeout != nil && (*c.Escalation.Timeout <= 0 || !c.Escalation.Fallback.Valid()) {
			t.Fatalf("escalation = %+v", c.Escalation)
		}
	})
}

func TestLoad(t *testing.T) {
	c, err := Load("gated")
	if err != nil || c.Preset != "gated" || !c.Gated(highway.WorkspaceAbort) {
		t.Errorf("Load(gated) = %+v, %v", c, err)
	}
	dir := t.TempDir()
	p := dir + "/highway.yaml"
	if err := os.WriteFile(p, []byte("highway:\n  preset: supervised\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if c, err := Load(p); err != nil || !c.Gated(highway.Integration) {
		t.Errorf("Load(file) = %+v, %v", c, err)
	}
	if err := os.WriteFile(p, []byte("highway:\n  gates: {deploy: true}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(p); !errors.Is(err, highway.ErrInvalidConfig) || !strings.Contains(err.Error(), p) {
		t.Errorf("Load(bad file) = %v, want ErrInvalidConfig naming %s", err, p)
	}
	if _, err := Load(dir + "/missing.yaml"); err == nil {
		t.Error("Load(missing file) = nil error")
	}
}
