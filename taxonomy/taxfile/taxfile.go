// Package taxfile reads WACP taxonomy files, YAML or JSON, into a
// taxonomy.Taxonomy. It holds the YAML decoder, so that the taxonomy
// package, which clients link for the base taxonomy and its names, links
// no YAML.
package taxfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/wacpd/wacpd/taxonomy"
)

// Load reads the taxonomy file at path and parses it with Parse. Files named
// *.yaml or *.yml are read as YAML and *.json as JSON; any other name is
// tried as JSON, then as YAML. A validation error names path as its File.
func Load(path string) (*taxonomy.Taxonomy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("taxonomy: %w", err)
	}
	return Parse(path, data)
}

// Parse decodes and validates a taxonomy document. name selects the format as
// in Load and names the document in errors. Validation is all-or-nothing: on
// any failure Parse returns a *taxonomy.ValidationError and no Taxonomy.
func Parse(name string, data []byte) (*taxonomy.Taxonomy, error) {
	root, err := decodeDocument(data, formatOf(name))
	if err != nil {
		if verr, ok := errors.AsType[*taxonomy.ValidationError](err); ok {
			verr.File = name
		}
		return nil, err
	}
	return taxonomy.FromNode(name, data, root)
}

// format is how a document is decoded.
type format int

const (
	formatAuto format = iota // JSON, then YAML
	formatYAML
	formatJSON
)

func formatOf(name string) format {
	lower := strings.ToLower(name)
	switch {
	case strings.HasSuffix(lower, ".yaml"), strings.HasSuffix(lower, ".yml"):
		return formatYAML
	case strings.HasSuffix(lower, ".json"):
		return formatJSON
	}
	return formatAuto
}

// decodeDocument decodes data in format f. A document that holds nothing
// (no bytes, only whitespace or comments, or null) decodes to a NullNode.
func decodeDocument(data []byte, f format) (*taxonomy.Node, error) {
	switch f {
	case formatYAML:
		return decodeYAML(data)
	case formatJSON:
		return taxonomy.DecodeJSON(data)
	}
	n, jerr := taxonomy.DecodeJSON(data)
	if jerr == nil {
		return n, nil
	}
	n, yerr := decodeYAML(data)
	if yerr == nil {
		return n, nil
	}
	if t := bytes.TrimSpace(data); len(t) > 0 && (t[0] == '{' || t[0] == '[') {
		return nil, jerr
	}
	return nil, yerr
}

// decodeYAML decodes one YAML document. yaml.v3 is third-party code fed
// untrusted input, so a panic inside it is turned into a syntax error.
func decodeYAML(data []byte) (n *taxonomy.Node, verr error) {
	var doc yaml.Node
	func() {
		defer func() {
			if r := recover(); r != nil {
				verr = taxonomy.SyntaxError(fmt.Errorf("yaml: decoder failed: %v", r))
			}
		}()
		dec := yaml.NewDecoder(bytes.NewReader(data))
		if err := dec.Decode(&doc); err != nil {
			if err == io.EOF {
				doc = yaml.Node{}
				return
			}
			verr = taxonomy.SyntaxError(err)
			return
		}
		var extra yaml.Node
		if err := dec.Decode(&extra); err != io.EOF {
			verr = taxonomy.SyntaxError(errors.New("yaml: a taxonomy file holds exactly one document"))
		}
	}()
	if verr != nil {
		return nil, verr
	}
	c := yamlConverter{}
	n, err := c.convert(&doc, 0)
	if err != nil {
		return nil, taxonomy.SyntaxError(err)
	}
	return n, nil
}

type yamlConverter struct{ count int }

func (c *yamlConverter) convert(y *yaml.Node, depth int) (*taxonomy.Node, error) {
	c.count++
	if depth > taxonomy.MaxNesting || c.count > taxonomy.MaxNodes {
		return nil, taxonomy.ErrTooComplex
	}
	switch y.Kind {
	case 0:
		return &taxonomy.Node{Kind: taxonomy.NullNode}, nil
	case yaml.DocumentNode:
		if len(y.Content) == 0 {
			return &taxonomy.Node{Kind: taxonomy.NullNode}, nil
		}
		return c.convert(y.Content[0], depth+1)
	case yaml.AliasNode:
		if y.Alias == nil {
			return nil, fmt.Errorf("yaml: line %d: unresolved alias", y.Line)
		}
		return c.convert(y.Alias, depth+1)
	case yaml.ScalarNode:
		switch y.ShortTag() {
		case "!!null":
			return &taxonomy.Node{Kind: taxonomy.NullNode}, nil
		case "!!bool":
			return &taxonomy.Node{Kind: taxonomy.BoolNode, Text: y.Value}, nil
		case "!!int", "!!float":
			return &taxonomy.Node{Kind: taxonomy.NumberNode, Text: y.Value}, nil
		}
		return &taxonomy.Node{Kind: taxonomy.StringNode, Text: y.Value}, nil
	case yaml.SequenceNode:
		n := &taxonomy.Node{Kind: taxonomy.ListNode, Items: make([]*taxonomy.Node, 0, len(y.Content))}
		for _, item := range y.Content {
			v, err := c.convert(item, depth+1)
			if err != nil {
				return nil, err
			}
			n.Items = append(n.Items, v)
		}
		return n, nil
	case yaml.MappingNode:
		if len(y.Content)%2 != 0 {
			return nil, fmt.Errorf("yaml: line %d: malformed mapping", y.Line)
		}
		n := &taxonomy.Node{Kind: taxonomy.MapNode}
		for i := 0; i < len(y.Content); i += 2 {
			k := y.Content[i]
			if k.Kind == yaml.AliasNode && k.Alias != nil {
				k = k.Alias
			}
			if k.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("yaml: line %d: mapping keys must be scalars", k.Line)
			}
			v, err := c.convert(y.Content[i+1], depth+1)
			if err != nil {
				return nil, err
			}
			n.Keys = append(n.Keys, k.Value)
			n.Values = append(n.Values, v)
		}
		return n, nil
	}
	return nil, fmt.Errorf("yaml: line %d: unsupported node", y.Line)
}
