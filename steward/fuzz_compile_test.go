package steward_test

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/wacpd/wacpd/atlas"
	"github.com/wacpd/wacpd/steward"
)

// FuzzSession: every manifest the atlas validation accepts compiles,
// and a session under it takes any goal and any answers without a
// panic; a response refused before its check changes nothing; a blocked
// or pending checkpoint always holds an action of its atlas.
func FuzzSession(f *testing.F) {
	b, err := os.ReadFile("../atlas/testdata/acme.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b, "refund the customer", []byte(`{"agree-terms":true}`))
	f.Add([]byte(`{"atlas_version":"1.0","atlas_id":"a","version":"1.0.0","name":"n","actions":[{"action_id":"x.y"}],
	  "checkpoints":[{"checkpoint_id":"k","mode":"blocking","trigger":{"type":"keyword","patterns":["ref.nd"],"match_mode":"regex"},
	  "questions":[{"question_id":"q","question":"?","response_type":"json","schema":{"type":"object"}}]}],
	  "checkpoint_config":{"keyword_match":{"enabled":true,"mappings":{"a|b":[]}},"budget":{"max_checkpoints_per_input":1}}}`),
		"refund", []byte(`{"q":"{\"a\":1}"}`))
	f.Fuzz(func(t *testing.T, manifest []byte, goal string, answers []byte) {
		m, err := atlas.Parse("f.json", manifest)
		if err != nil {
			return
		}
		set, err := steward.Compile([]*atlas.Manifest{m})
		if err != nil {
			t.Fatalf("a valid manifest does not compile: %v", err)
		}
		var as map[string]json.RawMessage
		if json.Unmarshal(answers, &as) != nil {
			as = map[string]json.RawMessage{}
		}
		s := &steward.Session{}
		steward.Evaluate(set, s, steward.Event{Kind: steward.EventSessionStart, Now: t0, NewID: newID})
		ev := steward.Event{Kind: steward.EventResolve, Now: t0, Goal: goal, Hints: []string{goal}, Tier: "critical", Explicit: true, NewID: newID}
		for _, a := range m.Actions {
			ev.Actions = append(ev.Actions, steward.ActionRef{AtlasID: m.AtlasID, ActionID: a.ActionID, Tier: a.RiskTier})
		}
		steward.Evaluate(set, s, ev)
		for _, p := range set.Prompts(s) {
			before := s.Version
			_, rerr := steward.Respond(set, s, steward.Response{AtlasID: m.AtlasID, CheckpointID: p.CheckpointID, Answers: as}, t0)
			if rerr != nil && s.Version != before {
				t.Fatalf("a refused response changed the session: %v", rerr)
			}
		}
		for _, p := range set.Prompts(s) {
			if p.Mode != atlas.ModeBlocking || len(m.Actions) == 0 {
				continue
			}
			d, _ := set.Def(steward.Key(m.AtlasID, p.CheckpointID))
			for _, a := range m.Actions {
				if d.Gates(m.AtlasID, a.ActionID, a.RiskTier) && set.Gate(s, m.AtlasID, a.ActionID, a.RiskTier) == nil {
					t.Fatalf("checkpoint %s is %s and gates %s, but nothing holds it", p.CheckpointID, p.Status, a.ActionID)
				}
			}
		}
		if _, err := json.Marshal(s); err != nil {
			t.Fatalf("the session does not encode: %v", err)
		}
	})
}
