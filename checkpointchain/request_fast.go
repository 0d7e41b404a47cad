package checkpointchain

import (
	"github.com/go-json-experiment/json/jsontext"

	"github.com/wacpd/wacpd/internal/strictjson"
)

// requestFields reads a checkpoint request in the form clients send it
// (strictjson.ScanObject's: compact, no member twice): the members of
// Request but resource_usage, a payload of files_changed, content and
// artifacts only, their lists of strings of printable ASCII without
// escapes, the other strings anything. It reports false for any other
// form, which DecodeRequest then decodes with the strict decoder (and
// FuzzRequestFields holds the two to the same request). The strict
// decoder took 8 µs of the daemon's CPU per checkpoint.
func requestFields(data []byte) (r Request, ok bool) {
	f := fields{ok: true}
	var seen [6]bool // type, payload, intent, parent, status, confidence
	if !strictjson.ScanObject(data, func(name, value []byte, kind strictjson.Kind) {
		switch string(name) {
		case "type":
			seen[0] = true
			f.str(value, kind, &r.Type)
		case "payload":
			seen[1] = true
			if kind != strictjson.KindOther || !payloadFields(value, &r.Payload) {
				f.ok = false
			}
		case "intent":
			seen[2] = true
			f.str(value, kind, &r.Intent)
		case "parent":
			seen[3] = true
			if kind != strictjson.KindNull {
				var p string
				f.str(value, kind, &p)
				r.Parent = &p
			}
		case "status":
			seen[4] = true
			f.str(value, kind, &r.Status)
		case "confidence":
			seen[5] = true
			f.str(value, kind, &r.Confidence)
		default: // resource_usage, or a member the strict decoder refuses
			f.ok = false
		}
	}) || !f.ok {
		return Request{}, false
	}
	if !seen[1] {
		return Request{}, false // the strict decoder's zero Payload
	}
	return r, true
}

// payloadFields reads a payload object of requestFields' form into p.
func payloadFields(data []byte, p *Payload) bool {
	ok := true
	if !strictjson.ScanObject(data, func(name, value []byte, kind strictjson.Kind) {
		switch string(name) {
		case "files_changed":
			p.FilesChanged, ok = plainStrings(value, kind, ok)
		case "artifacts":
			p.Artifacts, ok = plainStrings(value, kind, ok)
		case "content":
			var good bool
			if p.Content, good = stringValue(value, kind); !good {
				ok = false
			}
		default: // an extra member: the strict decoder keeps it
			ok = false
		}
	}) {
		return false
	}
	return ok
}

// stringValue returns the string a member's value of kind holds (one
// with escapes or bytes beyond printable ASCII unquoted); false when it is
// not a string.
func stringValue(v []byte, kind strictjson.Kind) (string, bool) {
	switch {
	case kind == strictjson.KindString:
		return string(v), true
	case kind == strictjson.KindOther && len(v) > 0 && v[0] == '"':
		s, err := jsontext.AppendUnquote(nil, v)
		return string(s), err == nil
	}
	return "", false
}

// plainStrings reads a JSON array of strings of printable ASCII without
// escapes (["a","b"], []: an empty list, not nil); ok false for anything
// else, or when ok was false already.
func plainStrings(v []byte, kind strictjson.Kind, ok bool) ([]string, bool) {
	if !ok || kind != strictjson.KindOther || len(v) < 2 || v[0] != '[' || v[len(v)-1] != ']' {
		return nil, false
	}
	out := []string{}
	in := v[1 : len(v)-1]
	for len(in) > 0 {
		if in[0] != '"' {
			return nil, false
		}
		end := 1
		for end < len(in) && in[end] != '"' {
			if c := in[end]; c < 0x20 || c > 0x7e || c == '\\' {
				return nil, false
			}
			end++
		}
		if end == len(in) {
			return nil, false
		}
		out = append(out, string(in[1:end]))
		in = in[end+1:]
		if len(in) > 0 {
			if in[0] != ',' || len(in) == 1 {
				return nil, false
			}
			in = in[1:]
		}
	}
	return out, true
}

// fields reads the string members of an object for requestFields and
// ReadWire; ok turns false at the first that is not a string.
type fields struct{ ok bool }

func (f *fields) str(v []byte, kind strictjson.Kind, to *string) {
	var good bool
	if *to, good = stringValue(v, kind); !good {
		f.ok = false
	}
}
