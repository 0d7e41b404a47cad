package daemon

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wacpd/wacpd/wire"
)

// The API documentation lives in ../docs (api.md and schema/*.json). These
// tests keep it in step with the daemon: a new endpoint or error code that
// docs/api.md does not mention fails them.

const docsDir = "../docs"

// docSubjects returns every endpoint subject of the wire contract, written
// as docs/api.md writes them (agent ops with the literal "<ws>").
func docSubjects() []string {
	var subjects []string
	for _, e := range wire.Endpoints() {
		subjects = append(subjects, e.DocSubject())
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

// TestEveryWireEndpointIsServed: the daemon has a handler for every
// endpoint of the wire contract and none for an op the contract lacks.
func TestEveryWireEndpointIsServed(t *testing.T) {
	hs := (&Daemon{}).handlerTable()
	for _, e := range wire.Endpoints() {
		if hs[e.Op] == nil {
			t.Errorf("wire endpoint %s has no handler", e.Op)
		}
		delete(hs, e.Op)
	}
	for op := range hs {
		t.Errorf("the daemon handles op %q, which wire.Endpoints lacks", op)
	}
}

// TestSchemaDocCoversEveryEndpoint: each endpoint's request and reply
// schemas (wire.Endpoint.Request, Reply) exist in docs/schema: the file,
// and the definition under $defs when the name has one.
func TestSchemaDocCoversEveryEndpoint(t *testing.T) {
	for _, e := range wire.Endpoints() {
		for _, ref := range []string{e.Request, e.Reply} {
			if ref == "" {
				continue
			}
			file, def, _ := strings.Cut(ref, "#")
			b, err := os.ReadFile(filepath.Join(docsDir, "schema", file))
			if err != nil {
				t.Errorf("%s: schema %s: %v", e.Op, ref, err)
				continue
			}
			var doc struct {
				Defs map[string]json.RawMessage `json:"$defs"`
			}
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Errorf("%s: %s: %v", e.Op, file, err)
				continue
			}
			if def != "" && doc.Defs[def] == nil {
				t.Errorf("%s: docs/schema/%s has no $defs entry %q", e.Op, file, def)
			}
		}
	}
}

func TestSchemaDocMentionsEveryErrorCode(t *testing.T) {
	api := readDoc(t, "api.md")
	common := readDoc(t, filepath.Join("schema", "common.json"))
	for _, c := range wire.Codes {
		if !strings.Contains(api, "`"+c.Name+"`") {
			t.Errorf("docs/api.md does not mention error code `%s`", c.Name)
		}
		if !strings.Contains(common, `"`+c.Name+`"`) {
			t.Errorf("docs/schema/common.json (errorCode) does not list %q", c.Name)
		}
	}
}
