package checkpointchain_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/wacpd/wacpd/casstore"
	"github.com/wacpd/wacpd/checkpointchain"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden and testdata/*.digest from the current Encode")

func ptr[T any](v T) *T { return &v }

// Fixed ids and timestamps, in the forms the runtime assigns (ULIDs,
// clock.Layout).
const (
	wsID  = "01JA0000000000000000000WS1"
	cpID1 = "01JA00000000000000000000C1"
	cpID2 = "01JA00000000000000000000C2"
	cpID3 = "01JA00000000000000000000C3"
	ts1   = "2026-02-24T10:00:00.000000000Z"
	ts2   = "2026-02-24T10:05:30.123456789Z"
)

// largeContent is 8 KiB-ish of deterministic text with newlines and tabs.
func largeContent() string {
	var b strings.Builder
	for i := range 200 {
		fmt.Fprintf(&b, "line %04d:\tthe quick brown fox jumps over the lazy dog\n", i)
	}
	return b.String()
}

// goldenCases are the frozen checkpoints. Their Extra values are written in
// canonical form so that Decode returns them unchanged.
var goldenCases = []struct {
	name string
	cp   checkpointchain.Checkpoint
}{
	{
		// The first checkpoint of a chain: parent null, no resource_usage,
		// empty lists and content.
		name: "first_minimal",
		cp: checkpointchain.Checkpoint{
			ID: cpID1, Workspace: wsID, Type: "artifact",
			Intent: "start", Status: checkpointchain.StatusProvisional,
			Confidence: checkpointchain.ConfidenceMedium, Timestamp: ts1,
		},
	},
	{
		// Every field set: resource_usage with all three fields, unicode,
		// HTML-ish characters (which RFC 8785 does not escape) and escapes.
		name: "full_unicode",
		cp: checkpointchain.Checkpoint{
			ID: cpID2, Workspace: wsID, Type: "artifact",
			Payload: checkpointchain.Payload{
				FilesChanged: []string{"src/main.go", "docs/ÜBER.md", "a b/c\"d.txt"},
				Content:      "héllo 世界 🚀 <script>if (a < b && c > d) {}</script>\n\t\"quoted\" back\\slash \x01 \u2028 \u007f é",
				Artifacts:    []string{"https://example.com/x?a=1&b=2", "blake3:af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"},
			},
			Intent: "refactor the parser; edge cases: <none> & \"some\"", Parent: ptr(cpID1),
			Status: checkpointchain.StatusProvisional, Confidence: checkpointchain.ConfidenceHigh,
			ResourceUsage: &checkpointchain.ResourceUsage{
				TokensConsumed: ptr(int64(12345)), WallTime: ptr("1m30.5s"), Cost: ptr(0.0425),
			},
			Timestamp: ts2,
		},
	},
	{
		// A taxonomy type with payload fields beyond the base three; keys of
		// nested objects are sorted too.
		name: "review_extra",
		cp: checkpointchain.Checkpoint{
			ID: cpID3, Workspace: wsID, Type: "review",
			Payload: checkpointchain.Payload{
				Content: "looks good",
				Extra: map[string]json.RawMessage{
					"verdict": json.RawMessage(`"approve"`),
					"score":   json.RawMessage(`4.5`),
					"checks":  json.RawMessage(`{"a":[true,null,1e+21],"lint":"ok","z":{}}`),
					"aaa":     json.RawMessage(`[]`),
				},
			},
			Intent: "review of workspace 01JA", Parent: ptr(cpID2),
			Status: checkpointchain.StatusProvisional, Confidence: checkpointchain.ConfidenceMedium,
			ResourceUsage: &checkpointchain.ResourceUsage{Cost: ptr(1e-7)},
			Timestamp:     ts2,
		},
	},
	{
		// A final checkpoint with low confidence; tokens_consumed 0 is
		// written (it was reported), the other usage fields are not.
		name: "final_low",
		cp: checkpointchain.Checkpoint{
			ID: cpID3, Workspace: wsID, Type: "observation",
			Payload: checkpointchain.Payload{Content: "the logs show a retry storm at 10:02"},
			Intent:  "I am not sure this is the cause", Parent: ptr(cpID2),
			Status: checkpointchain.StatusFinal, Confidence: checkpointchain.ConfidenceLow,
			ResourceUsage: &checkpointchain.ResourceUsage{TokensConsumed: ptr(int64(0))},
			Timestamp:     ts2,
		},
	},
	{
		name: "large_content",
		cp: checkpointchain.Checkpoint{
			ID: cpID2, Workspace: wsID, Type: "artifact",
			Payload: checkpointchain.Payload{
				FilesChanged: []string{"big.txt"},
				Content:      largeContent(),
				Artifacts:    []string{},
			},
			Intent: "write the big file", Parent: ptr(cpID1),
			Status: checkpointchain.StatusFinal, Confidence: checkpointchain.ConfidenceHigh,
			ResourceUsage: &checkpointchain.ResourceUsage{
				TokensConsumed: ptr(int64(checkpointchain.MaxSafeInteger)), WallTime: ptr("2h0m0s"), Cost: ptr(1234.5),
			},
			Timestamp: ts2,
		},
	},
}

func goldenPath(name, ext string) string { return filepath.Join("testdata", name+ext) }

func readGolden(t testing.TB, name string) (encoding []byte, digest string) {
	t.Helper()
	b, err := os.ReadFile(goldenPath(name, ".golden"))
	if err != nil {
		t.Fatalf("read golden: %v (run go test -update to create it)", err)
	}
	d, err := os.ReadFile(goldenPath(name, ".digest"))
	if err != nil {
		t.Fatalf("read digest: %v (run go test -update to create it)", err)
	}
	return b, strings.TrimSpace(string(d))
}

// normalize makes nil and empty lists and maps equal, as the canonical form
// does not tell them apart.
func normalize(c checkpointchain.Checkpoint) checkpointchain.Checkpoint {
	if c.Payload.FilesChanged == nil {
		c.Payload.FilesChanged = []string{}
	}
	if c.Payload.Artifacts == nil {
		c.Payload.Artifacts = []string{}
	}
	if len(c.Payload.Extra) == 0 {
		c.Payload.Extra = nil
	}
	return c
}

// TestGolden freezes the canonical encoding and the digest of each fixed
// checkpoint. Run go test -update to rewrite the files after a deliberate
// format change (which changes every digest ever stored).
func TestGolden(t *testing.T) {
	for _, tt := range goldenCases {
		t.Run(tt.name, func(t *testing.T) {
			got, err := checkpointchain.Encode(tt.cp)
			if err != nil {
				t.Fatalf("Encode(%s) error = %v", tt.name, err)
			}
			digest := casstore.RefOf(got).String()
			if *update {
				if err := os.WriteFile(goldenPath(tt.name, ".golden"), got, 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(goldenPath(tt.name, ".digest"), []byte(digest+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, wantDigest := readGolden(t, tt.name)
			if !bytes.Equal(got, want) {
				t.Errorf("Encode(%s) =\n%s\nwant\n%s", tt.name, got, want)
			}
			if digest != wantDigest {
				t.Errorf("digest of Encode(%s) = %s, want %s", tt.name, digest, wantDigest)
			}
			c := tt.cp
			sealed, err := checkpointchain.Seal(&c)
			if err != nil || !bytes.Equal(sealed, want) || c.Digest.String() != wantDigest {
				t.Errorf("Seal(%s) = %d bytes, digest %v, %v, want the golden bytes and %s", tt.name, len(sealed), c.Digest, err, wantDigest)
			}
		})
	}
}

// TestGoldenShape checks the properties of the canonical form that are easy
// to get wrong, independently of the golden bytes.
func TestGoldenShape(t *testing.T) {
	for _, tt := range goldenCases {
		b, _ := readGolden(t, tt.name)
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s.golden is not JSON: %v", tt.name, err)
		}
		want := []string{"confidence", "id", "intent", "parent", "payload", "resource_usage", "status", "timestamp", "type", "workspace"}
		if got := objectKeys(t, b); !reflect.DeepEqual(got, want) {
			t.Errorf("%s.golden keys = %v, want %v (sorted, no digest)", tt.name, got, want)
		}
		if keys := objectKeys(t, m["payload"]); !isSorted(keys) {
			t.Errorf("%s.golden payload keys = %v, want sorted", tt.name, keys)
		}
		if tt.cp.Parent == nil && string(m["parent"]) != "null" {
			t.Errorf("%s.golden parent = %s, want null", tt.name, m["parent"])
		}
		if tt.cp.ResourceUsage == nil && string(m["resource_usage"]) != "null" {
			t.Errorf("%s.golden resource_usage = %s, want null", tt.name, m["resource_usage"])
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, b); err != nil || !bytes.Equal(compact.Bytes(), b) {
			t.Errorf("%s.golden has insignificant whitespace", tt.name)
		}
		if bytes.Contains(b, []byte(`\u003c`)) || bytes.Contains(b, []byte(`\u0026`)) {
			t.Errorf("%s.golden escapes < or & (RFC 8785 writes them as is)", tt.name)
		}
	}
	b, _ := readGolden(t, "first_minimal")
	if !bytes.Contains(b, []byte(`"payload":{"artifacts":[],"content":"","files_changed":[]}`)) {
		t.Errorf("first_minimal.golden = %s, want empty lists written as []", b)
	}
}

// objectKeys returns the keys of the JSON object b in the order written.
func objectKeys(t *testing.T, b []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("objectKeys(%.40s): not an object", b)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

func isSorted(s []string) bool {
	for i := 1; i < len(s); i++ {
		if s[i-1] >= s[i] {
			return false
		}
	}
	return true
}

func TestDecodeRoundTrip(t *testing.T) {
	for _, tt := range goldenCases {
		t.Run(tt.name, func(t *testing.T) {
			b, wantDigest := readGolden(t, tt.name)
			got, err := checkpointchain.Decode(b)
			if err != nil {
				t.Fatalf("Decode(%s.golden) error = %v", tt.name, err)
			}
			if got.Digest.String() != wantDigest {
				t.Errorf("Decode(%s.golden).Digest = %v, want %s", tt.name, got.Digest, wantDigest)
			}
			want := tt.cp
			want.Digest = casstore.MustParse(wantDigest)
			if !reflect.DeepEqual(normalize(got), normalize(want)) {
				t.Errorf("Decode(%s.golden) =\n%+v\nwant\n%+v", tt.name, got, want)
			}
			again, err := checkpointchain.Encode(got)
			if err != nil || !bytes.Equal(again, b) {
				t.Errorf("Encode(Decode(%s.golden)) = %s, %v, want the golden bytes", tt.name, again, err)
			}
		})
	}
}

func TestDecodeNotCanonical(t *testing.T) {
	full, _ := readGolden(t, "full_unicode")
	minimal, _ := readGolden(t, "first_minimal")
	review, _ := readGolden(t, "review_extra")
	var indented bytes.Buffer
	if err := json.Indent(&indented, full, "", "  "); err != nil {
		t.Fatal(err)
	}
	// The fields in Go declaration order, not sorted.
	reordered, err := json.Marshal(struct {
		ID            string                         `json:"id"`
		Workspace     string                         `json:"workspace"`
		Type          string                         `json:"type"`
		Payload       checkpointchain.Payload        `json:"payload"`
		Intent        string                         `json:"intent"`
		Parent        *string                        `json:"parent"`
		Status        string                         `json:"status"`
		Confidence    string                         `json:"confidence"`
		ResourceUsage *checkpointchain.ResourceUsage `json:"resource_usage"`
		Timestamp     string                         `json:"timestamp"`
	}{cpID1, wsID, "artifact", checkpointchain.Payload{}, "start", nil, "provisional", "medium", nil, ts1})
	if err != nil {
		t.Fatal(err)
	}
	replace := func(b []byte, old, new string) []byte {
		t.Helper()
		if !bytes.Contains(b, []byte(old)) {
			t.Fatalf("%q not in %s", old, b)
		}
		return bytes.Replace(b, []byte(old), []byte(new), 1)
	}
	tests := []struct {
		name string
		in   []byte
	}{
		{"empty", nil},
		{"null", []byte("null")},
		{"array", []byte("[]")},
		{"empty object", []byte("{}")},
		{"indented", indented.Bytes()},
		{"leading space", append([]byte(" "), minimal...)},
		{"trailing newline", append(bytes.Clone(minimal), '\n')},
		{"space after colon", replace(minimal, `"id":`, `"id": `)},
		{"reordered keys", reordered},
		{"unknown field", replace(minimal, `"workspace":`, `"zzz":1,"workspace":`)},
		{"digest field", replace(minimal, `"id":`, `"digest":"`+casstore.RefOf(minimal).String()+`","id":`)},
		{"unknown resource_usage field", replace(full, `"tokens_consumed":`, `"tokens":1,"tokens_consumed":`)},
		{"uppercase key", replace(minimal, `"id":`, `"ID":`)},
		{"duplicate key", replace(minimal, `"id":`, `"id":"x","id":`)},
		{"missing parent", replace(minimal, `"parent":null,`, ``)},
		{"missing resource_usage", replace(minimal, `"resource_usage":null,`, ``)},
		{"null lists", replace(minimal, `"files_changed":[]`, `"files_changed":null`)},
		{"escaped letter", replace(minimal, `"start"`, `"st\u0061rt"`)},
		{"html escaped", replace(full, `<script>`, `\u003cscript>`)},
		{"escaped slash", replace(full, `https://`, `https:\/\/`)},
		{"number exponent", replace(full, `"cost":0.0425`, `"cost":4.25e-2`)},
		{"number trailing zero", replace(full, `"tokens_consumed":12345`, `"tokens_consumed":12345.0`)},
		{"extra not canonical", replace(review, `"score":4.5`, `"score":4.50`)},
		{"extra keys unsorted", replace(review, `"lint":"ok","z":{}`, `"z":{},"lint":"ok"`)},
		{"trailing object", append(bytes.Clone(minimal), "{}"...)},
		{"trailing brace", append(bytes.Clone(minimal), '}')},
		{"trailing garbage", append(bytes.Clone(minimal), 'x')},
		{"truncated", minimal[:len(minimal)-1]},
		{"invalid utf-8", replace(minimal, `"start"`, "\"st\xffrt\"")},
		{"tokens as string", replace(full, `"tokens_consumed":12345`, `"tokens_consumed":"12345"`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := checkpointchain.Decode(tt.in)
			if !errors.Is(err, checkpointchain.ErrNotCanonical) {
				t.Errorf("Decode(%q) = %+v, %v, want error %v", tt.in, got, err, checkpointchain.ErrNotCanonical)
			}
		})
	}
}

// TestEncodeDistinguishes checks that fields the canonical form must keep
// apart produce different digests.
func TestEncodeDistinguishes(t *testing.T) {
	base := goldenCases[0].cp
	variants := map[string]func(c *checkpointchain.Checkpoint){
		"parent":             func(c *checkpointchain.Checkpoint) { c.Parent = ptr(cpID1) },
		"empty resource use": func(c *checkpointchain.Checkpoint) { c.ResourceUsage = &checkpointchain.ResourceUsage{} },
		"zero tokens": func(c *checkpointchain.Checkpoint) {
			c.ResourceUsage = &checkpointchain.ResourceUsage{TokensConsumed: ptr(int64(0))}
		},
		"confidence": func(c *checkpointchain.Checkpoint) { c.Confidence = checkpointchain.ConfidenceLow },
		"status":     func(c *checkpointchain.Checkpoint) { c.Status = checkpointchain.StatusFinal },
		"extra null": func(c *checkpointchain.Checkpoint) {
			c.Payload.Extra = map[string]json.RawMessage{"x": json.RawMessage("null")}
		},
		"timestamp": func(c *checkpointchain.Checkpoint) { c.Timestamp = ts2 },
		"workspace": func(c *checkpointchain.Checkpoint) { c.Workspace = "other" },
	}
	b0, err := checkpointchain.Encode(base)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{string(b0): "base"}
	for name, f := range variants {
		c := base
		f(&c)
		b, err := checkpointchain.Encode(c)
		if err != nil {
			t.Fatalf("Encode(%s) error = %v", name, err)
		}
		if other, dup := seen[string(b)]; dup {
			t.Errorf("Encode(%s) = Encode(%s) = %s", name, other, b)
		}
		seen[string(b)] = name
		if _, err := checkpointchain.Decode(b); err != nil {
			t.Errorf("Decode(Encode(%s)) error = %v", name, err)
		}
	}
}

// TestCheckpointJSON checks that the record's own JSON (as served to
// clients) carries the digest as its text form.
func TestCheckpointJSON(t *testing.T) {
	c := goldenCases[0].cp
	if _, err := checkpointchain.Seal(&c); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"digest":"`+c.Digest.String()+`"`)) {
		t.Errorf("json.Marshal(checkpoint) = %s, want digest %s", b, c.Digest)
	}
}

func BenchmarkEncode(b *testing.B) {
	c := benchCheckpoint()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := checkpointchain.Encode(c); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSeal(b *testing.B) {
	c := benchCheckpoint()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := checkpointchain.Seal(&c); err != nil {
			b.Fatal(err)
		}
	}
}

// benchCheckpoint is a typical checkpoint with 1 KiB of content.
func benchCheckpoint() checkpointchain.Checkpoint {
	c := goldenCases[1].cp
	c.Payload.Content = strings.Repeat("abcdefgh", 128)
	return c
}
