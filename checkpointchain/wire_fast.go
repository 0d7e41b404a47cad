package checkpointchain

import (
	"github.com/wacpd/wacpd/internal/strictjson"
)

// ReadWire reads a checkpoint in the form the daemon sends it (Wire), for
// a client: compact (strictjson.ScanObject's form, no member twice), the
// members of Checkpoint spelled as Wire spells them, a payload of
// files_changed, content and artifacts only (lists of strings of printable
// ASCII without escapes), no resource usage (null), the other strings
// anything. It reports false for any other form, which the client then
// decodes with its JSON decoder (go-json-experiment's v1 Unmarshal);
// FuzzReadWire holds the two to the same checkpoint. The JSON decoder took
// about 10 µs of an agent's CPU for a reply of 1 KiB of content.
func ReadWire(data []byte) (c Checkpoint, ok bool) {
	f := fields{ok: true}
	if !strictjson.ScanObject(data, func(name, value []byte, kind strictjson.Kind) {
		switch string(name) {
		case "id":
			f.str(value, kind, &c.ID)
		case "workspace":
			f.str(value, kind, &c.Workspace)
		case "type":
			f.str(value, kind, &c.Type)
		case "payload":
			if kind != strictjson.KindOther || !payloadFields(value, &c.Payload) {
				f.ok = false
			}
		case "intent":
			f.str(value, kind, &c.Intent)
		case "parent":
			if kind != strictjson.KindNull {
				var p string
				f.str(value, kind, &p)
				c.Parent = &p
			}
		case "status":
			f.str(value, kind, &c.Status)
		case "confidence":
			f.str(value, kind, &c.Confidence)
		case "resource_usage":
			if kind != strictjson.KindNull {
				f.ok = false // the JSON decoder reads it
			}
		case "timestamp":
			f.str(value, kind, &c.Timestamp)
		case "digest":
			var s string
			f.str(value, kind, &s)
			if f.ok && c.Digest.UnmarshalText([]byte(s)) != nil {
				f.ok = false // the JSON decoder words the error
			}
		default: // a member the JSON decoder ignores, or matches without regard to case
			f.ok = false
		}
	}) || !f.ok {
		return Checkpoint{}, false
	}
	return c, true
}
