package hwtui

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/charmbracelet/lipgloss"

	"github.com/wacpd/wacpd/highway"
)

// TestHeadGateShown: the screen shows the oldest pending gate, its
// fields and its subject as the daemon sent it, indented.
func TestHeadGateShown(t *testing.T) {
	deadline, timeout, fb := "2026-01-01T00:15:00.000000000Z", "15m0s", highway.FallbackReject
	first := gate(1, "G1", highway.TaskApproval, taskSubject, false)
	first.Deadline, first.Timeout, first.Fallback = &deadline, &timeout, &fb
	ws := "W1"
	second := gate(2, "G2", highway.Integration, integrationSubject, true)
	second.Workspace = &ws
	// The source answers out of order: the screen is FIFO anyway.
	h := newHarness(t, &fakeSource{gates: []highway.Gate{second, first}}, 100, 30)
	h.mustShow("2 gates pending", "● connected", "task_approval gate G1", "subj-G1",
		"deadline   2026-01-01T00:15:00.000000000Z (in 10m0s), then reject",
		`  "description": "build it",`, `  "priority": "normal",`, `  "resource_estimate": null,`)
	h.mustNotShow("G2", "IRREVERSIBLE")

	h.keys("n")
	h.mustShow("rejected gate G1", "integration gate G2", "IRREVERSIBLE", "workspace  W1",
		"none: waits indefinitely", `  "checkpoint_ref": "C9",`)
}

// TestIrreversibleNeedsSecondKey: y on an irreversible gate sends nothing
// and asks for Y; only Y approves, any other key cancels. A reversible
// gate is approved by y alone.
func TestIrreversibleNeedsSecondKey(t *testing.T) {
	tests := []struct {
		name         string
		irreversible bool
		keys         []string
		want         []resolution
		show         string
	}{
		{"y asks", true, []string{"y"}, nil, "press Y (shift+y) to approve gate G1"},
		{"y then Y approves", true, []string{"y", "Y"}, []resolution{{"G1", highway.Approve, ""}}, "approved gate G1"},
		{"y then x cancels", true, []string{"y", "x"}, nil, "approval of gate G1 cancelled; nothing sent"},
		{"y then y cancels", true, []string{"y", "y"}, nil, "cancelled; nothing sent"},
		{"y then enter cancels", true, []string{"y", "enter"}, nil, "cancelled; nothing sent"},
		{"y then n cancels, rejects nothing", true, []string{"y", "n"}, nil, "cancelled; nothing sent"},
		{"Y alone does nothing", true, []string{"Y"}, nil, "IRREVERSIBLE"},
		{"reversible: y approves", false, []string{"y"}, []resolution{{"G1", highway.Approve, ""}}, "approved gate G1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := &fakeSource{gates: []highway.Gate{gate(1, "G1", highway.Integration, integrationSubject, tt.irreversible)}}
			h := newHarness(t, src, 100, 30)
			h.keys(tt.keys...)
			if got := src.calls(); !slices.Equal(got, tt.want) {
				t.Errorf("keys %q sent %v, want %v", tt.keys, got, tt.want)
			}
			h.mustShow(tt.show)
		})
	}
}

// TestConfirmationBoundToGate: a confirmation is about the gate it was
// asked for; when that gate leaves the queue, Y approves nothing.
func TestConfirmationBoundToGate(t *testing.T) {
	src := &fakeSource{gates: []highway.Gate{
		gate(1, "G1", highway.Integration, integrationSubject, true),
		gate(2, "G2", highway.Integration, integrationSubject, true),
	}}
	h := newHarness(t, src, 100, 30)
	h.keys("y")
	h.mustShow("press Y (shift+y) to approve gate G1")
	src.set(func(f *fakeSource) { f.gates = f.gates[1:] }) // G1 timed out
	h.send(changedMsg{})
	h.mustShow("gate G1 is no longer pending", "integration gate G2")
	h.keys("Y")
	if got := src.calls(); len(got) != 0 {
		t.Fatalf("Y after the gate left sent %v, want nothing", got)
	}
}

// TestModifySendsOnlyChangedFields: the editor holds the type's mutable
// fields with the subject's values; ctrl+s sends the fields changed, and
// only them.
func TestModifySendsOnlyChangedFields(t *testing.T) {
	src := &fakeSource{gates: []highway.Gate{gate(1, "G1", highway.TaskApproval, taskSubject, false)}}
	h := newHarness(t, src, 100, 30)
	h.keys("m")
	want := "{\n  \"name\": \"the thing\",\n  \"description\": \"build it\",\n  \"priority\": \"normal\",\n  \"resource_estimate\": null\n}"
	if got := h.m.editor.Value(); got != want {
		t.Fatalf("the editor holds\n%s\nwant\n%s", got, want)
	}
	h.mustShow("modify gate G1 (task_approval)", `"priority": "normal",`, "ctrl+s send")
	// Typed as an operator does: down to the priority, to its end, erase
	// `"normal",`, type the new value.
	h.keys("down", "down", "down", "end")
	for range len(`"normal",`) {
		h.keys("backspace")
	}
	h.keys(`"urgent",`, "ctrl+s")
	got := src.calls()
	if want := []resolution{{"G1", highway.Modify, `{"priority":"urgent"}`}}; !slices.Equal(got, want) {
		t.Fatalf("ctrl+s sent %v, want %v", got, want)
	}
	h.mustShow("modified and approved gate G1 (priority)", "no gate pending")
}

// TestModifyEditor: what the editor does with an edit that changes
// nothing, is not JSON, names a field that cannot change; esc; and a gate
// type without mutable fields.
func TestModifyEditor(t *testing.T) {
	t.Run("unchanged sends nothing", func(t *testing.T) {
		src := &fakeSource{gates: []highway.Gate{gate(1, "G1", highway.TaskApproval, taskSubject, false)}}
		h := newHarness(t, src, 100, 30)
		h.keys("m", "ctrl+s")
		if got := src.calls(); len(got) != 0 {
			t.Fatalf("an unchanged edit sent %v", got)
		}
		h.mustShow("nothing changed in gate G1; nothing sent", "task_approval gate G1")
	})
	t.Run("invalid JSON keeps the editor", func(t *testing.T) {
		src := &fakeSource{gates: []highway.Gate{gate(1, "G1", highway.TaskApproval, taskSubject, false)}}
		h := newHarness(t, src, 100, 30)
		h.keys("m")
		h.m.editor.SetValue(`{"priority": "urgent"`)
		h.keys("ctrl+s")
		if got := src.calls(); len(got) != 0 {
			t.Fatalf("invalid JSON sent %v", got)
		}
		if h.m.mode != modeEdit {
			t.Fatalf("mode after invalid JSON = %v, want the editor", h.m.mode)
		}
		h.mustShow("not valid JSON", "ctrl+s send")
		// Fixing it sends it.
		h.m.editor.SetValue(`{"priority": "urgent"}`)
		h.keys("ctrl+s")
		if got, want := src.calls(), []resolution{{"G1", highway.Modify, `{"priority":"urgent"}`}}; !slices.Equal(got, want) {
			t.Fatalf("the fixed edit sent %v, want %v", got, want)
		}
	})
	t.Run("a field that cannot change", func(t *testing.T) {
		src := &fakeSource{gates: []highway.Gate{gate(1, "G1", highway.TaskApproval, taskSubject, false)}}
		h := newHarness(t, src, 100, 30)
		h.keys("m")
		h.m.editor.SetValue(`{"priority": "urgent", "status": "pending"}`)
		h.keys("ctrl+s")
		if got := src.calls(); len(got) != 0 {
			t.Fatalf("an edit of status sent %v", got)
		}
		h.mustShow(`"status" cannot be modified in a task_approval gate`)
	})
	t.Run("esc cancels", func(t *testing.T) {
		src := &fakeSource{gates: []highway.Gate{gate(1, "G1", highway.TaskApproval, taskSubject, false)}}
		h := newHarness(t, src, 100, 30)
		h.keys("m", "x", "esc")
		if got := src.calls(); len(got) != 0 {
			t.Fatalf("esc sent %v", got)
		}
		h.mustShow("modify of gate G1 cancelled; nothing sent")
	})
	t.Run("integration cannot be modified", func(t *testing.T) {
		src := &fakeSource{gates: []highway.Gate{gate(1, "G1", highway.Integration, integrationSubject, true)}}
		h := newHarness(t, src, 100, 30)
		h.keys("m")
		if h.m.mode != modeGate {
			t.Fatalf("m on an integration gate opened mode %v", h.m.mode)
		}
		h.mustShow("gates of type integration cannot be modified")
	})
}

// TestModifications is the diff of an edit against the subject's values.
func TestModifications(t *testing.T) {
	orig := map[string]json.RawMessage{"name": json.RawMessage(`"the thing"`), "description": json.RawMessage(`"build it"`),
		"priority": json.RawMessage(`"normal"`), "resource_estimate": json.RawMessage(`null`)}
	tests := []struct {
		name, edit string
		want       string // "" when nothing changed
		fields     []string
		wantErr    string
	}{
		{"unchanged", `{"name":"the thing","description":"build it","priority":"normal","resource_estimate":null}`, "", nil, ""},
		{"unchanged, reformatted", "{ \"priority\" :\n\"normal\" }", "", nil, ""},
		{"a field left out is unchanged", `{"priority":"urgent"}`, `{"priority":"urgent"}`, []string{"priority"}, ""},
		{"two fields", `{"name":"x","priority":"urgent","description":"build it"}`, `{"name":"x","priority":"urgent"}`, []string{"name", "priority"}, ""},
		{"null to an object", `{"resource_estimate":{"tokens":10}}`, `{"resource_estimate":{"tokens":10}}`, []string{"resource_estimate"}, ""},
		{"not JSON", `{"priority":`, "", nil, "not valid JSON"},
		{"not an object", `["priority"]`, "", nil, "not valid JSON"},
		{"null", `null`, "", nil, "must be a JSON object"},
		{"runtime field", `{"id":"T2"}`, "", nil, `"id" cannot be modified`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, fields, err := modifications(highway.TaskApproval, orig, tt.edit)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("modifications(%q) error = %v, want %q", tt.edit, err, tt.wantErr)
				}
				return
			}
			if err != nil || string(got) != tt.want || !slices.Equal(fields, tt.fields) {
				t.Fatalf("modifications(%q) = %s, %v, %v; want %s, %v", tt.edit, got, fields, err, tt.want, tt.fields)
			}
		})
	}
}

// TestRefusedResolutionShown: the daemon's refusal is the result line,
// with its code, and the gate stays.
func TestRefusedResolutionShown(t *testing.T) {
	src := &fakeSource{
		gates:      []highway.Gate{gate(1, "G1", highway.TaskApproval, taskSubject, false)},
		resolveErr: errors.New("capability_denied: user operator does not hold create_workspace_any"),
	}
	h := newHarness(t, src, 100, 30)
	h.keys("y")
	h.mustShow("gate G1: approve refused: capability_denied: user operator does not hold create_workspace_any",
		"task_approval gate G1")
	if h.m.busy != "" {
		t.Fatalf("busy = %q after the answer, want none", h.m.busy)
	}
}

// TestOneAnswerAtATime: while an answer is in flight, y, n and m wait.
func TestOneAnswerAtATime(t *testing.T) {
	src := &fakeSource{gates: []highway.Gate{gate(1, "G1", highway.TaskApproval, taskSubject, false)}}
	h := newHarness(t, src, 100, 30)
	_, pending := h.m.Update(keyMsg("y")) // not run: the answer is in flight
	if pending == nil {
		t.Fatal("y returned no command")
	}
	for _, k := range []string{"y", "n", "m"} {
		if _, cmd := h.m.Update(keyMsg(k)); cmd != nil {
			t.Fatalf("%s while an answer is in flight returned a command", k)
		}
	}
	h.mustShow("still waiting for the daemon's answer about gate G1")
	// The daemon commits the answer, and its gate_resolved event comes
	// before its reply: the gate left because of the operator.
	reply := pending()
	h.send(changedMsg{})
	h.mustNotShow("no longer pending")
	h.send(reply)
	h.mustShow("approved gate G1")
	if got := src.calls(); len(got) != 1 {
		t.Fatalf("sent %v, want the one approve", got)
	}
}

// TestEmptyQueue: no gate pending says so, and the decision keys do
// nothing.
func TestEmptyQueue(t *testing.T) {
	src := &fakeSource{}
	h := newHarness(t, src, 100, 30)
	h.mustShow("0 gates pending", "no gate pending — waiting", "y approve")
	h.keys("y", "n", "m")
	if got := src.calls(); len(got) != 0 {
		t.Fatalf("keys on an empty queue sent %v", got)
	}
	h.mustShow("no gate is pending")
	// A gate event brings the next gate.
	src.set(func(f *fakeSource) { f.gates = []highway.Gate{gate(1, "G1", highway.TaskApproval, taskSubject, false)} })
	h.send(changedMsg{})
	h.mustShow("1 gate pending", "task_approval gate G1")
}

// TestResize: at any size the screen fits the window, starts with the
// header and ends with the keys; a long subject is cut, and a larger
// window shows more of it.
func TestResize(t *testing.T) {
	long := `{"description":"` + strings.Repeat("word ", 600) + `","blob":"` + strings.Repeat("x", 700) +
		`","name":"long","priority":"normal"}`
	src := &fakeSource{gates: []highway.Gate{gate(1, "G1", highway.TaskApproval, long, true)}}
	h := newHarness(t, src, 100, 30)
	shown := map[int]int{}
	for _, size := range [][2]int{{100, 30}, {40, 12}, {24, 10}, {60, 40}, {200, 50}} {
		w, ht := size[0], size[1]
		h.send(teaSize(w, ht))
		lines := strings.Split(h.view(), "\n")
		if len(lines) != ht {
			t.Errorf("at %dx%d the screen has %d lines", w, ht, len(lines))
		}
		for i, l := range lines {
			if lipgloss.Width(l) > w {
				t.Errorf("at %dx%d line %d is %d cells wide: %q", w, ht, i, lipgloss.Width(l), l)
			}
		}
		if !strings.HasPrefix(lines[0], "WACP") {
			t.Errorf("at %dx%d the first line is %q, want the header", w, ht, lines[0])
		}
		if tail := strings.Join(lines[len(lines)-3:], " "); !strings.Contains(tail, "quit") {
			t.Errorf("at %dx%d the last lines do not show the keys: %q", w, ht, tail)
		}
		shown[w*1000+ht] = strings.Count(h.view(), "word")
	}
	if shown[60040] <= shown[40012] {
		t.Errorf("a 60x40 window shows %d words of the description, 40x12 %d: want more", shown[60040], shown[40012])
	}
	h.send(teaSize(100, 30))
	h.mustShow("more lines (d shows")
	// d shows all of it, scrollable.
	h.keys("d")
	h.mustShow("gate G1 in full", "digest")
	for range 200 {
		h.keys("down")
	}
	h.mustShow(`"priority": "normal"`)
}

// TestReconnecting: a broken feed, or a failed read, says the daemon is
// unreachable; a failed read is tried again every retryEvery until it
// works, and the daemon is connected again once the feed follows again.
func TestReconnecting(t *testing.T) {
	src := &fakeSource{gates: []highway.Gate{gate(1, "G1", highway.TaskApproval, taskSubject, false)}}
	h := newHarness(t, src, 100, 30)
	h.mustShow("● connected")
	src.set(func(f *fakeSource) { f.queueErr = errors.New("client: daemon unreachable: no reply in time") })
	h.send(feedDownMsg{err: errors.New("the daemon does not answer")})
	h.mustShow("daemon unreachable, reconnecting…", "the queue as last read; last error: client: daemon unreachable: no reply in time",
		"task_approval gate G1")
	for i := range 3 {
		if n := h.pendingTimers(retryMsg{}); n != 1 {
			t.Fatalf("round %d: %d retries scheduled, want 1", i, n)
		}
		h.fire(retryMsg{})
		h.mustShow("daemon unreachable, reconnecting…", "no reply in time")
	}
	// The queue can be read again: it is shown, but until the feed
	// follows again the daemon is not called connected.
	src.set(func(f *fakeSource) {
		f.queueErr = nil
		f.gates = append(f.gates, gate(2, "G2", highway.TaskApproval, taskSubject, false))
	})
	h.fire(retryMsg{})
	h.mustShow("2 gates pending", "daemon unreachable, reconnecting…", "last error: the daemon does not answer")
	if n := h.pendingTimers(retryMsg{}); n != 0 {
		t.Fatalf("%d retries scheduled once the queue was read, want none", n)
	}
	h.send(changedMsg{}) // the feed follows again
	h.mustShow("● connected", "2 gates pending")
	h.mustNotShow("unreachable")
}

// TestChangesCoalesce: gate events during a read of the queue cause one
// more read, not one each.
func TestChangesCoalesce(t *testing.T) {
	src := &fakeSource{}
	h := newHarness(t, src, 100, 30)
	before := src.queueCalls
	_, first := h.m.Update(changedMsg{})
	for range 5 {
		if _, cmd := h.m.Update(changedMsg{}); cmd != nil {
			t.Fatal("a change during a read started another read")
		}
	}
	h.run(first)
	if got := src.queueCalls - before; got != 2 {
		t.Fatalf("six changes read the queue %d times, want 2", got)
	}
}

// TestPagers: d, i and ? show the detail, the context and the keys; esc
// goes back.
func TestPagers(t *testing.T) {
	src := &fakeSource{
		gates:   []highway.Gate{gate(1, "G1", highway.TaskApproval, taskSubject, false)},
		inspect: []string{"workspace   W1", "chain head  C1", "  entry \x1b[2Jcleared", "c1 \u009b2J bidi \u202eevil"},
	}
	h := newHarness(t, src, 100, 30)
	h.keys("d")
	h.mustShow("gate G1 in full", "sha256:abab", "name, description, priority, resource_estimate", `"name": "the thing"`)
	h.keys("esc", "i")
	h.mustShow("context of gate G1", "workspace   W1", "chain head  C1", `entry \u001b[2Jcleared`, `c1 \u009b2J bidi \u202eevil`)
	h.mustNotShow("\x1b", "\u009b", "\u202e")
	h.keys("esc", "?")
	h.mustShow("press Y (shift+y) to confirm", "ctrl+s sends only the fields changed")
	h.keys("esc")
	h.mustShow("task_approval gate G1")
	src.set(func(f *fakeSource) { f.inspectErr = errors.New("permission_denied: no") })
	h.keys("i")
	h.mustShow("could not read the context of gate G1", "permission_denied: no")
	h.keys("q")
	if !h.quit {
		t.Fatal("q did not quit")
	}
}

// TestGateLeftElsewhere: a gate that leaves the screen without the
// operator (its deadline passed, another operator answered) is said to
// have; one they answered is not.
func TestGateLeftElsewhere(t *testing.T) {
	src := &fakeSource{gates: []highway.Gate{
		gate(1, "G1", highway.TaskApproval, taskSubject, false),
		gate(2, "G2", highway.TaskApproval, taskSubject, false),
		gate(3, "G3", highway.TaskApproval, taskSubject, false),
	}}
	h := newHarness(t, src, 100, 30)
	src.set(func(f *fakeSource) { f.gates = f.gates[1:] })
	h.send(changedMsg{})
	h.mustShow("gate G1 is no longer pending: resolved elsewhere or timed out", "task_approval gate G2")
	h.keys("y")
	h.send(changedMsg{})
	h.mustShow("approved gate G2", "task_approval gate G3")
	h.mustNotShow("G2 is no longer pending")
	// G3 times out as the operator answers: the daemon's refusal stays
	// on the result line.
	src.set(func(f *fakeSource) {
		f.gates = nil
		f.resolveErr = errors.New("invalid_transition: gate G3 is resolved")
	})
	h.keys("n")
	h.mustShow("gate G3: reject refused: invalid_transition: gate G3 is resolved", "no gate pending")
}

// TestTinyWindow: however small the window, in every mode, the screen
// fits it.
func TestTinyWindow(t *testing.T) {
	src := &fakeSource{gates: []highway.Gate{gate(1, "G1", highway.TaskApproval, taskSubject, true)}, inspect: []string{"workspace   W1"}}
	for _, keys := range [][]string{nil, {"m"}, {"d"}, {"i"}, {"?"}, {"y"}} {
		h := newHarness(t, src, 100, 30)
		h.keys(keys...)
		for _, size := range [][2]int{{12, 5}, {3, 2}, {1, 1}, {80, 3}} {
			h.send(teaSize(size[0], size[1]))
			lines := strings.Split(h.view(), "\n")
			if len(lines) > size[1] {
				t.Errorf("keys %q at %dx%d: %d lines", keys, size[0], size[1], len(lines))
			}
			for i, l := range lines {
				if lipgloss.Width(l) > size[0] {
					t.Errorf("keys %q at %dx%d: line %d is %d cells wide: %q", keys, size[0], size[1], i, lipgloss.Width(l), l)
				}
			}
		}
	}
}
