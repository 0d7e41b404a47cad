package taxonomy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// A Node is the format-neutral document tree that the decoders produce (JSON
// here, YAML in package taxfile) and FromNode reads. Mapping keys keep document order and
// duplicates, so that errors are reported deterministically and duplicate
// names in map-style registries can be refused.
type Node struct {
	Kind   NodeKind
	Text   string  // StringNode, NumberNode, BoolNode: the scalar as written
	Items  []*Node // ListNode
	Keys   []string
	Values []*Node // MapNode, parallel to Keys
}

// NodeKind is the kind of a Node.
type NodeKind int

const (
	NullNode NodeKind = iota
	StringNode
	NumberNode
	BoolNode
	ListNode
	MapNode
)

func (k NodeKind) String() string {
	switch k {
	case NullNode:
		return "null"
	case StringNode:
		return "string"
	case NumberNode:
		return "number"
	case BoolNode:
		return "boolean"
	case ListNode:
		return "list"
	case MapNode:
		return "mapping"
	}
	return "unknown"
}

// Limits that keep hostile input (deep nesting, YAML alias bombs) cheap:
// a decoder refuses a document deeper than MaxNesting or of more than
// MaxNodes nodes (after alias expansion) with ErrTooComplex.
const MaxNodes = 200_000

// ErrTooComplex is the cause of the syntax error of a document over the
// limits.
var ErrTooComplex = errors.New("document too deeply nested or too large after alias expansion")

// SyntaxError is the error of a document its decoder could not read
// (rule syntax), for the decoders of other formats (package taxfile).
func SyntaxError(err error) *ValidationError {
	return invalid("", RuleSyntax, "%v", err)
}

// DecodeJSON decodes one JSON value with a token decoder, so that object
// keys keep their order and duplicates. Empty input decodes to null. The
// error is a *ValidationError (rule syntax).
func DecodeJSON(data []byte) (*Node, error) {
	n, err := decodeJSON(data)
	if err != nil {
		return nil, err
	}
	return n, nil
}

func decodeJSON(data []byte) (*Node, *ValidationError) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if len(bytes.TrimSpace(data)) == 0 {
		return &Node{Kind: NullNode}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	c := jsonConverter{dec: dec}
	n, err := c.value(0)
	if err != nil {
		return nil, SyntaxError(fmt.Errorf("json: %w", err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, SyntaxError(errors.New("json: unexpected data after the top-level value"))
	}
	return n, nil
}

type jsonConverter struct {
	dec   *json.Decoder
	count int
}

func (c *jsonConverter) value(depth int) (*Node, error) {
	c.count++
	if depth > MaxNesting || c.count > MaxNodes {
		return nil, ErrTooComplex
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
		return &Node{Kind: NullNode}, nil
	case bool:
		return &Node{Kind: BoolNode, Text: fmt.Sprint(t)}, nil
	case json.Number:
		return &Node{Kind: NumberNode, Text: t.String()}, nil
	case string:
		return &Node{Kind: StringNode, Text: t}, nil
	case json.Delim:
		switch t {
		case '[':
			n := &Node{Kind: ListNode}
			for c.dec.More() {
				v, err := c.value(depth + 1)
				if err != nil {
					return nil, err
				}
				n.Items = append(n.Items, v)
			}
			_, err := c.dec.Token() // ']'
			return n, err
		case '{':
			n := &Node{Kind: MapNode}
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
				n.Keys = append(n.Keys, key)
				n.Values = append(n.Values, v)
			}
			_, err := c.dec.Token() // '}'
			return n, err
		}
	}
	return nil, fmt.Errorf("unexpected token %v", tok)
}
