package daemon

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/wacpd/wacpd/runtime"
	"github.com/wacpd/wacpd/wire"
)

// Bounds on what a client sends (issue 11 §2; docs/api.md, "Bounds").
//
// Every string in a request, keys included, is at most runtime.MaxString bytes,
// except the free-text and free-JSON fields of longFields, which only the
// request size limit (Config.MaxObjectBytes) bounds. Identifiers, types,
// names, reasons and the like are therefore short before anything records
// them. The checkpoint endpoint is the exception: its refusals must be
// recorded (checkpoint_rejected), so the engine records a refused value
// bounded instead (bounded).

// longFields are the paths, per endpoint op, whose strings may be long:
// "payload.content" is that key of the top-level object; a trailing ".*"
// covers everything below the key.
var longFields = map[string][]string{
	"envelope":         {"payload.content"},
	"integrate":        {"result.*"},
	"workspace.create": {"context.*"},
	// CARP: a task's goal, an action's parameters and the answers to a
	// steward checkpoint are the agent's (the atlas's schema bounds
	// parameters, its questions' validation the answers, and package
	// steward each answer's size); a manifest is the steward's
	// (atlas.Validate and the size limit bound it).
	"carp.resolve":  {"task.goal"},
	"carp.execute":  {"action.parameters.*"},
	"carp.validate": {"action.parameters.*"},
	"carp.respond":  {"checkpoint_response.answers.*"},
	"atlas.load":    {"manifest.*"},
}

// checkStrings refuses body (invalid_structure) when a string in it is
// longer than runtime.MaxString bytes outside the long fields of op.
func checkStrings(op string, body []byte) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var path []string // keys from the top; "[]" for array items
	type frame struct {
		array   bool
		wantKey bool
	}
	var stack []frame
	long := longFields[op]
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil // malformed JSON is the decoder's to refuse
		}
		top := len(stack) - 1
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				stack = append(stack, frame{array: t == '[', wantKey: t == '{'})
				continue
			default:
				stack = stack[:top]
				if top > 0 && !stack[top-1].array {
					path = path[:len(path)-1]
					stack[top-1].wantKey = true
				}
				continue
			}
		case string:
			if top >= 0 && stack[top].wantKey {
				if len(t) > runtime.MaxString {
					return runtime.Refuse(wire.CodeInvalidStructure, "a key of %d bytes; keys are at most %d bytes", len(t), runtime.MaxString)
				}
				path = append(path, t)
				stack[top].wantKey = false
				continue
			}
			if len(t) > runtime.MaxString && !isLong(long, path) {
				return runtime.Refuse(wire.CodeInvalidStructure, "%s is %d bytes; it may be at most %d bytes", fieldName(path), len(t), runtime.MaxString)
			}
		}
		// A value ended: an object member's key is done.
		if top >= 0 && !stack[top].array {
			path = path[:len(path)-1]
			stack[top].wantKey = true
		}
	}
}

func isLong(long, path []string) bool {
	p := strings.Join(path, ".")
	for _, l := range long {
		if p == l || (strings.HasSuffix(l, ".*") && (p == l[:len(l)-2] || strings.HasPrefix(p, l[:len(l)-1]))) {
			return true
		}
	}
	return false
}

func fieldName(path []string) string {
	if len(path) == 0 {
		return "a string"
	}
	return "field " + strings.Join(path, ".")
}
