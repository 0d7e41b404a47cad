package workspace_test

import (
	"errors"
	"testing"
	"time"

	"github.com/wacpd/wacpd/workspace"
)

func TestLivenessDue(t *testing.T) {
	const t0 = "2026-01-01T00:00:00.000000000Z"
	at, _ := time.Parse(time.RFC3339Nano, t0)
	ws := func(state workspace.State, iv string, l workspace.Liveness) *workspace.Workspace {
		return &workspace.Workspace{ID: "w", State: state, LivenessInterval: iv, Liveness: l}
	}
	tests := []struct {
		name         string
		w            *workspace.Workspace
		head         string
		now          time.Time
		wantDue      bool
		wantActivity string
	}{
		{"no interval", ws(workspace.Active, "", workspace.Liveness{}), "e1", at.Add(time.Hour), false, ""},
		{"within the interval", ws(workspace.Active, "1m", workspace.Liveness{}), "e1", at.Add(59 * time.Second), false, ""},
		{"interval ran out", ws(workspace.Active, "1m", workspace.Liveness{}), "e1", at.Add(time.Minute), true, t0},
		{"blocked too", ws(workspace.Blocked, "1m", workspace.Liveness{}), "e1", at.Add(time.Minute), true, t0},
		{"idle is not watched", ws(workspace.Idle, "1m", workspace.Liveness{}), "e1", at.Add(time.Hour), false, ""},
		{"suspended is not watched", ws(workspace.Suspended, "1m", workspace.Liveness{}), "e1", at.Add(time.Hour), false, ""},
		{"integrating is not watched", ws(workspace.Integrating, "1m", workspace.Liveness{}), "e1", at.Add(time.Hour), false, ""},
		{"failed is not watched", ws(workspace.Failed, "1m", workspace.Liveness{}), "e1", at.Add(time.Hour), false, ""},
		{"silence goes on: the first activity stays", ws(workspace.Active, "1m", workspace.Liveness{Warning: "e2", Since: "earlier"}), "e2", at.Add(time.Minute), true, "earlier"},
		{"activity since the warning", ws(workspace.Active, "1m", workspace.Liveness{Warning: "e2", Since: "earlier"}), "e3", at.Add(time.Minute), true, t0},
		{"no trail", ws(workspace.Active, "1m", workspace.Liveness{}), "", at.Add(time.Hour), false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			due, act := workspace.LivenessDue(tt.w, tt.head, t0, tt.now)
			if due != tt.wantDue || act != tt.wantActivity {
				t.Errorf("LivenessDue = %v, %q, want %v, %q", due, act, tt.wantDue, tt.wantActivity)
			}
		})
	}
}

func TestParseGraceRequest(t *testing.T) {
	tests := []struct {
		name, format, content string
		wantOK                bool
		wantErr               bool
		wantPeriod            time.Duration
		wantReason            string
	}{
		{"markdown is plain feedback", "markdown", `{"intent":"graceful_termination","grace_period":"1m"}`, false, false, 0, ""},
		{"json of another intent", "json", `{"intent":"hint"}`, false, false, 0, ""},
		{"json array", "json", `[1]`, false, false, 0, ""},
		{"not json", "json", `{oops`, false, false, 0, ""},
		{"request", "json", `{"intent":"graceful_termination","grace_period":"30s","reason":"drain","extra":1}`, true, false, 30 * time.Second, "drain"},
		{"no reason", "json", ` {"intent":"graceful_termination","grace_period":"2m"}`, true, false, 2 * time.Minute, ""},
		{"no grace_period", "json", `{"intent":"graceful_termination"}`, true, true, 0, ""},
		{"grace_period a number", "json", `{"intent":"graceful_termination","grace_period":30}`, true, true, 0, ""},
		{"grace_period zero", "json", `{"intent":"graceful_termination","grace_period":"0s"}`, true, true, 0, ""},
		{"grace_period negative", "json", `{"intent":"graceful_termination","grace_period":"-1s"}`, true, true, 0, ""},
		{"grace_period words", "json", `{"intent":"graceful_termination","grace_period":"soon"}`, true, true, 0, ""},
		{"reason not a string", "json", `{"intent":"graceful_termination","grace_period":"1s","reason":[]}`, true, true, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, period, ok, err := workspace.ParseGraceRequest(tt.format, tt.content)
			if ok != tt.wantOK || (err != nil) != tt.wantErr {
				t.Fatalf("ParseGraceRequest(%q, %q) = ok %v, err %v, want ok %v, err %v", tt.format, tt.content, ok, err, tt.wantOK, tt.wantErr)
			}
			if err != nil && !errors.Is(err, workspace.ErrInvalidRequest) {
				t.Errorf("error %v does not wrap ErrInvalidRequest", err)
			}
			if err == nil && (period != tt.wantPeriod || req.Reason != tt.wantReason) {
				t.Errorf("ParseGraceRequest = %v, %q, want %v, %q", period, req.Reason, tt.wantPeriod, tt.wantReason)
			}
		})
	}
}

func FuzzParseGraceRequest(f *testing.F) {
	f.Add("json", `{"intent":"graceful_termination","grace_period":"30s","reason":"drain"}`)
	f.Add("json", `{"intent":"graceful_termination","grace_period":30}`)
	f.Add("markdown", "wrap up")
	f.Add("json", `{"intent":"graceful_termination","grace_period":"-1h"}`)
	f.Fuzz(func(t *testing.T, format, content string) {
		req, period, ok, err := workspace.ParseGraceRequest(format, content)
		if !ok && (err != nil || period != 0) {
			t.Fatalf("not a request, yet err %v, period %v", err, period)
		}
		if ok && err == nil {
			if period <= 0 || req.Intent != workspace.IntentGracefulTermination {
				t.Fatalf("accepted %q with period %v intent %q", content, period, req.Intent)
			}
			if d, perr := time.ParseDuration(req.GracePeriod); perr != nil || d != period {
				t.Fatalf("GracePeriod %q does not parse to %v", req.GracePeriod, period)
			}
		}
	})
}

func TestGraceRunOut(t *testing.T) {
	const deadline = "2026-01-01T00:01:00.000000000Z"
	d, _ := time.Parse(time.RFC3339Nano, deadline)
	for _, tt := range []struct {
		state workspace.State
		now   time.Time
		want  bool
	}{
		{workspace.Active, d.Add(-time.Nanosecond), false},
		{workspace.Active, d, true},
		{workspace.Blocked, d.Add(time.Hour), true},
		{workspace.Integrating, d.Add(time.Hour), false}, // complete came in time
		{workspace.Suspended, d.Add(time.Hour), false},   // fails once back
		{workspace.Failed, d.Add(time.Hour), false},
	} {
		w := &workspace.Workspace{State: tt.state, Grace: workspace.Grace{Deadline: deadline}}
		if got := workspace.GraceRunOut(w, tt.now); got != tt.want {
			t.Errorf("GraceRunOut(%s, %v) = %v, want %v", tt.state, tt.now, got, tt.want)
		}
	}
	if workspace.GraceRunOut(&workspace.Workspace{State: workspace.Active}, d) {
		t.Error("GraceRunOut without a grace period = true")
	}
}
