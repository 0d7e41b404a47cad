package atlas_test

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/wacpd/wacpd/atlas"
)

var schemaFile string

func sample(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile("testdata/acme.json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func list(m map[string]any, key string) []any { return m[key].([]any) }

func entry(m map[string]any, key string, i int) map[string]any {
	return list(m, key)[i].(map[string]any)
}

func TestParseSample(t *testing.T) {
	b, err := os.ReadFile("testdata/acme.json")
	if err != nil {
		t.Fatal(err)
	}
	m, err := atlas.Parse("acme.json", b)
	if err != nil {
		t.Fatal(err)
	}
	if m.AtlasID != "com.acme.support" || len(m.Actions) != 7 || len(m.Checkpoints) != 4 {
		t.Fatalf("parsed %s with %d actions, %d checkpoints", m.AtlasID, len(m.Actions), len(m.Checkpoints))
	}
}

// TestValidateRefuses: each rule, broken once in the sample, is refused
// with the file, the entry and the rule.
func TestValidateRefuses(t *testing.T) {
	schemaFile = t.TempDir() + "/s.json"
	if err := os.WriteFile(schemaFile, []byte(`{"type":"string"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name        string
		change      func(m map[string]any)
		entry, rule string
	}{
		{"unknown field", func(m map[string]any) { m["atlas_idd"] = "x" }, "", atlas.RuleStructure},
		{"atlas_version", func(m map[string]any) { m["atlas_version"] = "2.0" }, "", atlas.RuleVersion},
		{"atlas_id pattern", func(m map[string]any) { m["atlas_id"] = "Com.Acme" }, "", atlas.RuleAtlasID},
		{"atlas_id missing", func(m map[string]any) { delete(m, "atlas_id") }, "", atlas.RuleRequired},
		{"semver short", func(m map[string]any) { m["version"] = "2.1" }, "", atlas.RuleSemver},
		{"semver leading zero", func(m map[string]any) { m["version"] = "02.1.0" }, "", atlas.RuleSemver},
		{"duplicate action", func(m map[string]any) {
			m["actions"] = append(list(m, "actions"), map[string]any{"action_id": "ticket.get"})
		}, "actions[ticket.get]", atlas.RuleDuplicate},
		{"duplicate policy", func(m map[string]any) {
			m["policies"] = append(list(m, "policies"), map[string]any{"policy_id": "comment-rate", "type": "allow", "actions": []any{"ticket.get"}})
		}, "policies[comment-rate]", atlas.RuleDuplicate},
		{"duplicate checkpoint", func(m map[string]any) {
			m["checkpoints"] = append(list(m, "checkpoints"), map[string]any{"checkpoint_id": "onboarding", "trigger": map[string]any{"type": "session_end"}})
		}, "checkpoints[onboarding]", atlas.RuleDuplicate},
		{"duplicate context", func(m map[string]any) {
			m["context_blocks"] = append(list(m, "context_blocks"), map[string]any{"context_id": "refunds", "content": "x"})
		}, "context_blocks[refunds]", atlas.RuleDuplicate},
		{"capability names no action", func(m map[string]any) {
			entry(m, "capabilities", 0)["actions"] = []any{"ticket.get", "ticket.close"}
		}, "capabilities[basic-support].actions[1]", atlas.RuleReference},
		{"checkpoint names no context", func(m map[string]any) {
			entry(m, "checkpoints", 0)["inject_contexts"] = []any{"nowhere"}
		}, "checkpoints[onboarding]", atlas.RuleReference},
		{"checkpoint names no capability", func(m map[string]any) {
			entry(m, "checkpoints", 3)["trigger"].(map[string]any)["capability_ids"] = []any{"root-access"}
		}, "checkpoints[admin-gate].trigger", atlas.RuleReference},
		{"unlock names no capability", func(m map[string]any) {
			entry(m, "checkpoints", 0)["unlock_capabilities"] = []any{"everything"}
		}, "checkpoints[onboarding]", atlas.RuleReference},
		{"parameters_schema invalid", func(m map[string]any) {
			entry(m, "actions", 0)["parameters_schema"] = map[string]any{"type": "objekt"}
		}, "actions[ticket.get].parameters_schema", atlas.RuleSchema},
		{"parameters_schema reads a file", func(m map[string]any) {
			// A valid schema on disk: only the refusal to load it fails this.
			entry(m, "actions", 0)["parameters_schema"] = map[string]any{"$ref": "file://" + schemaFile}
		}, "actions[ticket.get].parameters_schema", atlas.RuleSchema},
		{"bad redaction regex", func(m map[string]any) {
			entry(m, "context_blocks", 2)["redact"] = []any{"(\\d{4}"}
		}, "context_blocks[refunds].redact[0]", atlas.RuleRegex},
		{"bad question regex", func(m map[string]any) {
			entry(m, "checkpoints", 2)["questions"].([]any)[0].(map[string]any)["validation"] = map[string]any{"pattern": "[a-"}
		}, "checkpoints[high-risk-gate].questions[0].validation", atlas.RuleRegex},
		{"custom_validator refused", func(m map[string]any) {
			entry(m, "checkpoints", 2)["questions"].([]any)[0].(map[string]any)["validation"] = map[string]any{"custom_validator": "https://acme.example/check"}
		}, "checkpoints[high-risk-gate].questions[0].validation", atlas.RuleStructure},
		{"expected not an option", func(m map[string]any) {
			entry(m, "checkpoints", 2)["questions"] = []any{map[string]any{"question_id": "role", "question": "Role?", "response_type": "choice",
				"options": []any{"admin", "user"}, "expected": "root"}}
		}, "checkpoints[high-risk-gate].questions[0]", atlas.RuleStructure},
		{"bad keyword regex", func(m map[string]any) {
			entry(m, "checkpoints", 2)["trigger"] = map[string]any{"type": "keyword", "match_mode": "regex", "patterns": []any{"(refund"}}
		}, "checkpoints[high-risk-gate].trigger.patterns[0]", atlas.RuleRegex},
		{"fuzzy threshold above 1", func(m map[string]any) {
			entry(m, "checkpoints", 2)["trigger"] = map[string]any{"type": "keyword", "match_mode": "fuzzy", "patterns": []any{"refund"}, "threshold": 1.5}
		}, "checkpoints[high-risk-gate].trigger", atlas.RuleRange},
		{"guidance expires after nothing", func(m map[string]any) {
			entry(m, "checkpoints", 0)["guidance"] = map[string]any{"content": "x", "expires_after": "nowhere"}
		}, "checkpoints[onboarding].guidance", atlas.RuleReference},
		{"json guidance not JSON", func(m map[string]any) {
			entry(m, "checkpoints", 0)["guidance"] = map[string]any{"format": "json", "content": "{not json"}
		}, "checkpoints[onboarding].guidance", atlas.RuleStructure},
		{"observational with effects", func(m map[string]any) {
			entry(m, "checkpoints", 0)["mode"] = "observational"
		}, "checkpoints[onboarding]", atlas.RuleStructure},
		{"deny_actions names no action", func(m map[string]any) {
			entry(m, "checkpoints", 0)["deny_actions"] = []any{"printer.*"}
		}, "checkpoints[onboarding].deny_actions[0]", atlas.RuleReference},
		{"builtin id taken", func(m map[string]any) { entry(m, "checkpoints", 1)["checkpoint_id"] = "builtin:x" }, "checkpoints[builtin:x]", atlas.RulePattern},
		{"custom subject outside tools", func(m map[string]any) {
			entry(m, "checkpoints", 2)["trigger"] = map[string]any{"type": "custom", "trigger_id": "s", "subject": "wacp.v1.agent.x"}
		}, "checkpoints[high-risk-gate].trigger", atlas.RulePattern},
		{"checkpoint_config names no context", func(m map[string]any) {
			m["checkpoint_config"] = map[string]any{"session_start": map[string]any{"enabled": true, "inject_contexts": []any{"nowhere"}}}
		}, "checkpoint_config.session_start", atlas.RuleReference},
		{"checkpoint_config pattern inside a segment", func(m map[string]any) {
			m["checkpoint_config"] = map[string]any{"action_pre": map[string]any{"enabled": true, "mappings": map[string]any{"delete_*": map[string]any{}}}}
		}, "checkpoint_config.action_pre.mappings", atlas.RulePattern},
		{"rate limit zero window", func(m map[string]any) {
			entry(m, "policies", 3)["rate_limit"] = map[string]any{"requests": 2, "window_seconds": 0}
		}, "policies[comment-rate].rate_limit", atlas.RuleRateLimit},
		{"rate limit bad scope", func(m map[string]any) {
			entry(m, "actions", 6)["rate_limit"] = map[string]any{"requests": 2, "window_seconds": 5, "scope": "planet"}
		}, "actions[billing.refund].rate_limit", atlas.RuleRateLimit},
		{"rate limit no requests", func(m map[string]any) {
			entry(m, "actions", 6)["rate_limit"] = map[string]any{"requests": 0, "window_seconds": 5}
		}, "actions[billing.refund].rate_limit", atlas.RuleRateLimit},
		{"action id with a wildcard", func(m map[string]any) { entry(m, "actions", 4)["action_id"] = "ticket.*" }, "actions[ticket.*]", atlas.RulePattern},
		{"policy pattern inside a segment", func(m map[string]any) {
			entry(m, "policies", 1)["actions"] = []any{"user.ban_*"}
		}, "policies[no-bans-on-weekends].actions[0]", atlas.RulePattern},
		{"unknown risk tier", func(m map[string]any) { entry(m, "actions", 0)["risk_tier"] = "extreme" }, "actions[ticket.get]", atlas.RuleEnum},
		{"unknown inject mode", func(m map[string]any) { entry(m, "context_blocks", 0)["inject_mode"] = "sometimes" }, "context_blocks[intro-context]", atlas.RuleEnum},
		{"unknown policy type", func(m map[string]any) { entry(m, "policies", 0)["type"] = "maybe" }, "policies[allow-support]", atlas.RuleEnum},
		{"missing action id", func(m map[string]any) { delete(entry(m, "actions", 1), "action_id") }, "actions[1]", atlas.RuleRequired},
		{"wrong type", func(m map[string]any) { entry(m, "actions", 0)["risk_tier"] = 3 }, "", atlas.RuleStructure},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := sample(t)
			tt.change(m)
			b, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			_, err = atlas.Parse("acme.json", b)
			var ve *atlas.ValidationError
			if !errors.As(err, &ve) || !errors.Is(err, atlas.ErrInvalid) {
				t.Fatalf("Parse = %v, want a ValidationError", err)
			}
			if ve.File != "acme.json" || ve.Entry != tt.entry || ve.Rule != tt.rule {
				t.Fatalf("refused at %q rule %q (%v), want %q rule %q", ve.Entry, ve.Rule, err, tt.entry, tt.rule)
			}
			if !strings.HasPrefix(err.Error(), "atlas: acme.json: ") {
				t.Errorf("message %q does not name the file", err)
			}
		})
	}
}

// FuzzParse: any input is a manifest or a *ValidationError; never a panic.
func FuzzParse(f *testing.F) {
	b, err := os.ReadFile("testdata/acme.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(`{"atlas_version":"1.0","atlas_id":"a","version":"1.0.0","name":"n","actions":[{"action_id":"x","parameters_schema":{"type":"object"}}]}`))
	f.Add([]byte(`{"atlas_version":"1.0","atlas_id":"a","version":"1.0.0","name":"n","policies":[{"policy_id":"p","type":"redact","patterns":["("]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := atlas.Parse("f.json", data)
		var ve *atlas.ValidationError
		if err != nil && !errors.As(err, &ve) {
			t.Fatalf("error %T %v is not a ValidationError", err, err)
		}
		if err == nil && m == nil {
			t.Fatal("no manifest and no error")
		}
	})
}
