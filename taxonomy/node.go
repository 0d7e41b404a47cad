package taxonomy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"gopkg.in/yaml.v3"
)

// A node is the format-neutral document tree that the YAML and JSON decoders
// produce and decode.go reads. Mapping keys keep document order and
// duplicates, so that errors are reported deterministically and duplicate
// names in map-style registries can be refused.
type node struct {
	kind   nodeKind
	text   string  // kindString, kindNumber, kindBool: the scalar as written
	items  []*node // kindList
	keys   []string
	values []*node // kindMap, parallel to keys
}

type nodeKind int

const (
	kindNull nodeKind = iota
	kindString
	kindNumber
	kindBool
	kindList
	kindMap
)

func (k nodeKind) String() string {
	switch k {
	case kindNull:
		return "null"
	case kindString:
		return "string"
	case kindNumber:
		return "number"
	case kindBool:
		return "boolean"
	case kindList:
		return "list"
	case kindMap:
		return "mapping"
	}
	return "unknown"
}

// Limits that keep hostile input (deep nesting, YAML alias bombs) cheap.
const (
	maxDepth = MaxNesting
	maxNodes = 200_000
)

var errTooComplex = errors.New("document too deeply nested or too large after alias expansion")

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
// (no bytes, only whitespace or comments, or null) decodes to a kindNull node.
func decodeDocument(data []byte, f format) (*node, *ValidationError) {
	switch f {
	case formatYAML:
		return decodeYAML(data)
	case formatJSON:
		return decodeJSON(data)
	}
	n, jerr := decodeJSON(data)
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

func syntaxError(err error) *ValidationError {
	return invalid("", RuleSyntax, "%v", err)
}

// decodeYAML decodes one YAML document. yaml.v3 is third-party code fed
// untrusted input, so a panic inside it is turned into a syntax error.
func decodeYAML(data []byte) (n *node, verr *ValidationError) {
	var doc yaml.Node
	func() {
		defer func() {
			if r := recover(); r != nil {
				verr = syntaxError(fmt.Errorf("yaml: decoder failed: %v", r))
			}
		}()
		dec := yaml.NewDecoder(bytes.NewReader(data))
		if err := dec.Decode(&doc); err != nil {
			if err == io.EOF {
				doc = yaml.Node{}
				return
			}
			verr = syntaxError(err)
			return
		}
		var extra yaml.Node
		if err := dec.Decode(&extra); err != io.EOF {
			verr = syntaxError(errors.New("yaml: a taxonomy file holds exactly one document"))
		}
	}()
	if verr != nil {
		return nil, verr
	}
	c := yamlConverter{}
	n, err := c.convert(&doc, 0)
	if err != nil {
		return nil, syntaxError(err)
	}
	return n, nil
}

type yamlConverter struct{ count int }

func (c *yamlConverter) convert(y *yaml.Node, depth int) (*node, error) {
	c.count++
	if depth > maxDepth || c.count > maxNodes {
		return nil, errTooComplex
	}
	switch y.Kind {
	case 0:
		return &node{kind: kindNull}, nil
	case yaml.DocumentNode:
		if len(y.Content) == 0 {
			return &node{kind: kindNull}, nil
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
			return &node{kind: kindNull}, nil
		case "!!bool":
			return &node{kind: kindBool, text: y.Value}, nil
		case "!!int", "!!float":
			return &node{kind: kindNumber, text: y.Value}, nil
		}
		return &node{kind: kindString, text: y.Value}, nil
	case yaml.SequenceNode:
		n := &node{kind: kindList, items: make([]*node, 0, len(y.Content))}
		for _, item := range y.Content {
			v, err := c.convert(item, depth+1)
			if err != nil {
				return nil, err
			}
			n.items = append(n.items, v)
		}
		return n, nil
	case yaml.MappingNode:
		if len(y.Content)%2 != 0 {
			return nil, fmt.Errorf("yaml: line %d: malformed mapping", y.Line)
		}
		n := &node{kind: kindMap}
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
			n.keys = append(n.keys, k.Value)
			n.values = append(n.values, v)
		}
		return n, nil
	}
	return nil, fmt.Errorf("yaml: line %d: unsupported node", y.Line)
}

// decodeJSON decodes one JSON value with a token decoder, so that object keys
// keep their order and duplicates. Empty input decodes to null.
func decodeJSON(data []byte) (*node, *ValidationError) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if len(bytes.TrimSpace(data)) == 0 {
		return &node{kind: kindNull}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	c := jsonConverter{dec: dec}
	n, err := c.value(0)
	if err != nil {
		return nil, syntaxError(fmt.Errorf("json: %w", err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, syntaxError(errors.New("json: unexpected data after the top-level value"))
	}
	return n, nil
}

type jsonConverter struct {
	dec   *json.Decoder
	count int
}

func (c *jsonConverter) value(depth int) (*node, error) {
	c.count++
	if depth > maxDepth || c.count > maxNodes {
		return nil, errTooComplex
	}
	tok, err := c.dec.Token()
	if err != nil {
		if err == io.EOF {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	switch t := tok.(type) {
	case nil:
		return &node{kind: kindNull}, nil
	case bool:
		return &node{kind: kindBool, text: fmt.Sprint(t)}, nil
	case json.Number:
		return &node{kind: kindNumber, text: t.String()}, nil
	case string:
		return &node{kind: kindString, text: t}, nil
	case json.Delim:
		switch t {
		case '[':
			n := &node{kind: kindList}
			for c.dec.More() {
				v, err := c.value(depth + 1)
				if err != nil {
					return nil, err
				}
				n.items = append(n.items, v)
			}
			_, err := c.dec.Token() // ']'
			return n, err
		case '{':
			n := &node{kind: kindMap}
			for c.dec.More() {
				k, err := c.dec.Token()
				if err != nil {
					return nil, err
				}
				key, ok := k.(string)
				if !ok {
					return nil, fmt.Errorf("object key %v is not a string", k)
				}
				v, err := c.value(depth + 1)
				if err != nil {
					return nil, err
				}
				n.keys = append(n.keys, key)
				n.values = append(n.values, v)
			}
			_, err := c.dec.Token() // '}'
			return n, err
		}
	}
	return nil, fmt.Errorf("unexpected token %v", tok)
}
