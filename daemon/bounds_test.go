package daemon

import (
	"strings"
	"testing"

	"github.com/wacpd/wacpd/runtime"
	"github.com/wacpd/wacpd/wire"
)

func TestCheckStrings(t *testing.T) {
	long := `"` + strings.Repeat("x", runtime.MaxString+1) + `"`
	short := `"` + strings.Repeat("x", runtime.MaxString) + `"`
	tests := []struct {
		op, body string
		ok       bool
	}{
		{"signal", `{"type":"blocked","reason":` + short + `}`, true},
		{"signal", `{"type":"blocked","reason":` + long + `}`, false},
		{"envelope", `{"to":"w","in_reply_to":` + long + `}`, false},
		{"envelope", `{"to":"w","payload":{"content":` + long + `}}`, true},
		{"envelope", `{"to":"w","payload":{"format":` + long + `}}`, false},
		{"envelope", `{"to":"w","payload":{"attachments":["a",` + long + `]}}`, false},
		{"envelope", `{"payload":{"content":"c"},"type":` + long + `}`, false},
		{"integrate", `{"result":{"notes":[` + long + `]}}`, true},
		{"integrate", `{"result":` + long + `}`, true},
		{"integrate", `{"workspace":` + long + `,"result":{}}`, false},
		{"workspace.create", `{"context":{"brief":` + long + `}}`, true},
		{"workspace.create", `{"group":` + long + `}`, false},
		{"workspace.create", `{` + long + `:1}`, false},
		{"audit.trail.read", `{"body":{"reason":` + long + `}}`, false},
		{"conflict.resolve", `{"a":[{"b":[[` + long + `]]}]}`, false},
		{"conflict.resolve", `{"a":[{"b":[[1]]},"c"],"d":` + long + `}`, false},
		{"conflict.resolve", `{"a":[{"b":[[1]]},"c"],"d":"e"}`, true},
		{"carp.respond", `{"checkpoint_response":{"checkpoint_id":"c","answers":{"why":` + long + `}}}`, true},
		{"carp.respond", `{"checkpoint_response":{"checkpoint_id":"c","answers":{"j":{"a":[` + long + `]}}}}`, true},
		{"carp.respond", `{"checkpoint_response":{"checkpoint_id":` + long + `,"answers":{}}}`, false},
		{"carp.respond", `{"checkpoint_response":{"answers":{` + long + `:true}}}`, false},
	}
	for _, tt := range tests {
		err := checkStrings(tt.op, []byte(tt.body))
		if (err == nil) != tt.ok || (err != nil && runtime.Code(err) != wire.CodeInvalidStructure) {
			t.Errorf("checkStrings(%s, %.80s…) = %v, want ok %v", tt.op, tt.body, err, tt.ok)
		}
	}
}
