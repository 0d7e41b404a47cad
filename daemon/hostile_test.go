package daemon

import (
	"strings"
	"testing"

	"github.com/wacpd/wacpd/runtime"
	"github.com/wacpd/wacpd/taxonomy"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/wire"
)

// The hostile-input rules (docs/hostile-input.md), one test per rule, each
// run against every endpoint through handle (the path serve takes after
// identifying the caller). Each asserts the wire code and that the request
// changed nothing but the rejection entry the protocol records for
// checkpoints and envelopes.

// nestedArrays returns n nested arrays: [[...]].
func nestedArrays(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

// padded returns a JSON object of exactly n bytes (n >= 10).
func padded(n int) []byte {
	return []byte(`{"pad":"` + strings.Repeat("x", n-10) + `"}`)
}

// decoderRecord is the trail entry recorded when op's decoder refuses a
// body that passed handle's checks.
func decoderRecord(op string) trail.EventType {
	switch op {
	case "checkpoint":
		return trail.EventCheckpointRejected
	case "envelope":
		return trail.EventEnvelopeRejected
	}
	return ""
}

func TestHostileInputTooLargeIsTooLarge(t *testing.T) {
	e := openTest(t)
	s := newService(t, e)
	limit := e.Config().MaxObjectBytes
	if limit != 1<<20-1 {
		t.Fatalf("default MaxObjectBytes = %d, want 1 MiB - 1", limit)
	}
	for _, op := range s.ops() {
		t.Run(op, func(t *testing.T) {
			var record trail.EventType
			if op == "checkpoint" {
				record = trail.EventCheckpointRejected // the engine records oversized checkpoints
			}
			msg := s.wantRefused(t, op, padded(limit+1), wire.CodeTooLarge, record)
			if !strings.Contains(msg, "1048575 bytes") {
				t.Errorf("%s too_large message %q does not name the limit", op, msg)
			}
			// The same padding with the whitespace the decoder would skip
			// is counted too: the limit is on the bytes that arrive.
			s.wantRefused(t, op, append([]byte("{}"), make([]byte, limit)...), wire.CodeTooLarge, record)
			if _, err := s.call(ctx, op, padded(limit)); runtime.Code(err) == wire.CodeTooLarge {
				t.Errorf("%s(a body of exactly %d bytes) = %v, want no too_large", op, limit, err)
			}
		})
	}
}

func TestHostileInputTooLargeFollowsConfig(t *testing.T) {
	e := openTest(t, func(c *runtime.Config) { c.MaxObjectBytes = 200 })
	s := newService(t, e)
	s.wantRefused(t, "workspace.create", padded(201), wire.CodeTooLarge, "")
	body := []byte(`{"role":"worker","context":"` + strings.Repeat("x", 150) + `"}`)
	if _, err := s.call(ctx, "workspace.create", body); err != nil {
		t.Fatalf("workspace.create(%d bytes, limit 200) = %v, want success", len(body), err)
	}
}

func TestHostileInputDeepNestingIsInvalidStructure(t *testing.T) {
	e := openTest(t)
	s := newService(t, e)
	deep := []byte(`{"x":` + nestedArrays(taxonomy.MaxNesting) + `}`)
	for _, op := range s.ops() {
		t.Run(op, func(t *testing.T) {
			var record trail.EventType
			if op == "checkpoint" {
				record = trail.EventCheckpointRejected
			}
			msg := s.wantRefused(t, op, deep, wire.CodeInvalidStructure, record)
			if !strings.Contains(msg, "deeper than 64 levels") {
				t.Errorf("%s message %q does not say the body nests too deeply", op, msg)
			}
		})
	}
}

// TestHostileInputDeepNestingLimit checks the limit where free-form JSON is
// allowed: MaxNesting levels are accepted, one more is refused.
func TestHostileInputDeepNestingLimit(t *testing.T) {
	e := openTest(t)
	s := newService(t, e)
	const n = taxonomy.MaxNesting
	context := func(levels int) []byte { // the body nests levels+1 deep
		return []byte(`{"role":"worker","context":` + nestedArrays(levels) + `}`)
	}
	payload := func(levels int) []byte { // the body nests levels+2 deep
		return []byte(`{"type":"artifact","intent":"i","parent":null,"status":"provisional","confidence":"low",` +
			`"payload":{"files_changed":[],"content":"x","artifacts":[],"deep":` + nestedArrays(levels) + `}}`)
	}
	if _, err := s.call(ctx, "workspace.create", context(n-1)); err != nil {
		t.Errorf("workspace.create with a context %d deep = %v, want success", n-1, err)
	}
	s.wantRefused(t, "workspace.create", context(n), wire.CodeInvalidStructure, "")
	if _, err := s.call(ctx, "checkpoint", payload(n-2)); err != nil {
		t.Errorf("checkpoint with a payload field %d deep = %v, want success", n-2, err)
	}
	s.wantRefused(t, "checkpoint", payload(n-1), wire.CodeInvalidStructure, trail.EventCheckpointRejected)
}

func TestHostileInputInvalidUTF8IsInvalidStructure(t *testing.T) {
	e := openTest(t)
	s := newService(t, e)
	for _, body := range []string{"{\"id\":\"\xff\"}", "\xef\xbb", "{\"a\":\"\xed\xa0\x80\"}"} { // bad byte, cut sequence, surrogate
		for _, op := range s.ops() {
			t.Run(op, func(t *testing.T) {
				// A checkpoint's refusal is recorded (Checkpoint spec §8).
				var record trail.EventType
				if op == "checkpoint" {
					record = trail.EventCheckpointRejected
				}
				msg := s.wantRefused(t, op, []byte(body), wire.CodeInvalidStructure, record)
				if !strings.Contains(msg, "UTF-8") {
					t.Errorf("%s message %q does not say UTF-8", op, msg)
				}
			})
		}
	}
}

func TestHostileInputMalformedJSONIsInvalidStructure(t *testing.T) {
	e := openTest(t)
	s := newService(t, e)
	bodies := []string{
		`{`, `{"id":`, `{"a":1}}`, `{}{}`, `{} x`, `[]`, `"x"`, `1`, `null`, `true`,
		`{"no_such_field":1}`, `{'a':1}`, `{"a":1,}`, "{\"a\":\"\x01\"}",
	}
	for _, op := range s.ops() {
		if op == "system.info" {
			continue // it ignores its body
		}
		t.Run(op, func(t *testing.T) {
			for _, body := range bodies {
				s.wantRefused(t, op, []byte(body), wire.CodeInvalidStructure, decoderRecord(op))
			}
		})
	}
}

func TestHostileInputWrongTypesIsInvalidStructure(t *testing.T) {
	e := openTest(t)
	s := newService(t, e)
	w := s.worker.ID
	bodies := map[string]string{
		"checkpoint":                 `{"type":"artifact","intent":"i","status":"final","confidence":"high","payload":{"content":7}}`,
		"signal":                     `{"type":["ready"]}`,
		"envelope":                   `{"to":"` + w + `","type":"directive","payload":{"content":"x","attachments":"a"}}`,
		"inbox.next":                 `{"wait":5}`,
		"inbox.ack":                  `{"id":5}`,
		"checkpoint.get":             `{"id":1}`,
		"checkpoint.list":            `{"limit":"10"}`,
		"checkpoint.head":            `{"final":"yes"}`,
		"workspace.create":           `{"role":"worker","budget":{"cost_limit":"lots"}}`,
		"workspace.get":              `{"id":{}}`,
		"workspace.list":             `{"parent":false}`,
		"workspace.abort":            `{"id":"` + w + `","reason":1}`,
		"workspace.suspend":          `{"id":["` + w + `"]}`,
		"workspace.resume":           `{"id":null,"reason":{}}`,
		"workspace.migrate":          `{"id":"` + w + `","new_agent":2}`,
		"workspace.migrate.complete": `{"id":"` + w + `","error":3}`,
		"conflict.resolve":           `{"workspace":1,"resolution_strategy":"coordinator_resolve"}`,
		"integrate":                  `{"workspace":"` + w + `","decision":"accept","conflicts":{}}`,
		"trail":                      `{"limit":1.5}`,
		"token.create":               `{"kind":"auditor","name":42}`,
		"task.create":                `{"tasks":[{"name":7}]}`,
		"task.get":                   `{"id":"x","transitive":"yes"}`,
		"task.list":                  `{"ready":"no"}`,
		"task.bind":                  `{"id":"x","workspace":9}`,
		"task.cancel":                `{"id":"x","reason":[]}`,
		"task.retry":                 `{"id":false}`,
		"graph.get":                  `{"id":{}}`,
		"highway.queue":              `{"all":1}`,
		"highway.get":                `{"id":2}`,
		"highway.resolve":            `{"gate_id":"g","action":true}`,
		"highway.inject":             `{"to":1,"type":"feedback"}`,
		"highway.escalations":        `{"all":"yes"}`,
		"highway.escalation.respond": `{"escalation_id":3,"response":"abort"}`,
		"highway.workspace.create":   `{"role":["worker"]}`,
		"highway.workspace.abort":    `{"id":5}`,
		"highway.workspace.suspend":  `{"id":"W","reason":{}}`,
		"highway.workspace.resume":   `{"id":true}`,
		"highway.workspace.transfer": `{"id":"W","owner":[]}`,
		"highway.workspace.budget":   `{"id":"W","budget":{"cost_limit":"1"}}`,
		"highway.user.state":         `{"user":"bob","state":false}`,
		"token.revoke":               `{"kind":"auditor","name":["alice"]}`,
		"user.state":                 `{"user":"bob","state":7}`,
		"user.capabilities":          `{"user":"bob","grant":"abort_own"}`,
		"workspace.transfer":         `{"id":"W","owner":{}}`,
		"workspace.budget":           `{"id":"W","budget":{"compute_budget":{"token_limit":"9"}}}`,
		"workspace.visibility.grant": `{"id":"W","target":["X"],"reason":"r"}`,
		"workspace.priority":         `{"id":"W","priority":1}`,
		"group.abort":                `{"group":{"g":1}}`,
		"group.priority":             `{"group":"g","priority":true}`,
		"rights.list":                `{"workspace":["W"]}`,
		"rights.revoke":              `{"right_id":7,"reason":"r"}`,
		"signals.consumer":           `{"deliver_all":"yes"}`,
		"audit.trail.read":           `{"body":{"workspace":1}}`,
		"audit.trail.aggregate":      `{"group_by":["actor"]}`,
		"audit.trail.verify":         `{"workspace":[]}`,
		"audit.sth":                  `[]`,
		"audit.proof.inclusion":      `{"index":-1}`,
		"audit.proof.consistency":    `{"from":"1"}`,
		"audit.checkpoint.get":       `{"id":true}`,
		"audit.trace.read":           `{"session":5}`,
		"carp.resolve":               `{"carp_version":1.0}`,
		"carp.execute":               `{"carp_version":"1.0","request_id":[]}`,
		"carp.validate":              `{"requester":"me"}`,
		"carp.respond":               `{"checkpoint_response":{"checkpoint_id":"c","answers":[true]}}`,
		"atlas.load":                 `{"manifest":"not an object"}`,
		"atlas.unload":               `{"atlas_id":7}`,
		"atlas.list":                 `{"all":true}`,
		"trace":                      `{"from":"0"}`,
		"carp.approval":              `{"approval_id":7}`,
		"highway.approvals":          `{"workspace":1}`,
		"highway.approval.mode":      `{"workspace":"W","mode":["always"]}`,
		"highway.permit.revoke":      `{"permit_id":true}`,
		"highway.trust.restore":      `{"workspace":"W","boundary":{}}`,
	}
	for _, op := range s.ops() {
		if op == "system.info" {
			continue // it ignores its body
		}
		body, ok := bodies[op]
		if !ok {
			t.Errorf("no wrong-type body for %s: add one", op)
			continue
		}
		t.Run(op, func(t *testing.T) {
			s.wantRefused(t, op, []byte(body), wire.CodeInvalidStructure, decoderRecord(op))
		})
	}
	if _, err := s.call(ctx, "system.info", []byte(`[1,"x"]`)); err != nil {
		t.Errorf("system.info([1,\"x\"]) = %v, want success: it ignores a body that passes handle's checks", err)
	}
}

// TestHostileInputUnknownEnumIsInvalidStructure covers every closed enum of
// the requests. Unregistered checkpoint, envelope and signal types and roles
// are invalid_type instead, as the protocol says.
func TestHostileInputUnknownEnumIsInvalidStructure(t *testing.T) {
	e := openTest(t)
	s := newService(t, e)
	w := s.worker.ID
	cp := func(field, value string) string {
		m := map[string]string{"type": "artifact", "status": "provisional", "confidence": "low"}
		m[field] = value
		return `{"type":"` + m["type"] + `","intent":"i","parent":null,"status":"` + m["status"] +
			`","confidence":"` + m["confidence"] + `","payload":{"files_changed":[],"content":"x","artifacts":[]}}`
	}
	tests := []struct {
		name, op, body, want string
	}{
		{"checkpoint status", "checkpoint", cp("status", "done"), wire.CodeInvalidStructure},
		{"checkpoint confidence", "checkpoint", cp("confidence", "certain"), wire.CodeInvalidStructure},
		{"envelope priority", "envelope", `{"to":"` + w + `","type":"directive","priority":"asap","payload":{"content":"x"}}`, wire.CodeInvalidStructure},
		{"workspace priority", "workspace.create", `{"role":"worker","priority":"asap"}`, wire.CodeInvalidStructure},
		{"workspace state", "workspace.list", `{"state":"sleeping"}`, wire.CodeInvalidStructure},
		{"integrate decision", "integrate", `{"workspace":"` + w + `","decision":"maybe"}`, wire.CodeInvalidStructure},
		{"integrate strategy", "integrate", `{"workspace":"` + w + `","decision":"accept","strategy":"magic"}`, wire.CodeInvalidStructure},
		{"integrate mode", "integrate", `{"workspace":"` + w + `","decision":"accept","mode":"partial"}`, wire.CodeInvalidStructure},
		{"conflict type", "integrate", `{"workspace":"` + w + `","decision":"accept","strategy":"evaluated","conflicts":[{"conflict_type":"bogus","resources":[]}]}`, wire.CodeInvalidStructure},
		{"resolution strategy", "conflict.resolve", `{"workspace":"` + w + `","resolution_strategy":"vote"}`, wire.CodeInvalidStructure},
		{"token kind", "token.create", `{"kind":"admin","name":"eve"}`, wire.CodeInvalidStructure},
		{"trail event type", "trail", `{"event_type":"no_such_event"}`, wire.CodeInvalidStructure},
		{"audit event type", "audit.trail.read", `{"event_type":"no_such_event"}`, wire.CodeInvalidStructure},
		{"aggregate group_by", "audit.trail.aggregate", `{"group_by":"timestamp"}`, wire.CodeInvalidStructure},
		{"aggregate sum of a header", "audit.trail.aggregate", `{"sum":"actor"}`, wire.CodeInvalidStructure},
		{"aggregate empty path", "audit.trail.aggregate", `{"sum":"body.a..b"}`, wire.CodeInvalidStructure},
		{"aggregate since", "audit.trail.aggregate", `{"since":"yesterday"}`, wire.CodeInvalidStructure},
		{"approval mode", "highway.approval.mode", `{"workspace":"` + w + `","mode":"sometimes"}`, wire.CodeInvalidStructure},
		{"trust boundary kind", "highway.trust.restore", `{"workspace":"` + w + `","boundary":"disk:/"}`, wire.CodeInvalidStructure},
		{"checkpoint type", "checkpoint", cp("type", "poem"), wire.CodeInvalidType},
		{"signal type", "signal", `{"type":"dance"}`, wire.CodeInvalidType},
		{"envelope type", "envelope", `{"to":"` + w + `","type":"memo","payload":{"content":"x"}}`, wire.CodeInvalidType},
		{"role", "workspace.create", `{"role":"wizard"}`, wire.CodeInvalidType},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s.wantRefused(t, tt.op, []byte(tt.body), tt.want, decoderRecord(tt.op))
		})
	}
}

// TestHostileInputEngineDecoders checks the decoders that Go programs reach
// through the Engine without handle's checks: invalid UTF-8 and deep
// nesting in free-form fields are invalid_structure there too, and change
// nothing but the rejection the protocol records.
func TestHostileInputEngineDecoders(t *testing.T) {
	e := openTest(t)
	s := newService(t, e)
	root, w := e.Root(), s.worker.ID
	deep := nestedArrays(taxonomy.MaxNesting)
	tests := []struct {
		name   string
		call   func() error
		record trail.EventType
	}{
		{"CreateWorkspace context UTF-8", func() error {
			_, err := e.CreateWorkspace(ctx, root, []byte("{\"role\":\"worker\",\"context\":{\"a\":\"\xff\"}}"))
			return err
		}, ""},
		{"CreateWorkspace context nesting", func() error {
			_, err := e.CreateWorkspace(ctx, root, []byte(`{"role":"worker","context":`+deep+`}`))
			return err
		}, ""},
		{"Integrate result UTF-8", func() error {
			_, err := e.Integrate(ctx, root, []byte("{\"workspace\":\""+w+"\",\"decision\":\"accept\",\"result\":\"\xff\"}"))
			return err
		}, ""},
		{"Integrate result nesting", func() error {
			_, err := e.Integrate(ctx, root, []byte(`{"workspace":"`+w+`","decision":"accept","result":`+deep+`}`))
			return err
		}, ""},
		{"ResolveConflict UTF-8", func() error {
			_, err := e.ResolveConflict(ctx, root, []byte("{\"workspace\":\""+w+"\",\"resolution_strategy\":\"coordinator_resolve\",\"resolution\":\"\xff\"}"))
			return err
		}, ""},
		{"EmitSignal UTF-8", func() error {
			_, err := e.EmitSignal(ctx, w, []byte("{\"type\":\"blocked\",\"reason\":\"\xff\"}"))
			return err
		}, ""},
		{"SendEnvelope UTF-8", func() error {
			_, err := e.SendEnvelope(ctx, root, []byte("{\"to\":\""+w+"\",\"type\":\"directive\",\"payload\":{\"content\":\"\xff\"}}"))
			return err
		}, trail.EventEnvelopeRejected},
		{"CreateCheckpoint UTF-8", func() error {
			_, err := e.CreateCheckpoint(ctx, w, []byte("{\"type\":\"artifact\",\"intent\":\"\xff\"}"))
			return err
		}, trail.EventCheckpointRejected},
		{"CreateCheckpoint nesting", func() error {
			_, err := e.CreateCheckpoint(ctx, w, []byte(`{"type":"artifact","payload":{"x":`+deep+`}}`))
			return err
		}, trail.EventCheckpointRejected},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := takeDBState(t, e)
			err := tt.call()
			if got := runtime.Code(err); got != wire.CodeInvalidStructure {
				t.Fatalf("%s = %v (code %q), want %q", tt.name, err, got, wire.CodeInvalidStructure)
			}
			checkUnchanged(t, e, tt.name, before, takeDBState(t, e), tt.record)
		})
	}
}
