package daemon

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/wacpd/wacpd/taxonomy"
)

// The API documentation lives in ../docs (api.md and schema/*.json). These
// tests keep it in step with the daemon: a new endpoint or error code that
// docs/api.md does not mention fails them.

const docsDir = "../docs"

// docAgentOps are the ops served on wacp.v1.agent.<ws>.<op>, as docs/api.md
// documents them. TestSchemaDocAgentOpsMatchService checks the list against
// startService's agentOps map.
var docAgentOps = []string{
	"checkpoint", "signal", "envelope", "inbox.next", "inbox.ack",
	"checkpoint.get", "checkpoint.list", "checkpoint.head",
	"workspace.create", "workspace.get", "workspace.list",
	"workspace.abort", "workspace.suspend", "workspace.resume",
	"workspace.migrate", "workspace.migrate.complete",
	"conflict.resolve", "integrate", "trail", "token.create", "token.revoke",
	"signals.consumer",
}

// docSubjects returns every endpoint subject the daemon registers, written
// as docs/api.md writes them (agent ops with the literal "<ws>").
func docSubjects() []string {
	subjects := []string{"wacp.v1.system.info", "wacp.v1.audit.trail.read", "wacp.v1.audit.trail.verify",
		"wacp.v1.audit.sth", "wacp.v1.audit.proof.inclusion", "wacp.v1.audit.proof.consistency", "wacp.v1.audit.checkpoint.get"}
	for _, op := range docAgentOps {
		subjects = append(subjects, "wacp.v1.agent.<ws>."+op)
	}
	return subjects
}

func readDoc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(docsDir, name))
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	return string(b)
}

func TestSchemaDocSchemasParse(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(docsDir, "schema", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no docs/schema/*.json files")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var doc map[string]any
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatalf("%s is not a JSON object: %v", f, err)
			}
			if s, _ := doc["$schema"].(string); s != "https://json-schema.org/draft/2020-12/schema" {
				t.Errorf("%s: $schema = %q, want the draft 2020-12 meta-schema", f, s)
			}
			if title, _ := doc["title"].(string); strings.TrimSpace(title) == "" {
				t.Errorf("%s: no title", f)
			}
		})
	}
}

func TestSchemaDocSchemaFilesExist(t *testing.T) {
	for _, name := range []string{
		"checkpoint.request.json", "checkpoint.json", "signal.request.json", "signal.json",
		"envelope.request.json", "envelope.json", "workspace.create.request.json", "workspace.json",
		"integrate.request.json", "integrate.result.json", "trail.entry.json", "trail.verify.result.json",
		"error.json", "system.info.json", "requests.json",
	} {
		if _, err := os.Stat(filepath.Join(docsDir, "schema", name)); err != nil {
			t.Errorf("docs/schema/%s: %v", name, err)
		}
	}
}

func TestSchemaDocMentionsEverySubject(t *testing.T) {
	api := readDoc(t, "api.md")
	for _, subj := range docSubjects() {
		// Backquoted, so that wacp.v1.agent.<ws>.checkpoint is not found
		// inside wacp.v1.agent.<ws>.checkpoint.get.
		if !strings.Contains(api, "`"+subj+"`") {
			t.Errorf("docs/api.md does not mention `%s`", subj)
		}
	}
}

// TestSchemaDocAgentOpsMatchService checks docAgentOps against the agentOps
// map literal in service.go, both ways, so an op added to or removed from
// the daemon fails here until docs/api.md and docAgentOps follow.
func TestSchemaDocAgentOpsMatchService(t *testing.T) {
	src, err := os.ReadFile("service.go")
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile(`(?s)agentOps := map\[string\]handlerFunc\{(.*?)\n\t\}`).FindSubmatch(src)
	if block == nil {
		t.Fatal("service.go: no agentOps := map[string]handlerFunc{...} literal; update this test")
	}
	served := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s*"([a-z.]+)":`).FindAllSubmatch(block[1], -1) {
		served[string(m[1])] = true
	}
	if len(served) == 0 {
		t.Fatal("service.go: found no ops in agentOps")
	}
	documented := map[string]bool{}
	for _, op := range docAgentOps {
		documented[op] = true
		if !served[op] {
			t.Errorf("op %q is documented but not in service.go's agentOps", op)
		}
	}
	for op := range served {
		if !documented[op] {
			t.Errorf("service.go serves op %q; add it to docAgentOps and document wacp.v1.agent.<ws>.%s in docs/api.md", op, op)
		}
	}
}

func TestSchemaDocMentionsEveryErrorCode(t *testing.T) {
	api := readDoc(t, "api.md")
	common := readDoc(t, filepath.Join("schema", "common.json"))
	for _, c := range taxonomy.Codes {
		if !strings.Contains(api, "`"+c.Name+"`") {
			t.Errorf("docs/api.md does not mention error code `%s`", c.Name)
		}
		if !strings.Contains(common, `"`+c.Name+`"`) {
			t.Errorf("docs/schema/common.json (errorCode) does not list %q", c.Name)
		}
	}
}
