package daemon

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/mod/sumdb/note"

	"github.com/wacpd/wacpd/wire"
)

const schemaBase = "https://github.com/wacpd/wacpd/docs/schema/"

// schemas compiles docs/schema/*.json (each under its $id).
func schemas(t *testing.T) *jsonschema.Compiler {
	t.Helper()
	c := jsonschema.NewCompiler()
	files, err := filepath.Glob(filepath.Join(docsDir, "schema", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("docs/schema: %v, %d files", err, len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if err := c.AddResource(schemaBase+filepath.Base(f), doc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	return c
}

// validate checks the JSON of v against the schema ref ("file.json" or
// "file.json#def") of endpoint op.
func validate(t *testing.T, c *jsonschema.Compiler, op, ref string, v any) {
	t.Helper()
	file, def, _ := strings.Cut(ref, "#")
	loc := schemaBase + file
	if def != "" {
		loc += "#/$defs/" + def
	}
	sch, err := c.Compile(loc)
	if err != nil {
		t.Fatalf("%s: compile %s: %v", op, ref, err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(inst); err != nil {
		t.Errorf("%s: %s does not validate against %s: %v", op, b, ref, err)
	}
}

// TestRepliesMatchTheirSchemas calls the endpoints the schema review
// found undocumented (system.info's public_key and origin, audit.sth, the
// proofs, audit.checkpoint.get) and validates each request body and reply
// against the schemas wire.Endpoints names for it.
func TestRepliesMatchTheirSchemas(t *testing.T) {
	e := openTest(t)
	s := newService(t, e)
	skey, vkey, err := note.GenerateKey(rand.Reader, "wacpd-test")
	if err != nil {
		t.Fatal(err)
	}
	signer, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	s.r.publicKey = vkey
	w := s.worker
	cp, err := e.CreateCheckpoint(ctx, w.ID, mustJSON(map[string]any{
		"type": "artifact", "intent": "x", "parent": nil, "status": "final", "confidence": "high",
		"payload": map[string]any{"files_changed": []string{"a.go"}, "content": "x", "artifacts": []string{}},
	}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.SignTreeHead(signer); err != nil {
		t.Fatal(err)
	}
	bodies := map[string]any{
		"system.info":             map[string]any{},
		"audit.sth":               map[string]any{},
		"audit.proof.inclusion":   map[string]any{"index": 1},
		"audit.proof.consistency": map[string]any{"from": 1},
		"audit.checkpoint.get":    map[string]any{"id": cp.ID},
	}
	c := schemas(t)
	for _, ep := range wire.Endpoints() {
		body, ok := bodies[ep.Op]
		if !ok {
			continue
		}
		delete(bodies, ep.Op)
		if ep.Request != "" {
			validate(t, c, ep.Op, ep.Request, body)
		}
		reply, err := s.call(ctx, ep.Op, mustJSON(body))
		if err != nil {
			t.Fatalf("%s: %v", ep.Op, err)
		}
		validate(t, c, ep.Op, ep.Reply, reply)
	}
	if len(bodies) != 0 {
		t.Errorf("not wire endpoints: %v", bodies)
	}
}
