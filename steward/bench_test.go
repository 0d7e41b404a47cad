package steward_test

import (
	"encoding/json"
	"slices"
	"strconv"
	"testing"

	"github.com/wacpd/wacpd/atlas"
	"github.com/wacpd/wacpd/carp"
	"github.com/wacpd/wacpd/steward"
)

// benchAtlas is the seed's atlas with its four checkpoints and 16 more
// (keyword, action_pre, interval, explicit), onboarding answered: what a
// resolve of a busy session evaluates.
func benchAtlas(b *testing.B) (*atlas.Manifest, *steward.Set, *steward.Session) {
	m := acmeB(b)
	for i := range 16 {
		c := atlas.Checkpoint{CheckpointID: "extra-" + strconv.Itoa(i), Mode: atlas.ModeAdvisory}
		switch i % 4 {
		case 0:
			c.Trigger = atlas.Trigger{Type: "keyword", Patterns: []string{"refund", "chargeback", "invoice"}, MatchMode: "phrase"}
		case 1:
			c.Trigger = atlas.Trigger{Type: "action_pre", Patterns: []string{"ticket.*"}}
		case 2:
			c.Trigger = atlas.Trigger{Type: "time_interval", Seconds: 3600}
		case 3:
			c.Trigger = atlas.Trigger{Type: "explicit_request"}
		}
		m.Checkpoints = append(m.Checkpoints, c)
	}
	if err := atlas.Validate("bench", m); err != nil {
		b.Fatal(err)
	}
	set, err := steward.Compile([]*atlas.Manifest{m})
	if err != nil {
		b.Fatal(err)
	}
	s := &steward.Session{}
	steward.Evaluate(set, s, steward.Event{Kind: steward.EventSessionStart, Now: t0, NewID: newID})
	if _, err := steward.Respond(set, s, steward.Response{CheckpointID: "onboarding", Answers: map[string]json.RawMessage{"agree-terms": json.RawMessage("true")}}, t0); err != nil {
		b.Fatal(err)
	}
	return m, set, s
}

func acmeB(b *testing.B) *atlas.Manifest {
	t := &testing.T{}
	m := acme(t)
	if t.Failed() || m == nil {
		b.Fatal("acme.json")
	}
	return m
}

func resolveInput(m *atlas.Manifest, i int) carp.Input {
	n := 0
	return carp.Input{Request: carp.Request{CARPVersion: carp.Version, RequestID: "r", Operation: carp.OpResolve,
		Requester: carp.Requester{AgentID: "a", SessionID: "s"}, Task: &carp.Task{Goal: "help the customer with ticket T-" + strconv.Itoa(i)}},
		Atlases: []*atlas.Manifest{m}, Now: t0, NewID: func() string { n++; return "id" }, TraceID: "t", SpanID: "s"}
}

// BenchmarkResolve measures a resolution of the seed's atlas without its
// checkpoints (plain) and with 20 checkpoints evaluated, the session's
// state copied, the overlay applied and the prompts and guidance added
// (checkpoints): the difference is what steward checkpoints cost a
// resolve (docs/performance.md).
func BenchmarkResolve(b *testing.B) {
	m, set, sess := benchAtlas(b)
	plain := *m
	plain.Checkpoints = nil
	b.Run("plain", func(b *testing.B) {
		for i := range b.N {
			if _, err := carp.Resolve(resolveInput(&plain, i)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("checkpoints", func(b *testing.B) {
		for i := range b.N {
			in := resolveInput(m, i)
			s := sess.Clone()
			ev := steward.Event{Kind: steward.EventResolve, Now: t0, Goal: in.Request.Task.Goal, Atlases: []string{m.AtlasID}, NewID: newID}
			for _, a := range m.Actions {
				ev.Actions = append(ev.Actions, steward.ActionRef{AtlasID: m.AtlasID, ActionID: a.ActionID, Tier: a.RiskTier})
			}
			steward.Evaluate(set, s, ev)
			inj := set.Inject(s, func(id string) bool { return slices.Contains(ev.Atlases, id) })
			in.Checkpoints = &carp.Overlay{
				Deny: func(m *atlas.Manifest, a atlas.Action, tier string) (*carp.ActionDenial, bool) {
					d, allow := set.Deny(s, m, a.ActionID, tier)
					if d != nil {
						return &carp.ActionDenial{ActionType: a.ActionID, Reason: d.Reason}, false
					}
					return nil, allow
				},
				Contexts: inj.Contexts, Asked: set.Asks,
			}
			out, err := carp.Resolve(in)
			if err != nil {
				b.Fatal(err)
			}
			out.Resolution.Checkpoints = set.Prompts(s)
			out.Resolution.Guidance = inj.Guidance
		}
	})
	b.Run("evaluate_only", func(b *testing.B) {
		for i := range b.N {
			s := sess.Clone()
			steward.Evaluate(set, s, steward.Event{Kind: steward.EventResolve, Now: t0, Goal: "help the customer with ticket T-" + strconv.Itoa(i),
				Atlases: []string{m.AtlasID}, NewID: newID})
		}
	})
}
