package trail

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func aggEntry(ws, actor string, typ EventType, body string) Entry {
	return Entry{Workspace: ws, Actor: actor, EventType: typ, Body: json.RawMessage(body)}
}

// TestAggregate: count, group and sum against hand-computed values:
// integers summed exactly past int64, decimals summed as decimals, values
// that are missing, null or not numbers skipped and counted, groups keyed
// by JSON value (a string and a number apart, absence null) in key order.
func TestAggregate(t *testing.T) {
	entries := []Entry{
		aggEntry("w1", "worker", EventBudgetModified, `{"new_limit":9223372036854775807,"budget_dimension":"token_limit"}`),
		aggEntry("w1", "worker", EventBudgetModified, `{"new_limit":10,"budget_dimension":"token_limit"}`),
		aggEntry("w2", "alice", EventBudgetModified, `{"new_limit":"10","budget_dimension":"token_limit"}`),
		aggEntry("w2", "alice", EventBudgetModified, `{"new_limit":null,"budget_dimension":"cost_limit"}`),
		aggEntry("", "protocol", EventBudgetModified, `{"budget_dimension":"cost_limit"}`),
		aggEntry("w3", "worker", EventBudgetModified, `{"new_limit":0.1,"budget_dimension":"cost_limit","usage":{"tokens":5}}`),
		aggEntry("w3", "worker", EventBudgetModified, `{"new_limit":0.2,"budget_dimension":"cost_limit","usage":{"tokens":7}}`),
	}
	run := func(groupBy, sum string, es []Entry) AggregateResult {
		t.Helper()
		a, err := ParseAggregation(groupBy, sum)
		if err != nil {
			t.Fatal(err)
		}
		g := NewAggregator(a)
		for _, e := range es {
			if err := g.Add(e); err != nil {
				t.Fatal(err)
			}
		}
		return g.Result()
	}
	js := func(v any) string { b, _ := json.Marshal(v); return string(b) }

	if r := run("", "", entries); r.Count != 7 || r.Sum != nil || r.Groups != nil {
		t.Errorf("count = %s, want count 7 alone", js(r))
	}
	// Integers: exact past int64 (2^63-1 + 10).
	r := run("", "body.new_limit", entries[:3])
	if want := `{"total":"9223372036854775817","exact":true,"values":2,"skipped":1}`; js(r.Sum) != strings.ReplaceAll(want, `"9223372036854775817"`, `9223372036854775817`) {
		t.Errorf("sum of integers = %s, want %s", js(r.Sum), want)
	}
	// Decimals: 0.1 + 0.2 is 0.3, not float64's 0.30000000000000004.
	if r := run("", "body.new_limit", entries[5:]); js(r.Sum) != `{"total":0.3,"exact":false,"values":2,"skipped":0}` {
		t.Errorf("sum of decimals = %s, want 0.3", js(r.Sum))
	}
	// A nested path; entries without it are skipped.
	if r := run("", "body.usage.tokens", entries); js(r.Sum) != `{"total":12,"exact":true,"values":2,"skipped":5}` {
		t.Errorf("sum of body.usage.tokens = %s, want 12 from 2, 5 skipped", js(r.Sum))
	}
	// Group by workspace: the system-level entry's key is null; each
	// group's sum is exact or not on its own, the whole's is not (one
	// decimal in it), given as the nearest float64.
	r = run("workspace", "body.new_limit", entries)
	want := `[{"key":"w1","count":2,"sum":{"total":9223372036854775817,"exact":true,"values":2,"skipped":0}},` +
		`{"key":"w2","count":2,"sum":{"total":0,"exact":true,"values":0,"skipped":2}},` +
		`{"key":"w3","count":2,"sum":{"total":0.3,"exact":false,"values":2,"skipped":0}},` +
		`{"key":null,"count":1,"sum":{"total":0,"exact":true,"values":0,"skipped":1}}]`
	if js(r.Groups) != want || r.GroupBy != "workspace" || r.SumOf != "body.new_limit" ||
		js(r.Sum) != `{"total":9.223372036854776e+18,"exact":false,"values":4,"skipped":3}` {
		t.Errorf("group by workspace = %s\nwant %s", js(r), want)
	}
	// Group by a body field: a number and a string apart, absence null.
	r = run("body.new_limit", "", entries)
	var keys []string
	for _, g := range r.Groups {
		keys = append(keys, string(g.Key))
	}
	if got := strings.Join(keys, " "); got != `"10" 0.1 0.2 10 9223372036854775807 null` {
		t.Errorf("group keys by body.new_limit = %s", got)
	}
	if r := run("actor", "", entries); js(r.Groups) != `[{"key":"alice","count":2},{"key":"protocol","count":1},{"key":"worker","count":4}]` {
		t.Errorf("group by actor = %s", js(r.Groups))
	}
	if r := run("event_type", "", entries); len(r.Groups) != 1 || r.Groups[0].Count != 7 {
		t.Errorf("group by event_type = %s", js(r.Groups))
	}
}

// TestAggregateGroupLimit: one group past MaxAggregateGroups is a
// LimitError, not a truncated answer.
func TestAggregateGroupLimit(t *testing.T) {
	g := NewAggregator(Aggregation{GroupBy: Field{header: "workspace"}})
	for i := range MaxAggregateGroups {
		if err := g.Add(aggEntry("w"+strings.Repeat("x", i), "a", EventBudgetModified, `{}`)); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.Add(aggEntry("w", "a", EventBudgetModified, `{}`)); err != nil {
		t.Fatalf("an existing group's entry: %v", err)
	}
	var le *LimitError
	if err := g.Add(aggEntry("new", "a", EventBudgetModified, `{}`)); !errors.As(err, &le) || le.What != "groups" {
		t.Fatalf("group %d: %v, want a LimitError", MaxAggregateGroups+1, err)
	}
}

// TestParseAggregation: what group_by and sum accept.
func TestParseAggregation(t *testing.T) {
	for _, tt := range []struct {
		groupBy, sum string
		ok           bool
	}{
		{"", "", true},
		{"event_type", "", true},
		{"workspace", "body.a.b", true},
		{"actor", "body.x", true},
		{"body.to_state", "", true},
		{"timestamp", "", false},
		{"body", "", false},
		{"body.", "", false},
		{"body.a..b", "", false},
		{"to_state", "", false},
		{"", "event_type", false},
		{"", "actor", false},
		{"", "resource_usage.tokens", false},
		{"body." + strings.Repeat("a.", MaxFieldPathDepth) + "a", "", false},
		{"body." + strings.Repeat("a", MaxFieldPath), "", false},
	} {
		_, err := ParseAggregation(tt.groupBy, tt.sum)
		if (err == nil) != tt.ok {
			t.Errorf("ParseAggregation(%q, %q) = %v, want ok %v", tt.groupBy, tt.sum, err, tt.ok)
		}
	}
}

// FuzzAggregate: any group_by and sum text and any body either parse and
// aggregate without panicking, with a sum that is a JSON number, or are
// refused.
func FuzzAggregate(f *testing.F) {
	f.Add("body.a", "body.a", `{"a":1}`)
	f.Add("workspace", "body.a.b", `{"a":{"b":1.5e3}}`)
	f.Add("body.a", "body.a", `{"a":-1e400}`)
	f.Add("actor", "body.a", `{"a":123456789012345678901234567890}`)
	f.Add("body.a.b", "body.a", `{"a":[1,2]}`)
	f.Add("event_type", "body.a", `not json`)
	f.Fuzz(func(t *testing.T, groupBy, sum, body string) {
		a, err := ParseAggregation(groupBy, sum)
		if err != nil {
			return
		}
		g := NewAggregator(a)
		for range 2 {
			if err := g.Add(aggEntry("w", "worker", EventBudgetModified, body)); err != nil {
				t.Fatal(err)
			}
		}
		r := g.Result()
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("result %+v does not marshal: %v", r, err)
		}
		var back AggregateResult
		if err := json.Unmarshal(b, &back); err != nil || back.Count != 2 {
			t.Fatalf("result %s does not read back: %v", b, err)
		}
		if r.Sum != nil && r.Sum.Values+r.Sum.Skipped != 2 {
			t.Fatalf("sum %+v does not account for 2 entries", r.Sum)
		}
	})
}
