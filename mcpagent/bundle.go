package mcpagent

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
)

// Bundle returns the schema ref ("file.json" for a whole file,
// "file.json#name" for the definition name in the file's $defs) of the
// schema files in fsys as one self-contained schema: every schema it
// reaches through $ref, in its own file or another, is copied into the
// result's $defs under "<file stem>.<name>" ("<file stem>" for a whole
// file) and every $ref is rewritten to point there. $id and $schema of
// the copies are dropped and the result's $schema is draft 2020-12, so it
// resolves with no base URI and no other file. A $ref must be "file.json",
// "file.json#/$defs/name", "#/$defs/name" or "#"; any other form is an
// error, as is a name two targets would share.
func Bundle(fsys fs.FS, ref string) (map[string]any, error) {
	file, frag, _ := strings.Cut(ref, "#")
	b := &bundler{fsys: fsys, files: map[string]map[string]any{}, defs: map[string]any{}, names: map[string]string{}}
	root, err := b.target(file, frag)
	if err != nil {
		return nil, err
	}
	out, err := b.rewrite(file, root)
	if err != nil {
		return nil, fmt.Errorf("bundle %s: %w", ref, err)
	}
	s := out.(map[string]any)
	s["$schema"] = draft2020
	if len(b.defs) > 0 {
		s["$defs"] = b.defs
	}
	return s, nil
}

const draft2020 = "https://json-schema.org/draft/2020-12/schema"

// bundler copies the schemas one Bundle reaches.
type bundler struct {
	fsys  fs.FS
	files map[string]map[string]any // parsed, by file name
	defs  map[string]any            // the bundle's $defs
	names map[string]string         // "file#name" → its name in defs
}

// file returns the parsed schema file name.
func (b *bundler) file(name string) (map[string]any, error) {
	if f, ok := b.files[name]; ok {
		return f, nil
	}
	data, err := fs.ReadFile(b.fsys, name)
	if err != nil {
		return nil, fmt.Errorf("read schema: %w", err)
	}
	var f map[string]any
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("schema %s: %w", name, err)
	}
	b.files[name] = f
	return f, nil
}

// target returns the definition def of file, or the whole file for "".
func (b *bundler) target(file, def string) (map[string]any, error) {
	f, err := b.file(file)
	if err != nil {
		return nil, err
	}
	if def == "" {
		return f, nil
	}
	defs, _ := f["$defs"].(map[string]any)
	s, ok := defs[def].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("schema %s has no $defs entry %q", file, def)
	}
	return s, nil
}

// ref returns the local $ref of def in file ("" for the whole file),
// copying it into the bundle's $defs the first time.
func (b *bundler) ref(file, def string) (string, error) {
	key := file + "#" + def
	name, ok := b.names[key]
	if !ok {
		name = strings.TrimSuffix(file, ".json")
		if def != "" {
			name += "." + def
		}
		if _, taken := b.defs[name]; taken {
			return "", fmt.Errorf("two schemas would be $defs/%s", name)
		}
		b.names[key] = name
		b.defs[name] = nil // taken: a schema that refers to itself finds its name
		s, err := b.target(file, def)
		if err != nil {
			return "", err
		}
		c, err := b.rewrite(file, s)
		if err != nil {
			return "", err
		}
		b.defs[name] = c
	}
	return "#/$defs/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(name), nil
}

// rewrite returns a copy of schema v of file with its $refs made local.
func (b *bundler) rewrite(file string, v any) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for _, k := range slices.Sorted(maps.Keys(x)) {
			val := x[k]
			switch k {
			case "$id", "$schema", "$defs":
				// A copy has no base of its own; the definitions it uses
				// are copied as they are reached.
			case "$ref":
				s, _ := val.(string)
				f, frag, _ := strings.Cut(s, "#")
				if f == "" {
					f = file
				}
				var def string
				switch {
				case frag == "":
				case strings.HasPrefix(frag, "/$defs/") && !strings.Contains(frag[len("/$defs/"):], "/"):
					def = frag[len("/$defs/"):]
				default:
					return nil, fmt.Errorf("%s: unsupported $ref %q", file, s)
				}
				r, err := b.ref(f, def)
				if err != nil {
					return nil, err
				}
				out[k] = r
			case "examples", "default", "const", "enum":
				out[k] = val // instances, not schemas
			case "properties", "patternProperties", "dependentSchemas":
				m, ok := val.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("%s: %s is not an object", file, k)
				}
				props := make(map[string]any, len(m))
				for name, s := range m {
					c, err := b.rewrite(file, s)
					if err != nil {
						return nil, err
					}
					props[name] = c
				}
				out[k] = props
			default:
				c, err := b.rewrite(file, val)
				if err != nil {
					return nil, err
				}
				out[k] = c
			}
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			c, err := b.rewrite(file, e)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	}
	return v, nil
}
