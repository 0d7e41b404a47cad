package daemon

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/wacpd/wacpd/runtime"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

// service is the daemon's request path without NATS: every endpoint of
// Runtime.endpoints, called through handle as serve calls it, on an engine.
type service struct {
	r      *Daemon
	e      *runtime.Engine
	eps    map[string]endpoint // by op: "checkpoint", "system.info", "audit.trail.read", ...
	worker *workspace.Workspace
}

// newService wraps e in a Runtime with no NATS and creates an active worker
// under the root, the caller of the worker-only ops (callerOf).
func newService(t testing.TB, e *runtime.Engine) *service {
	t.Helper()
	r := &Daemon{cfg: Config{Version: "0.1.0-test"}, eng: e, tok: newTokens(), reqCtx: ctx}
	s := &service{r: r, e: e, eps: map[string]endpoint{}}
	for _, ep := range r.endpoints() {
		s.eps[opOf(ep.subject)] = ep
	}
	s.worker = newWorker(t, e)
	return s
}

// opOf returns the op of an endpoint subject: what follows wacp.v1.agent.*.
// for agent endpoints, wacp.v1. for the others.
func opOf(subject string) string {
	if op, ok := strings.CutPrefix(subject, "wacp.v1.agent.*."); ok {
		return op
	}
	return strings.TrimPrefix(subject, "wacp.v1.")
}

// ops returns every op, sorted.
func (s *service) ops() []string {
	out := make([]string, 0, len(s.eps))
	for op := range s.eps {
		out = append(out, op)
	}
	slices.Sort(out)
	return out
}

// callerOf returns the workspace that calls op in these tests: the worker
// for what a coordinator may not do (checkpoint, signal, inbox.next), the
// root otherwise.
func (s *service) callerOf(op string) string {
	switch op {
	case "checkpoint", "signal", "inbox.next":
		return s.worker.ID
	}
	return s.e.Root()
}

// call runs op for its caller (callerOf) with body, as serve would after
// identifying the caller.
func (s *service) call(ctx context.Context, op string, body []byte) (any, error) {
	ep, ok := s.eps[op]
	if !ok {
		panic("no endpoint for op " + op)
	}
	c := caller{}
	if ep.aud == agents {
		c.ws = s.callerOf(op)
	}
	return s.r.handle(ctx, ep, c, body)
}

// dbState is what a request could have changed (runtime.Fingerprint).
type dbState = runtime.Fingerprint

// takeVersion is takeDBState without the digests: cheap, and enough to
// tell that nothing was written.
func takeVersion(t testing.TB, e *runtime.Engine) dbState { return digestDB(t, e, false, false) }

func takeDBState(t testing.TB, e *runtime.Engine) dbState { return digestDB(t, e, true, true) }

// digestDB is e's fingerprint, with the digests if digest, of the trail's
// keys too if withTrail: the trail is most of the database.
func digestDB(t testing.TB, e *runtime.Engine, digest, withTrail bool) dbState {
	t.Helper()
	f, err := e.Fingerprint(digest, withTrail)
	if err != nil {
		t.Fatalf("fingerprint: %v", err)
	}
	return f
}

// checkUnchanged fails t unless after is before, or, when record is set,
// before plus exactly one trail entry of type record (the rejection the
// protocol records: checkpoint_rejected, envelope_rejected).
func checkUnchanged(t testing.TB, e *runtime.Engine, what string, before, after dbState, record trail.EventType) {
	t.Helper()
	if record == "" {
		if after != before {
			t.Fatalf("%s changed the database (trail %d -> %d entries), want no change", what, before.TrailLen, after.TrailLen)
		}
		return
	}
	if after.State != before.State {
		t.Fatalf("%s changed the database outside the trail, want only a %s entry", what, record)
	}
	if after.TrailLen != before.TrailLen+1 {
		t.Fatalf("%s: trail %d -> %d entries, want one %s entry", what, before.TrailLen, after.TrailLen, record)
	}
	last, err := e.Trail().At(after.TrailLen)
	if err != nil {
		t.Fatal(err)
	}
	if last.EventType != record {
		t.Fatalf("%s recorded %s, want %s", what, last.EventType, record)
	}
}

// wantRefused calls op with body and fails t unless it is refused with code
// want and changes nothing but record (see checkUnchanged). It returns the
// refusal's message.
func (s *service) wantRefused(t testing.TB, op string, body []byte, want string, record trail.EventType) string {
	t.Helper()
	before := takeDBState(t, s.e)
	traceBefore, execs := s.e.TraceLen(), len(s.e.Executions(""))
	_, err := s.call(ctx, op, body)
	if got := runtime.Code(err); got != want {
		t.Fatalf("%s(%.80q) = %v (code %q), want code %q", op, body, err, got, want)
	}
	if !isWireCode(runtime.Code(err)) {
		t.Fatalf("%s: code %q is not in the wire table", op, runtime.Code(err))
	}
	if strings.HasPrefix(op, "carp.") && s.e.TraceLen() != traceBefore {
		// A CARP refusal the handler makes is recorded in TRACE
		// (error.occurred), nothing else; one before it (handle's bounds)
		// changes nothing at all.
		after := takeDBState(t, s.e)
		if after.TrailLen != before.TrailLen || len(s.e.Executions("")) != execs || s.e.TraceLen() != traceBefore+1 {
			t.Fatalf("%s: trail %d -> %d, TRACE %d -> %d, executions %d -> %d; want one TRACE event only", op,
				before.TrailLen, after.TrailLen, traceBefore, s.e.TraceLen(), execs, len(s.e.Executions("")))
		}
		return runtime.Message(err)
	}
	checkUnchanged(t, s.e, op, before, takeDBState(t, s.e), record)
	return runtime.Message(err)
}

// isWireCode reports whether code is a row of the wire contract's table.
func isWireCode(code string) bool {
	return slices.ContainsFunc(wire.Codes, func(c wire.Code) bool { return c.Name == code })
}
