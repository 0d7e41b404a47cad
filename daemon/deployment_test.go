package daemon

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wacpd/wacpd/placement"
	"github.com/wacpd/wacpd/principal"
)

func TestParsePartitions(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
		err  string
	}{
		{"0-3", []int{0, 1, 2, 3}, ""},
		{"4,6", []int{4, 6}, ""},
		{" 1 , 3-4 ", []int{1, 3, 4}, ""},
		{"7", []int{7}, ""},
		{"", nil, "not a number"},
		{"a", nil, "not a number"},
		{"3-1", nil, "want A-B"},
		{"1-", nil, "want A-B"},
		{"0-5000", nil, "more than 1024"},
		{"1,,2", nil, "not a number"},
	} {
		got, err := ParsePartitions(tc.in)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ParsePartitions(%q) = %v, %v; want an error with %q", tc.in, got, err, tc.err)
		case tc.err == "" && (err != nil || !slices.Equal(got, tc.want)):
			t.Errorf("ParsePartitions(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestDeploymentCheck(t *testing.T) {
	const url = "nats://127.0.0.1:4222"
	ok := Deployment{Partitions: 8, Own: []int{3, 1, 2}, DaemonID: "d-1_a"}
	if err := ok.check(url); err != nil {
		t.Fatalf("check(%+v) = %v", ok, err)
	}
	if !slices.Equal(ok.Own, []int{1, 2, 3}) || ok.LeaseTTL != defaultLeaseTTL {
		t.Errorf("after check: own %v, ttl %v; want sorted and the default TTL", ok.Own, ok.LeaseTTL)
	}
	if err := (&Deployment{}).check(""); err != nil {
		t.Errorf("the single daemon's zero Deployment: %v", err)
	}
	for _, tc := range []struct {
		d    Deployment
		url  string
		want string
	}{
		{Deployment{Own: []int{1}}, url, "without a partition count"},
		{Deployment{DaemonID: "x"}, url, "without a partition count"},
		{Deployment{Partitions: 2000, Own: []int{1}, DaemonID: "d"}, url, "partitions"},
		{Deployment{Partitions: 8, Own: []int{1}, DaemonID: "d"}, "", "-nats-url is required"},
		{Deployment{Partitions: 8, DaemonID: "d"}, url, "-own"},
		{Deployment{Partitions: 8, Own: []int{1}}, url, "daemon id"},
		{Deployment{Partitions: 8, Own: []int{1}, DaemonID: "a.b"}, url, "daemon id"},
		{Deployment{Partitions: 8, Own: []int{1}, DaemonID: "a*"}, url, "daemon id"},
		{Deployment{Partitions: 8, Own: []int{1}, DaemonID: strings.Repeat("a", 65)}, url, "daemon id"},
		{Deployment{Partitions: 8, Own: []int{8}, DaemonID: "d"}, url, "want 0 to 7"},
		{Deployment{Partitions: 8, Own: []int{-1}, DaemonID: "d"}, url, "want 0 to 7"},
		{Deployment{Partitions: 8, Own: []int{2, 2}, DaemonID: "d"}, url, "twice"},
		{Deployment{Partitions: 8, Own: []int{2}, DaemonID: "d", LeaseTTL: time.Second}, url, "lease ttl"},
	} {
		d := tc.d
		if err := d.check(tc.url); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("check(%+v, %q) = %v, want an error with %q", tc.d, tc.url, err, tc.want)
		}
	}
}

func TestAgentSubject(t *testing.T) {
	for _, tc := range []struct {
		subj     string
		ws, op   string
		part     int
		accepted bool
	}{
		{"wacp.v1.agent.W1.checkpoint", "W1", "checkpoint", -1, true},
		{"wacp.v1.agent.W1.audit.trail.read", "W1", "audit.trail.read", -1, true},
		{"wacp.v1.p.5.agent.W1.workspace.get", "W1", "workspace.get", 5, true},
		{"wacp.v1.p.0.agent.W1.x", "W1", "x", 0, true},
		{"wacp.v1.agent.W1", "", "", 0, false},
		{"wacp.v1.agent..op", "", "", 0, false},
		{"wacp.v1.p.x.agent.W1.op", "", "", 0, false},
		{"wacp.v1.p.-1.agent.W1.op", "", "", 0, false},
		{"wacp.v1.p.5.W1.op", "", "", 0, false},
		{"wacp.v1.system.info", "", "", 0, false},
	} {
		ws, op, part, ok := agentSubject(tc.subj)
		if ok != tc.accepted || (ok && (ws != tc.ws || op != tc.op || part != tc.part)) {
			t.Errorf("agentSubject(%q) = %q, %q, %d, %v; want %q, %q, %d, %v", tc.subj, ws, op, part, ok, tc.ws, tc.op, tc.part, tc.accepted)
		}
	}
}

// idIn returns an id of the given partition among n.
func idIn(t *testing.T, p, n int) string {
	t.Helper()
	i := 0
	id, err := placement.MintInPartition(func() string {
		i++
		return "01TESTWORKSPACE" + strings.Repeat("0", 8) + string(rune('A'+i%26)) + string(rune('A'+i/26%26))
	}, p, n)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestPlace(t *testing.T) {
	const n = 8
	root := idIn(t, 0, n)
	pt := &partitions{d: Deployment{Partitions: n, Own: []int{0, 1, 2, 3}, DaemonID: "d1"}, root: root, home: 0}
	coord := caller{ws: root, p: principal.Principal{Kind: principal.KindCoordinator, Workspace: root}}
	body := func(k, v string) []byte { b, _ := json.Marshal(map[string]string{k: v}); return b }
	there, here := idIn(t, 6, n), idIn(t, 2, n)

	type want struct{ mint, relay, here int }
	check := func(name string, c caller, op string, part int, b []byte, w want) {
		t.Helper()
		if m, r, h := pt.place(c, op, part, b); m != w.mint || r != w.relay || h != w.here {
			t.Errorf("%s: place = mint %d relay %d here %d, want mint %d relay %d here %d", name, m, r, h, w.mint, w.relay, w.here)
		}
	}
	check("get of a remote workspace", coord, "workspace.get", 0, body("id", there), want{-1, 6, -1})
	check("get of a local workspace", coord, "workspace.get", 0, body("id", here), want{-1, -1, 2})
	check("get of the root", coord, "workspace.get", 0, body("id", root), want{-1, -1, -1})
	check("envelope to a remote workspace", coord, "envelope", 0, body("to", there), want{-1, 6, -1})
	check("integrate a remote workspace", coord, "integrate", 0, body("workspace", there), want{-1, 6, -1})
	check("a remote checkpoint", coord, "checkpoint.get", 0, body("id", there), want{-1, 6, -1})
	check("create under a remote parent", coord, "workspace.create", 0, body("parent", there), want{-1, 6, -1})
	check("create under a local parent", coord, "workspace.create", 0, body("parent", here), want{-1, -1, 2})
	check("the root's own inbox", coord, "inbox.next", 0, []byte(`{}`), want{-1, -1, -1})
	check("a body that is not JSON runs here", coord, "workspace.get", 0, []byte(`{`), want{-1, -1, -1})
	check("a relayed create keeps its partition", coord, "workspace.create", 5, []byte(`{}`), want{-1, 5, -1})
	check("a create addressed to an owned partition", coord, "workspace.create", 3, []byte(`{}`), want{3, -1, 3})

	agent := caller{ws: here, p: principal.Principal{Kind: principal.KindAgent, Workspace: here}}
	check("an agent's request is never placed", agent, "workspace.get", 2, body("id", there), want{-1, -1, -1})
	// A coordinator token used on another workspace's subject is not placed either.
	other := caller{ws: here, p: coord.p}
	check("not through the root", other, "workspace.get", 2, body("id", there), want{-1, -1, -1})

	// The root's children go round every partition, here or relayed.
	var got []int
	for range 2 * n {
		m, r, _ := pt.place(coord, "workspace.create", 0, []byte(`{"role":"worker"}`))
		got = append(got, max(m, r))
	}
	for i, p := range got {
		if p != i%n {
			t.Fatalf("the root's children went to partitions %v, want round robin over %d", got, n)
		}
	}
}

func TestCheckDirRecord(t *testing.T) {
	dir := t.TempDir()
	rec := dirRecord{Root: "R1", Partitions: 8, Own: []int{0, 1}, DaemonID: "d1"}
	if err := checkDirRecord(dir, rec); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, DeploymentFile)); err != nil {
		t.Fatal(err)
	}
	if err := checkDirRecord(dir, rec); err != nil {
		t.Errorf("the same deployment again: %v", err)
	}
	for _, tc := range []struct {
		change func(*dirRecord)
		want   string
	}{
		{func(r *dirRecord) { r.Root = "R2" }, "belongs to the deployment of root R1"},
		{func(r *dirRecord) { r.Own = []int{0, 2} }, "holds partitions [0 1] of 8"},
		{func(r *dirRecord) { r.Partitions = 16 }, "holds partitions [0 1] of 8"},
		{func(r *dirRecord) { r.DaemonID = "d2" }, `daemon "d1"'s`},
	} {
		r := rec
		r.Own = slices.Clone(rec.Own)
		tc.change(&r)
		if err := checkDirRecord(dir, r); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("checkDirRecord(%+v) = %v, want %q", r, err, tc.want)
		}
	}
}

func FuzzParsePartitions(f *testing.F) {
	for _, s := range []string{"0-3", "4,6", "", "3-1", "0-1023", "-1", "1-2-3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ps, err := ParsePartitions(s)
		if err != nil {
			if ps != nil {
				t.Fatalf("ParsePartitions(%q) = %v with error %v", s, ps, err)
			}
			return
		}
		if len(ps) == 0 {
			t.Fatalf("ParsePartitions(%q) accepted nothing", s)
		}
	})
}

func FuzzAgentSubject(f *testing.F) {
	for _, s := range []string{"wacp.v1.agent.W.op", "wacp.v1.p.3.agent.W.a.b", "wacp.v1.p..agent.W.op", "wacp.v1.agent."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ws, op, part, ok := agentSubject(s)
		if !ok {
			return
		}
		if ws == "" || op == "" || strings.Contains(ws, ".") {
			t.Fatalf("agentSubject(%q) = %q, %q, %d", s, ws, op, part)
		}
		want := "wacp.v1.agent." + ws + "." + op
		if part >= 0 {
			want = partitionSubject(part, ws, op)
		}
		if want != s && part < 0 {
			t.Fatalf("agentSubject(%q) = %q, %q: does not rebuild the subject", s, ws, op)
		}
	})
}
