package checkpointchain_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/wacpd/wacpd/checkpointchain"
)

// okReq is a valid request body with the given extra top-level members
// spliced in before the closing brace.
func okReq(extra string) string {
	s := `{"type":"artifact","intent":"do it","status":"provisional","confidence":"high"`
	if extra != "" {
		s += "," + extra
	}
	return s + "}"
}

// nested returns n levels of nested arrays.
func nested(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

func TestDecodeRequestRejects(t *testing.T) {
	tests := []struct{ name, in string }{
		{"empty", ``},
		{"null", `null`},
		{"array", `[]`},
		{"string", `"artifact"`},
		{"malformed", `{"type":"artifact",`},
		{"missing type", `{"intent":"x","status":"final","confidence":"high"}`},
		{"empty type", `{"type":"","intent":"x","status":"final","confidence":"high"}`},
		{"null type", `{"type":null,"intent":"x","status":"final","confidence":"high"}`},
		{"missing intent", `{"type":"artifact","status":"final","confidence":"high"}`},
		{"empty intent", `{"type":"artifact","intent":"","status":"final","confidence":"high"}`},
		{"null intent", `{"type":"artifact","intent":null,"status":"final","confidence":"high"}`},
		{"missing status", `{"type":"artifact","intent":"x","confidence":"high"}`},
		{"bad status", `{"type":"artifact","intent":"x","status":"done","confidence":"high"}`},
		{"status wrong case", `{"type":"artifact","intent":"x","status":"Final","confidence":"high"}`},
		{"null status", `{"type":"artifact","intent":"x","status":null,"confidence":"high"}`},
		{"missing confidence", `{"type":"artifact","intent":"x","status":"final"}`},
		{"bad confidence", `{"type":"artifact","intent":"x","status":"final","confidence":"certain"}`},
		{"confidence number", `{"type":"artifact","intent":"x","status":"final","confidence":1}`},
		{"unknown top-level field", okReq(`"id":"x"`)},
		{"digest field", okReq(`"digest":"blake3:00"`)},
		{"timestamp field", okReq(`"timestamp":"2026-01-01T00:00:00Z"`)},
		{"unknown resource_usage field", okReq(`"resource_usage":{"tokens":1}`)},
		{"intent number", `{"type":"artifact","intent":42,"status":"final","confidence":"high"}`},
		{"type array", `{"type":["artifact"],"intent":"x","status":"final","confidence":"high"}`},
		{"files_changed string", okReq(`"payload":{"files_changed":"a.go"}`)},
		{"files_changed numbers", okReq(`"payload":{"files_changed":[1]}`)},
		{"files_changed empty path", okReq(`"payload":{"files_changed":["a.go",""]}`)},
		{"files_changed null", okReq(`"payload":{"files_changed":null}`)},
		{"content number", okReq(`"payload":{"content":1}`)},
		{"content null", okReq(`"payload":{"content":null}`)},
		{"artifacts object", okReq(`"payload":{"artifacts":{}}`)},
		{"payload array", okReq(`"payload":[]`)},
		{"payload string", okReq(`"payload":"x"`)},
		{"payload null", okReq(`"payload":null`)},
		{"parent empty", okReq(`"parent":""`)},
		{"parent number", okReq(`"parent":1`)},
		{"resource_usage array", okReq(`"resource_usage":[]`)},
		{"tokens over 2^53-1", okReq(`"resource_usage":{"tokens_consumed":9007199254740992}`)},
		{"tokens over int64", okReq(`"resource_usage":{"tokens_consumed":9223372036854775808}`)},
		{"tokens negative", okReq(`"resource_usage":{"tokens_consumed":-1}`)},
		{"tokens fraction", okReq(`"resource_usage":{"tokens_consumed":1.5}`)},
		{"tokens string", okReq(`"resource_usage":{"tokens_consumed":"1"}`)},
		{"wall_time abc", okReq(`"resource_usage":{"wall_time":"abc"}`)},
		{"wall_time negative", okReq(`"resource_usage":{"wall_time":"-1s"}`)},
		{"wall_time empty", okReq(`"resource_usage":{"wall_time":""}`)},
		{"wall_time number", okReq(`"resource_usage":{"wall_time":60}`)},
		{"cost negative", okReq(`"resource_usage":{"cost":-0.01}`)},
		{"cost overflow", okReq(`"resource_usage":{"cost":1e400}`)},
		{"cost string", okReq(`"resource_usage":{"cost":"1"}`)},
		{"invalid utf-8", "{\"type\":\"artifact\",\"intent\":\"\xff\",\"status\":\"final\",\"confidence\":\"high\"}"},
		{"too deep", okReq(`"payload":{"x":` + nested(100) + `}`)},
		{"trailing object", okReq("") + `{}`},
		{"trailing brace", okReq("") + `}`},
		{"trailing bracket", okReq("") + `]`},
		{"trailing garbage", okReq("") + ` x`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := checkpointchain.DecodeRequest([]byte(tt.in))
			var rj *checkpointchain.Rejection
			if !errors.As(err, &rj) || rj.Reason != checkpointchain.ReasonInvalidStructure {
				t.Fatalf("DecodeRequest(%q) = %+v, %v, want a %s rejection", tt.in, got, err, checkpointchain.ReasonInvalidStructure)
			}
			if !errors.Is(err, checkpointchain.ErrRejected) {
				t.Errorf("DecodeRequest(%q) error %v does not wrap ErrRejected", tt.in, err)
			}
			if !reflect.DeepEqual(got, checkpointchain.Request{}) {
				t.Errorf("DecodeRequest(%q) = %+v with its error, want the zero Request", tt.in, got)
			}
		})
	}
}

func TestDecodeRequestAccepts(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want checkpointchain.Request
	}{
		{
			name: "minimal",
			in:   okReq(""),
			want: checkpointchain.Request{Type: "artifact", Intent: "do it", Status: "provisional", Confidence: "high"},
		},
		{
			name: "full",
			in: `{"type":"review","intent":"why","parent":"01JA","status":"final","confidence":"low",
				"payload":{"files_changed":["a.go"],"content":"c","artifacts":["x"],"verdict":"approve","score": 4.50 ,"nested":{"b":1,"a":[null]}},
				"resource_usage":{"tokens_consumed":9007199254740991,"wall_time":"1h2m","cost":0}}`,
			want: checkpointchain.Request{
				Type: "review", Intent: "why", Parent: ptr("01JA"), Status: "final", Confidence: "low",
				Payload: checkpointchain.Payload{
					FilesChanged: []string{"a.go"}, Content: "c", Artifacts: []string{"x"},
					Extra: map[string]json.RawMessage{
						"verdict": json.RawMessage(`"approve"`),
						"score":   json.RawMessage(`4.50`),
						"nested":  json.RawMessage(`{"b":1,"a":[null]}`),
					},
				},
				ResourceUsage: &checkpointchain.ResourceUsage{
					TokensConsumed: ptr(int64(checkpointchain.MaxSafeInteger)), WallTime: ptr("1h2m"), Cost: ptr(0.0),
				},
			},
		},
		{
			name: "null parent and resource_usage",
			in:   okReq(`"parent":null,"resource_usage":null`),
			want: checkpointchain.Request{Type: "artifact", Intent: "do it", Status: "provisional", Confidence: "high"},
		},
		{
			name: "extra null kept",
			in:   okReq(`"payload":{"verdict":null}`),
			want: checkpointchain.Request{
				Type: "artifact", Intent: "do it", Status: "provisional", Confidence: "high",
				Payload: checkpointchain.Payload{Extra: map[string]json.RawMessage{"verdict": json.RawMessage(`null`)}},
			},
		},
		{
			name: "empty resource_usage",
			in:   okReq(`"resource_usage":{}`),
			want: checkpointchain.Request{
				Type: "artifact", Intent: "do it", Status: "provisional", Confidence: "high",
				ResourceUsage: &checkpointchain.ResourceUsage{},
			},
		},
		{
			name: "zero wall_time",
			in:   okReq(`"resource_usage":{"wall_time":"0s","tokens_consumed":0}`),
			want: checkpointchain.Request{
				Type: "artifact", Intent: "do it", Status: "provisional", Confidence: "high",
				ResourceUsage: &checkpointchain.ResourceUsage{WallTime: ptr("0s"), TokensConsumed: ptr(int64(0))},
			},
		},
		{
			name: "unknown type is not a shape error",
			in:   `{"type":"no-such-type","intent":"x","status":"final","confidence":"medium"}`,
			want: checkpointchain.Request{Type: "no-such-type", Intent: "x", Status: "final", Confidence: "medium"},
		},
		{
			name: "nesting of 64 is allowed",
			in:   `{"type":"artifact","intent":"do it","status":"provisional","confidence":"high","payload":{"x":` + nested(62) + `}}`,
			want: checkpointchain.Request{
				Type: "artifact", Intent: "do it", Status: "provisional", Confidence: "high",
				Payload: checkpointchain.Payload{Extra: map[string]json.RawMessage{"x": json.RawMessage(nested(62))}},
			},
		},
		{
			name: "brackets inside strings do not count as nesting",
			in:   okReq(`"payload":{"content":"` + nested(100) + `\"{"}`),
			want: checkpointchain.Request{
				Type: "artifact", Intent: "do it", Status: "provisional", Confidence: "high",
				Payload: checkpointchain.Payload{Content: nested(100) + `"{`},
			},
		},
		{
			name: "surrounding white space",
			in:   " \n" + okReq("") + "\n\t ",
			want: checkpointchain.Request{Type: "artifact", Intent: "do it", Status: "provisional", Confidence: "high"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := checkpointchain.DecodeRequest([]byte(tt.in))
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("DecodeRequest(%q) =\n%+v, %v\nwant\n%+v", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestPeekType(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"type":"review","intent":1}`, "review"},
		{`{"type":1}`, ""},
		{`not json`, ""},
		{`{"type":"` + strings.Repeat("x", 300) + `"}`, ""},
	}
	for _, tt := range tests {
		if got := checkpointchain.PeekType([]byte(tt.in)); got != tt.want {
			t.Errorf("PeekType(%.40q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func BenchmarkDecodeRequest(b *testing.B) {
	body := []byte(`{"type":"artifact","intent":"refactor the parser","parent":"01JA00000000000000000000C1","status":"provisional","confidence":"high",` +
		`"payload":{"files_changed":["src/a.go","src/b.go"],"content":"` + strings.Repeat("x", 1024) + `","artifacts":["https://example.com/a"]},` +
		`"resource_usage":{"tokens_consumed":12345,"wall_time":"1m30s","cost":0.04}}`)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := checkpointchain.DecodeRequest(body); err != nil {
			b.Fatal(err)
		}
	}
}
