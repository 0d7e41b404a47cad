// Package atlasfile reads Atlas manifests from disk (-atlas PATH): a
// manifest file, or a package directory with atlas.json and the entries of
// context/, policies/ and actions/. What it reads is validated as a whole
// by package atlas.
package atlasfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/wacpd/wacpd/atlas"
	"github.com/wacpd/wacpd/internal/strictjson"
)

// MaxFile bounds one file of an atlas, MaxFiles the files of a package.
const (
	MaxFile  = 4 << 20
	MaxFiles = 10000
)

// Loaded is a validated manifest and where it came from.
type Loaded struct {
	Manifest *atlas.Manifest
	Path     string
	Checksum string // atlas.Checksum
}

// Load reads path: a manifest file (JSON), or a package directory holding
// atlas.json and, optionally, context/, policies/ and actions/ whose files
// are entries added to the manifest's lists in name order: *.json holds one
// entry (a context block, a policy, an action), *.md and *.txt in context/
// are on-demand context blocks named after the file (context_id the name
// without its extension, content the file, byte-exact). Errors are
// *atlas.ValidationError naming the file.
func Load(path string) (*Loaded, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	var m *atlas.Manifest
	if !st.IsDir() {
		data, err := readFile(path)
		if err != nil {
			return nil, err
		}
		if m, err = atlas.Parse(path, data); err != nil {
			return nil, err
		}
	} else if m, err = loadDir(path); err != nil {
		return nil, err
	}
	sum, err := atlas.Checksum(m)
	if err != nil {
		return nil, err
	}
	return &Loaded{Manifest: m, Path: path, Checksum: sum}, nil
}

func loadDir(dir string) (*atlas.Manifest, error) {
	top := filepath.Join(dir, "atlas.json")
	data, err := readFile(top)
	if err != nil {
		return nil, err
	}
	var m atlas.Manifest
	if err := strictjson.Decode(data, &m); err != nil {
		return nil, &atlas.ValidationError{File: top, Rule: atlas.RuleStructure, Err: err}
	}
	files := 0
	for _, sub := range []string{"context", "policies", "actions"} {
		names, err := entries(filepath.Join(dir, sub))
		if err != nil {
			return nil, err
		}
		if files += len(names); files > MaxFiles {
			return nil, &atlas.ValidationError{File: dir, Rule: atlas.RuleStructure, Err: fmt.Errorf("more than %d files", MaxFiles)}
		}
		for _, name := range names {
			if err := addEntry(&m, sub, filepath.Join(dir, sub, name)); err != nil {
				return nil, err
			}
		}
	}
	if err := atlas.Validate(dir, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// entries returns the regular files of dir by name; none when dir does
// not exist.
func entries(dir string) ([]string, error) {
	des, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, de := range des {
		if de.Type().IsRegular() && !strings.HasPrefix(de.Name(), ".") {
			out = append(out, de.Name())
		}
	}
	slices.Sort(out)
	return out, nil
}

func addEntry(m *atlas.Manifest, sub, file string) error {
	data, err := readFile(file)
	if err != nil {
		return err
	}
	ext := filepath.Ext(file)
	bad := func(err error) error { return &atlas.ValidationError{File: file, Rule: atlas.RuleStructure, Err: err} }
	switch {
	case sub == "context" && (ext == ".md" || ext == ".txt"):
		ct := "markdown"
		if ext == ".txt" {
			ct = "text"
		}
		m.ContextBlocks = append(m.ContextBlocks, atlas.ContextBlock{
			ContextID: strings.TrimSuffix(filepath.Base(file), ext), ContentType: ct,
			Content: string(data), InjectMode: atlas.InjectOnDemand,
		})
		return nil
	case ext != ".json":
		return bad(fmt.Errorf("%s/ holds .json entries (and context/ .md and .txt blocks), not %s", sub, filepath.Base(file)))
	}
	var err2 error
	switch sub {
	case "context":
		var c atlas.ContextBlock
		err2 = strictjson.Decode(data, &c)
		m.ContextBlocks = append(m.ContextBlocks, c)
	case "policies":
		var p atlas.Policy
		err2 = strictjson.Decode(data, &p)
		m.Policies = append(m.Policies, p)
	case "actions":
		var a atlas.Action
		err2 = strictjson.Decode(data, &a)
		m.Actions = append(m.Actions, a)
	}
	if err2 != nil {
		return bad(err2)
	}
	return nil
}

func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFile {
		return nil, &atlas.ValidationError{File: path, Rule: atlas.RuleStructure, Err: fmt.Errorf("larger than %d bytes", MaxFile)}
	}
	return data, nil
}
