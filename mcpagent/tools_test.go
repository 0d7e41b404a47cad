package mcpagent

import (
	"encoding/json"
	"errors"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/wacpd/wacpd/docs/schema"
	"github.com/wacpd/wacpd/wire"
)

// noLoader refuses every URL: a bundled schema must resolve alone.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) { return nil, errors.New("no loading: " + url) }

// compile compiles the tool's input schema with nothing else.
func compile(t *testing.T, name string, s any) *jsonschema.Schema {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	url := "mem:///" + name + ".json"
	if err := c.AddResource(url, doc); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		t.Fatalf("%s: the bundled schema does not compile alone: %v", name, err)
	}
	return sch
}

func valid(sch *jsonschema.Schema, instance string) error {
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(instance))
	if err != nil {
		return err
	}
	return sch.Validate(v)
}

// examples returns the examples of the schema ref in docs/schema.
func examples(t *testing.T, ref string) []map[string]any {
	t.Helper()
	file, def, _ := strings.Cut(ref, "#")
	b, err := fs.ReadFile(schema.FS, file)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	s := doc
	if def != "" {
		s = doc["$defs"].(map[string]any)[def].(map[string]any)
	}
	var out []map[string]any
	list, _ := s["examples"].([]any)
	for _, e := range list {
		out = append(out, e.(map[string]any))
	}
	return out
}

// TestToolSchemas: every tool's input schema is its endpoint's request
// schema, bundled: it compiles with no other file, is an object schema,
// accepts the docs' examples (a carp_* tool those of its operation, also
// without the members it fills), and refuses an unknown member, as the
// daemon's strict decoders do.
func TestToolSchemas(t *testing.T) {
	tools, err := buildTools(schema.FS)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != len(toolDefs) {
		t.Fatalf("%d tools, want %d", len(tools), len(toolDefs))
	}
	eps := map[string]wire.Endpoint{}
	for _, ep := range wire.Endpoints() {
		eps[ep.Op] = ep
	}
	withExamples := 0
	for i, tool := range tools {
		d := toolDefs[i]
		t.Run(d.name, func(t *testing.T) {
			ep, ok := eps[d.op]
			if !ok || ep.Audience != wire.Agents {
				t.Fatalf("%s calls %q, not an agent endpoint of wire.Endpoints", d.name, d.op)
			}
			var s map[string]any
			if err := json.Unmarshal(tool.InputSchema.(json.RawMessage), &s); err != nil {
				t.Fatal(err)
			}
			if s["type"] != "object" {
				t.Errorf("type = %v, want object", s["type"])
			}
			if strings.Contains(string(tool.InputSchema.(json.RawMessage)), `.json#`) {
				t.Errorf("a $ref still names another file")
			}
			sch := compile(t, d.name, s)
			if err := valid(sch, `{"no_such_member":1}`); err == nil {
				t.Errorf("an unknown member is accepted")
			}
			{
				for _, ex := range examples(t, ep.Request) {
					if d.carp != "" && ex["operation"] != d.carp {
						continue
					}
					withExamples++
					b, _ := json.Marshal(ex)
					if err := valid(sch, string(b)); err != nil {
						t.Errorf("the docs' example %s: %v", b, err)
					}
					if d.carp == "" {
						continue
					}
					for _, m := range carpFilled {
						delete(ex, m)
					}
					b, _ = json.Marshal(ex)
					if err := valid(sch, string(b)); err != nil {
						t.Errorf("the docs' example without the filled members %s: %v", b, err)
					}
				}
			}
		})
	}
	// checkpoint.request.json, signal.request.json and carp.json#request
	// (one example for each of resolve, execute and respond).
	if withExamples < 5 {
		t.Errorf("%d examples checked, want at least 5", withExamples)
	}
}

// TestCarpSchemaSpecialized: a carp_* tool's schema is its operation's
// branch of the request schema: a resolve without operation is checked
// as a resolve (task required, action refused), an execute as an execute.
func TestCarpSchemaSpecialized(t *testing.T) {
	tools, err := buildTools(schema.FS)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]any{}
	for _, tool := range tools {
		var s map[string]any
		json.Unmarshal(tool.InputSchema.(json.RawMessage), &s)
		byName[tool.Name] = s
	}
	tests := []struct {
		tool, body string
		ok         bool
	}{
		{"carp_resolve", `{"task":{"goal":"answer ticket T-1"}}`, true},
		{"carp_resolve", `{}`, false},
		{"carp_resolve", `{"task":{"goal":"g"},"action":{"action_id":"a","action_type":"a","resolution_id":"r"}}`, false},
		{"carp_resolve", `{"operation":"execute","task":{"goal":"g"}}`, false},
		{"carp_execute", `{"action":{"action_id":"ticket.get","action_type":"ticket.get","parameters":{"ticket_id":"T-1"},"resolution_id":"0193a5b2-7d00-7a3a-8f1e-2b6c8d0e4f60"}}`, true},
		{"carp_execute", `{"task":{"goal":"g"}}`, false},
		{"carp_validate", `{"action":{"action_id":"ticket.get","action_type":"ticket.get","parameters":{},"resolution_id":"0193a5b2-7d00-7a3a-8f1e-2b6c8d0e4f60"}}`, true},
		{"carp_respond", `{"checkpoint_response":{"checkpoint_id":"onboarding","answers":{"agree-terms":true}}}`, true},
		{"carp_respond", `{"checkpoint_response":{"checkpoint_id":"onboarding","answers":{}},"task":{"goal":"g"}}`, false},
	}
	for _, tt := range tests {
		err := valid(compile(t, tt.tool, byName[tt.tool]), tt.body)
		if (err == nil) != tt.ok {
			t.Errorf("%s schema on %s: %v, want ok %v", tt.tool, tt.body, err, tt.ok)
		}
	}
}

// TestBundle: a cross-file $ref becomes a local one under the file's
// stem, a definition reached twice is copied once, and a $ref of another
// form or two targets with one name are errors.
func TestBundle(t *testing.T) {
	fsys := fstest.MapFS{
		"a.json":   {Data: []byte(`{"$id":"x","$defs":{"r":{"type":"object","properties":{"n":{"$ref":"b.json#/$defs/n"},"m":{"$ref":"b.json#/$defs/n"},"w":{"$ref":"c.json"},"self":{"$ref":"#/$defs/r"}},"examples":[{"$ref":"not a schema"}]}}}`)},
		"b.json":   {Data: []byte(`{"$defs":{"n":{"type":"integer","minimum":{"$ref":"#/$defs/k"}},"k":{"type":"string"}}}`)},
		"c.json":   {Data: []byte(`{"$schema":"https://json-schema.org/draft/2020-12/schema","$id":"c","type":"string"}`)},
		"bad.json": {Data: []byte(`{"type":"object","properties":{"p":{"$ref":"b.json#/properties/n"}}}`)},
		"dup.json": {Data: []byte(`{"type":"object","properties":{"p":{"$ref":"d.json#/$defs/x.y"},"q":{"$ref":"d.x.json#/$defs/y"}}}`)},
		"d.json":   {Data: []byte(`{"$defs":{"x.y":{"type":"string"}}}`)},
		"d.x.json": {Data: []byte(`{"$defs":{"y":{"type":"string"}}}`)},
	}
	s, err := Bundle(fsys, "a.json#r")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(s)
	got := string(b)
	for _, want := range []string{`"n":{"$ref":"#/$defs/b.n"}`, `"m":{"$ref":"#/$defs/b.n"}`, `"w":{"$ref":"#/$defs/c"}`,
		`"self":{"$ref":"#/$defs/a.r"}`, `"b.k":{"type":"string"}`, `"c":{"type":"string"}`, `"examples":[{"$ref":"not a schema"}]`} {
		if !strings.Contains(got, want) {
			t.Errorf("Bundle(a.json#r) = %s, want it to hold %s", got, want)
		}
	}
	if strings.Contains(got, `"$id"`) {
		t.Errorf("Bundle(a.json#r) = %s, kept an $id", got)
	}
	if _, err := Bundle(fsys, "bad.json"); err == nil || !strings.Contains(err.Error(), "unsupported $ref") {
		t.Errorf("Bundle(bad.json) = %v, want an unsupported $ref", err)
	}
	if _, err := Bundle(fsys, "dup.json"); err == nil || !strings.Contains(err.Error(), "two schemas") {
		t.Errorf("Bundle(dup.json) = %v, want a name collision", err)
	}
	if _, err := Bundle(fsys, "a.json#missing"); err == nil {
		t.Error("Bundle(a.json#missing) = nil error")
	}
}
