package checkpointchain_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/wacpd/wacpd/casstore"
	"github.com/wacpd/wacpd/checkpointchain"
	"github.com/wacpd/wacpd/taxonomy"
	"github.com/wacpd/wacpd/taxonomy/taxfile"
)

// reviewTaxonomy registers a derived role reviewer (extends worker, so it
// also creates artifact) and two checkpoint types only it may create:
// review, which requires payload.verdict, and summary, which requires the
// base fields content and files_changed.
const reviewTaxonomy = `
taxonomy:
  id: test-review
  version: 1.0.0
  protocol_version: "0.1"
  roles:
    reviewer:
      extends: worker
  checkpoint_types:
    - name: review
      permitted_roles: [reviewer]
      required_fields: [verdict]
    - name: summary
      permitted_roles: [reviewer]
      required_fields: [content, files_changed]
`

func loadReviewTaxonomy(t testing.TB) *taxonomy.Taxonomy {
	t.Helper()
	tax, err := taxfile.Parse("review.yaml", []byte(reviewTaxonomy))
	if err != nil {
		t.Fatalf("taxfile.Parse(review.yaml) error = %v", err)
	}
	return tax
}

var (
	worker   = checkpointchain.Author{Workspace: wsID, Role: "worker", Active: true, State: "active"}
	reviewer = checkpointchain.Author{Workspace: wsID, Role: "reviewer", Active: true, State: "active"}
)

func req(typ string, parent *string, payload string) checkpointchain.Request {
	r := checkpointchain.Request{Type: typ, Intent: "because", Parent: parent, Status: "provisional", Confidence: "medium"}
	if payload != "" {
		if err := json.Unmarshal([]byte(payload), &r.Payload); err != nil {
			panic(err)
		}
	}
	return r
}

func inactive(a checkpointchain.Author, state string) checkpointchain.Author {
	a.Active, a.State = false, state
	return a
}

func withRole(a checkpointchain.Author, role string) checkpointchain.Author {
	a.Role = role
	return a
}

// TestBuildRejects checks each reason, and that when several rules fail the
// first in Build's documented order wins: workspace_not_active,
// invalid_type, permission_denied, invalid_structure, invalid_parent.
func TestBuildRejects(t *testing.T) {
	tax := loadReviewTaxonomy(t)
	head := checkpointchain.Chain{Head: cpID1, Count: 1}
	empty := checkpointchain.Chain{}
	tests := []struct {
		name   string
		req    checkpointchain.Request
		author checkpointchain.Author
		chain  checkpointchain.Chain
		want   checkpointchain.Reason
	}{
		// workspace_not_active wins over everything.
		{"inactive", req("artifact", nil, ""), inactive(worker, "pending"), empty, checkpointchain.ReasonWorkspaceNotActive},
		{"inactive completed", req("artifact", nil, ""), inactive(worker, "completed"), empty, checkpointchain.ReasonWorkspaceNotActive},
		{"inactive and unknown type", req("nope", nil, ""), inactive(worker, "suspended"), empty, checkpointchain.ReasonWorkspaceNotActive},
		{"inactive and wrong role", req("review", nil, `{"verdict":"ok"}`), inactive(worker, "failed"), empty, checkpointchain.ReasonWorkspaceNotActive},
		{"inactive and bad parent", req("artifact", ptr("x"), ""), inactive(worker, "pending"), empty, checkpointchain.ReasonWorkspaceNotActive},
		// invalid_type wins over permission, structure and parent.
		{"unknown type", req("nope", nil, ""), worker, empty, checkpointchain.ReasonInvalidType},
		{"unknown type and wrong role", req("nope", nil, ""), withRole(worker, "coordinator"), empty, checkpointchain.ReasonInvalidType},
		{"unknown type and unknown role", req("nope", nil, ""), withRole(worker, "ghost"), empty, checkpointchain.ReasonInvalidType},
		{"unknown type and bad parent", req("nope", ptr("x"), ""), worker, head, checkpointchain.ReasonInvalidType},
		{"type names are case sensitive", req("Artifact", nil, ""), worker, empty, checkpointchain.ReasonInvalidType},
		// permission_denied wins over structure and parent.
		{"observer creates artifact", req("artifact", nil, ""), withRole(worker, "observer"), empty, checkpointchain.ReasonPermissionDenied},
		{"worker creates observation", req("observation", nil, ""), worker, empty, checkpointchain.ReasonPermissionDenied},
		{"coordinator creates artifact", req("artifact", nil, ""), withRole(worker, "coordinator"), empty, checkpointchain.ReasonPermissionDenied},
		{"unknown role", req("artifact", nil, ""), withRole(worker, "ghost"), empty, checkpointchain.ReasonPermissionDenied},
		{"worker creates review", req("review", nil, `{"verdict":"ok"}`), worker, empty, checkpointchain.ReasonPermissionDenied},
		{"wrong role and missing field and bad parent", req("review", ptr("x"), ""), worker, empty, checkpointchain.ReasonPermissionDenied},
		// invalid_structure (required fields) wins over parent.
		{"review without verdict", req("review", nil, ""), reviewer, empty, checkpointchain.ReasonInvalidStructure},
		{"review with null verdict", req("review", nil, `{"verdict":null}`), reviewer, empty, checkpointchain.ReasonInvalidStructure},
		{"review with spaced null verdict", req("review", nil, `{"verdict" :  null }`), reviewer, empty, checkpointchain.ReasonInvalidStructure},
		{"review with empty verdict", req("review", nil, `{"verdict":""}`), reviewer, empty, checkpointchain.ReasonInvalidStructure},
		{"review with empty list verdict", req("review", nil, `{"verdict":[ ]}`), reviewer, empty, checkpointchain.ReasonInvalidStructure},
		{"review with empty object verdict", req("review", nil, `{"verdict":{}}`), reviewer, empty, checkpointchain.ReasonInvalidStructure},
		{"review with Verdict", req("review", nil, `{"Verdict":"ok"}`), reviewer, empty, checkpointchain.ReasonInvalidStructure},
		{"review without verdict and bad parent", req("review", ptr("x"), ""), reviewer, empty, checkpointchain.ReasonInvalidStructure},
		{"summary with empty content", req("summary", nil, `{"files_changed":["a"]}`), reviewer, empty, checkpointchain.ReasonInvalidStructure},
		{"summary with no files", req("summary", nil, `{"content":"c","files_changed":[]}`), reviewer, empty, checkpointchain.ReasonInvalidStructure},
		// invalid_parent.
		{"first with parent", req("artifact", ptr(cpID1), ""), worker, empty, checkpointchain.ReasonInvalidParent},
		{"second without parent", req("artifact", nil, ""), worker, head, checkpointchain.ReasonInvalidParent},
		{"second with other parent", req("artifact", ptr(cpID2), ""), worker, head, checkpointchain.ReasonInvalidParent},
		{"review with verdict and bad parent", req("review", ptr("x"), `{"verdict":"ok"}`), reviewer, empty, checkpointchain.ReasonInvalidParent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, b, err := checkpointchain.Build(tt.req, tt.author, tt.chain, tax, cpID2, ts2)
			var rj *checkpointchain.Rejection
			if !errors.As(err, &rj) || rj.Reason != tt.want {
				t.Fatalf("Build(%s) = %v, want a %s rejection", tt.name, err, tt.want)
			}
			if !errors.Is(err, checkpointchain.ErrRejected) {
				t.Errorf("Build(%s) error %v does not wrap ErrRejected", tt.name, err)
			}
			if !strings.HasPrefix(err.Error(), "checkpointchain: ") || rj.Message == "" {
				t.Errorf("Build(%s) error = %q, want a checkpointchain: prefix and a message", tt.name, err)
			}
			if b.Bytes() != nil || !reflect.DeepEqual(c, checkpointchain.Checkpoint{}) {
				t.Errorf("Build(%s) = %+v, %d bytes with its rejection, want nothing", tt.name, c, len(b.Bytes()))
			}
		})
	}
}

func TestBuildAccepts(t *testing.T) {
	tax := loadReviewTaxonomy(t)
	tests := []struct {
		name   string
		req    checkpointchain.Request
		author checkpointchain.Author
	}{
		{"worker artifact", req("artifact", nil, ""), worker},
		{"observer observation", req("observation", nil, `{"content":"saw it"}`), withRole(worker, "observer")},
		{"reviewer inherits artifact", req("artifact", nil, ""), reviewer},
		{"review with verdict", req("review", nil, `{"verdict":"approve"}`), reviewer},
		{"review with object verdict", req("review", nil, `{"verdict":{"ok":true}}`), reviewer},
		{"review with false verdict", req("review", nil, `{"verdict":false}`), reviewer},
		{"review with zero verdict", req("review", nil, `{"verdict":0}`), reviewer},
		{"summary with base fields", req("summary", nil, `{"content":"c","files_changed":["a.go"]}`), reviewer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, b, err := checkpointchain.Build(tt.req, tt.author, checkpointchain.Chain{}, tax, cpID1, ts1)
			if err != nil {
				t.Fatalf("Build(%s) error = %v", tt.name, err)
			}
			checkBuilt(t, tt.req, tt.author, c, b, cpID1, ts1)
		})
	}
}

// checkBuilt checks a successful Build: the record carries the request and
// the runtime's fields, b is its canonical encoding, its digest is the hash
// of b, and b decodes to the same record.
func checkBuilt(t testing.TB, r checkpointchain.Request, a checkpointchain.Author, c checkpointchain.Checkpoint, o checkpointchain.Object, id, ts string) {
	t.Helper()
	b := o.Bytes()
	if o.Ref() != casstore.RefOf(b) {
		t.Errorf("Build: the object's ref = %v, want RefOf(its bytes) = %v", o.Ref(), casstore.RefOf(b))
	}
	if c.ID != id || c.Timestamp != ts || c.Workspace != a.Workspace {
		t.Errorf("Build: id, timestamp, workspace = %q, %q, %q, want %q, %q, %q", c.ID, c.Timestamp, c.Workspace, id, ts, a.Workspace)
	}
	if c.Type != r.Type || c.Intent != r.Intent || c.Status != r.Status || c.Confidence != r.Confidence ||
		!reflect.DeepEqual(c.Parent, r.Parent) || c.Payload.Content != r.Payload.Content ||
		!reflect.DeepEqual(normalize(c).Payload.FilesChanged, orEmpty(r.Payload.FilesChanged)) ||
		!reflect.DeepEqual(normalize(c).Payload.Artifacts, orEmpty(r.Payload.Artifacts)) ||
		!reflect.DeepEqual(c.Payload.ExtraFields(), r.Payload.ExtraFields()) {
		t.Errorf("Build(%+v) = %+v, which does not carry the request", r, c)
	}
	if (c.ResourceUsage == nil) != (r.ResourceUsage == nil) {
		t.Errorf("Build: resource_usage = %v, want %v", c.ResourceUsage, r.ResourceUsage)
	}
	if c.Digest != casstore.RefOf(b) {
		t.Errorf("Build: digest = %v, want RefOf(bytes) = %v", c.Digest, casstore.RefOf(b))
	}
	enc, err := checkpointchain.Encode(c)
	if err != nil || !bytes.Equal(enc, b) {
		t.Errorf("Encode(Build result) = %s, %v, want the bytes Build returned %s", enc, err, b)
	}
	d, err := checkpointchain.Decode(b)
	if err != nil {
		t.Fatalf("Decode(Build bytes %s) error = %v", b, err)
	}
	if !reflect.DeepEqual(normalize(d), normalize(c)) {
		t.Errorf("Decode(Build bytes) =\n%+v\nwant the built checkpoint\n%+v", d, c)
	}
	// The reply's form reads as json.Marshal's.
	w, err := checkpointchain.Wire(c)
	if err != nil {
		t.Fatalf("Wire(Build result): %v", err)
	}
	m, err := json.Marshal(c)
	if err != nil {
		t.Fatalf("json.Marshal(Build result): %v", err)
	}
	var fromWire, fromMarshal any
	if err := json.Unmarshal(w, &fromWire); err != nil {
		t.Fatalf("Wire(Build result) = %s: %v", w, err)
	}
	if err := json.Unmarshal(m, &fromMarshal); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromWire, fromMarshal) {
		t.Errorf("Wire(Build result) reads\n%v\njson.Marshal's reads\n%v", fromWire, fromMarshal)
	}
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// TestBuildChain builds a chain of four: the first with parent null, each
// next naming the head; a request naming a stale head is invalid_parent.
func TestBuildChain(t *testing.T) {
	tax := taxonomy.Base()
	var ch checkpointchain.Chain
	ids := []string{cpID1, cpID2, cpID3, "01JA00000000000000000000C4"}
	var parent *string
	for i, id := range ids {
		r := req("artifact", parent, `{"content":"v`+id+`"}`)
		c, _, err := checkpointchain.Build(r, worker, ch, tax, id, ts1)
		if err != nil {
			t.Fatalf("Build(#%d, parent %v, head %q) error = %v", i+1, parent, ch.Head, err)
		}
		if c.ParentID() != ch.Head {
			t.Errorf("Build(#%d).ParentID() = %q, want head %q", i+1, c.ParentID(), ch.Head)
		}
		ch = ch.Append(c)
		if ch.Head != id || ch.Count != uint64(i+1) {
			t.Errorf("chain after #%d = %+v, want head %s, count %d", i+1, ch, id, i+1)
		}
		parent = ptr(id)
	}
	for _, stale := range []*string{nil, ptr(ids[0]), ptr(ids[2]), ptr("unknown")} {
		_, _, err := checkpointchain.Build(req("artifact", stale, ""), worker, ch, tax, "01JA00000000000000000000C5", ts1)
		var rj *checkpointchain.Rejection
		if !errors.As(err, &rj) || rj.Reason != checkpointchain.ReasonInvalidParent {
			t.Errorf("Build(parent %v, head %s) = %v, want %s", stale, ch.Head, err, checkpointchain.ReasonInvalidParent)
		}
	}
}

// TestBuildConfidenceIsNotAGate checks rule 4: the same request with each
// confidence builds the same checkpoint apart from the confidence field.
func TestBuildConfidenceIsNotAGate(t *testing.T) {
	tax := taxonomy.Base()
	built := map[string]checkpointchain.Checkpoint{}
	for _, conf := range []string{checkpointchain.ConfidenceHigh, checkpointchain.ConfidenceMedium, checkpointchain.ConfidenceLow} {
		for _, status := range []string{checkpointchain.StatusProvisional, checkpointchain.StatusFinal} {
			r := req("artifact", nil, `{"content":"c"}`)
			r.Confidence, r.Status = conf, status
			c, b, err := checkpointchain.Build(r, worker, checkpointchain.Chain{}, tax, cpID1, ts1)
			if err != nil {
				t.Fatalf("Build(confidence %s, status %s) error = %v", conf, status, err)
			}
			if c.Confidence != conf {
				t.Errorf("Build(confidence %s).Confidence = %q", conf, c.Confidence)
			}
			checkBuilt(t, r, worker, c, b, cpID1, ts1)
			c.Confidence, c.Digest = "", casstore.Ref{}
			built[conf+"/"+status] = c
		}
	}
	for _, status := range []string{checkpointchain.StatusProvisional, checkpointchain.StatusFinal} {
		if high, low := built["high/"+status], built["low/"+status]; !reflect.DeepEqual(high, low) {
			t.Errorf("Build with confidence low = %+v, want the same as high %+v apart from confidence", low, high)
		}
	}
}

// TestChainAppendLastFinal checks that a final checkpoint sets LastFinal and
// a provisional one leaves it.
func TestChainAppendLastFinal(t *testing.T) {
	tax := taxonomy.Base()
	steps := []struct {
		id, status    string
		wantLastFinal string
	}{
		{cpID1, checkpointchain.StatusProvisional, ""},
		{cpID2, checkpointchain.StatusFinal, cpID2},
		{cpID3, checkpointchain.StatusProvisional, cpID2},
		{"01JA00000000000000000000C4", checkpointchain.StatusFinal, "01JA00000000000000000000C4"},
	}
	var ch checkpointchain.Chain
	for i, s := range steps {
		var parent *string
		if ch.Head != "" {
			parent = ptr(ch.Head)
		}
		r := req("artifact", parent, "")
		r.Status = s.status
		c, _, err := checkpointchain.Build(r, worker, ch, tax, s.id, ts1)
		if err != nil {
			t.Fatalf("Build(#%d) error = %v", i+1, err)
		}
		ch = ch.Append(c)
		if ch.LastFinal != s.wantLastFinal || ch.Head != s.id || ch.Count != uint64(i+1) {
			t.Errorf("after #%d (%s): chain = %+v, want head %s, count %d, last_final %q", i+1, s.status, ch, s.id, i+1, s.wantLastFinal)
		}
	}
}

// TestBuildUnsealable checks that a payload value RFC 8785 cannot represent
// is a rejection, not another error.
func TestBuildUnsealable(t *testing.T) {
	r := req("artifact", nil, `{"big":1e400}`)
	_, _, err := checkpointchain.Build(r, worker, checkpointchain.Chain{}, taxonomy.Base(), cpID1, ts1)
	var rj *checkpointchain.Rejection
	if !errors.As(err, &rj) || rj.Reason != checkpointchain.ReasonInvalidStructure {
		t.Errorf("Build(payload 1e400) = %v, want %s", err, checkpointchain.ReasonInvalidStructure)
	}
}

// TestBuildCanonicalizesExtra checks that Build returns the record as it
// will be read back: extra payload values in canonical form, the same as
// Decode of the bytes it returns.
func TestBuildCanonicalizesExtra(t *testing.T) {
	r := req("review", nil, `{"verdict" : { "b" : 1, "a" : 2.50 }, "n": 12345678901234567890}`)
	c, b, err := checkpointchain.Build(r, reviewer, checkpointchain.Chain{}, loadReviewTaxonomy(t), cpID1, ts1)
	if err != nil {
		t.Fatal(err)
	}
	checkBuilt(t, r, reviewer, c, b, cpID1, ts1)
	if got, want := string(c.Payload.Extra["verdict"]), `{"a":2.5,"b":1}`; got != want {
		t.Errorf("Build: payload.verdict = %s, want %s", got, want)
	}
}
