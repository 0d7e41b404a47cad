package envelope_test

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/wacpd/wacpd/envelope"
	"github.com/wacpd/wacpd/taxonomy"
)

// reasonOf returns the reason of a *envelope.Rejection, "" for nil, and
// fails the test for any other error.
func reasonOf(t *testing.T, err error) envelope.Reason {
	t.Helper()
	if err == nil {
		return ""
	}
	var rej *envelope.Rejection
	if !errors.As(err, &rej) {
		t.Fatalf("error %v (%T) is not a *envelope.Rejection", err, err)
	}
	if !errors.Is(err, envelope.ErrRejected) {
		t.Errorf("errors.Is(%v, ErrRejected) = false, want true", err)
	}
	return rej.Reason
}

func strPtr(s string) *string { return &s }

func TestDecodeRequest(t *testing.T) {
	tests := []struct {
		name       string
		in         string
		want       envelope.Request
		wantReason envelope.Reason
	}{
		{"defaults", `{"to":"ws-b","type":"directive","payload":{"content":"do the work"}}`,
			envelope.Request{To: "ws-b", Type: "directive", Priority: envelope.PriorityNormal,
				Payload: envelope.Payload{Format: "markdown", Content: "do the work", Attachments: []string{}}}, ""},
		{"everything set", `{"to":"ws-b","type":"feedback","priority":"blocking","in_reply_to":"env-1",
			"payload":{"format":"json","content":"{}","attachments":["cp-1","https://x"]}}`,
			envelope.Request{To: "ws-b", Type: "feedback", Priority: envelope.PriorityBlocking, InReplyTo: strPtr("env-1"),
				Payload: envelope.Payload{Format: "json", Content: "{}", Attachments: []string{"cp-1", "https://x"}}}, ""},
		{"urgent", `{"to":"a","type":"query","priority":"urgent","payload":{"content":"?"}}`,
			envelope.Request{To: "a", Type: "query", Priority: envelope.PriorityUrgent,
				Payload: envelope.Payload{Format: "markdown", Content: "?", Attachments: []string{}}}, ""},
		{"explicit normal", `{"to":"a","type":"query","priority":"normal","payload":{"content":"?"}}`,
			envelope.Request{To: "a", Type: "query", Priority: envelope.PriorityNormal,
				Payload: envelope.Payload{Format: "markdown", Content: "?", Attachments: []string{}}}, ""},
		{"null attachments and in_reply_to", `{"to":"a","type":"query","in_reply_to":null,"payload":{"content":"?","attachments":null}}`,
			envelope.Request{To: "a", Type: "query", Priority: envelope.PriorityNormal,
				Payload: envelope.Payload{Format: "markdown", Content: "?", Attachments: []string{}}}, ""},
		{"registered type is not checked here", `{"to":"a","type":"memo","payload":{"content":"x"}}`,
			envelope.Request{To: "a", Type: "memo", Priority: envelope.PriorityNormal,
				Payload: envelope.Payload{Format: "markdown", Content: "x", Attachments: []string{}}}, ""},

		{"bad priority", `{"to":"a","type":"query","priority":"high","payload":{"content":"?"}}`, envelope.Request{}, envelope.ReasonInvalidStructure},
		{"priority wrong case", `{"to":"a","type":"query","priority":"Urgent","payload":{"content":"?"}}`, envelope.Request{}, envelope.ReasonInvalidStructure},
		{"priority not a string", `{"to":"a","type":"query","priority":1,"payload":{"content":"?"}}`, envelope.Request{}, envelope.ReasonInvalidStructure},
		{"unknown field", `{"to":"a","type":"query","payload":{"content":"?"},"from":"root"}`, envelope.Request{}, envelope.ReasonInvalidStructure},
		{"runtime field status", `{"to":"a","type":"query","payload":{"content":"?"},"status":"delivered"}`, envelope.Request{}, envelope.ReasonInvalidStructure},
		{"unknown payload field", `{"to":"a","type":"query","payload":{"content":"?","size":3}}`, envelope.Request{}, envelope.ReasonInvalidStructure},
		{"missing to", `{"type":"query","payload":{"content":"?"}}`, envelope.Request{}, envelope.ReasonInvalidStructure},
		{"empty to", `{"to":"","type":"query","payload":{"content":"?"}}`, envelope.Request{}, envelope.ReasonInvalidStructure},
		{"missing type", `{"to":"a","payload":{"content":"?"}}`, envelope.Request{}, envelope.ReasonInvalidStructure},
		{"empty in_reply_to", `{"to":"a","type":"query","in_reply_to":"","payload":{"content":"?"}}`, envelope.Request{}, envelope.ReasonInvalidStructure},
		{"attachments not strings", `{"to":"a","type":"query","payload":{"content":"?","attachments":[1]}}`, envelope.Request{}, envelope.ReasonInvalidStructure},
		{"invalid UTF-8", "{\"to\":\"a\",\"type\":\"query\",\"payload\":{\"content\":\"\xc3\x28\"}}", envelope.Request{}, envelope.ReasonInvalidStructure},
		{"not an object", `"query"`, envelope.Request{}, envelope.ReasonInvalidStructure},
		{"null", `null`, envelope.Request{}, envelope.ReasonInvalidStructure},
		{"empty", ``, envelope.Request{}, envelope.ReasonInvalidStructure},
		{"trailing data", `{"to":"a","type":"query","payload":{"content":"?"}} {}`, envelope.Request{}, envelope.ReasonInvalidStructure},
		{"trailing brace", `{"to":"a","type":"query","payload":{"content":"?"}}}`, envelope.Request{}, envelope.ReasonInvalidStructure},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := envelope.DecodeRequest([]byte(tt.in))
			if r := reasonOf(t, err); r != tt.wantReason {
				t.Fatalf("DecodeRequest(%q) error = %v, want reason %q", tt.in, err, tt.wantReason)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("DecodeRequest(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
			if err == nil && got.Payload.Attachments == nil {
				t.Errorf("DecodeRequest(%q).Payload.Attachments = nil, want []", tt.in)
			}
		})
	}
}

// The tree used by the Check tests:
//
//	root (coordinator)
//	├── w1 (worker)
//	├── w2 (worker)
//	├── obs (observer)
//	└── d (worker, delegate)
//	    ├── c (worker)
//	    │   └── g (worker)
//	    └── co (observer)
var (
	root = envelope.Party{ID: "root", Role: taxonomy.RoleCoordinator, Exists: true}
	w1   = envelope.Party{ID: "w1", Role: taxonomy.RoleWorker, Parent: "root", Exists: true}
	w2   = envelope.Party{ID: "w2", Role: taxonomy.RoleWorker, Parent: "root", Exists: true}
	obs  = envelope.Party{ID: "obs", Role: taxonomy.RoleObserver, Parent: "root", Exists: true}
	d    = envelope.Party{ID: "d", Role: taxonomy.RoleWorker, Parent: "root", Delegate: true, Exists: true}
	c    = envelope.Party{ID: "c", Role: taxonomy.RoleWorker, Parent: "d", Exists: true}
	g    = envelope.Party{ID: "g", Role: taxonomy.RoleWorker, Parent: "c", Exists: true}
	co   = envelope.Party{ID: "co", Role: taxonomy.RoleObserver, Parent: "d", Exists: true}
)

func with(p envelope.Party, f func(*envelope.Party)) envelope.Party {
	f(&p)
	return p
}

func TestCheckReasons(t *testing.T) {
	missing := envelope.Party{ID: "ghost"}
	sealed := with(w1, func(p *envelope.Party) { p.Sealed = true })
	terminalTo := with(w1, func(p *envelope.Party) { p.Sealed, p.Terminal = true, true })
	terminalFrom := with(root, func(p *envelope.Party) { p.Terminal = true })
	tests := []struct {
		name     string
		from, to envelope.Party
		typ      string
		want     envelope.Reason
	}{
		{"accepted", root, w1, taxonomy.EnvelopeDirective, ""},
		{"target_not_found", root, missing, taxonomy.EnvelopeDirective, envelope.ReasonTargetNotFound},
		{"target_terminal (integrating)", root, sealed, taxonomy.EnvelopeFeedback, envelope.ReasonTargetTerminal},
		{"target_terminal (closed)", root, terminalTo, taxonomy.EnvelopeFeedback, envelope.ReasonTargetTerminal},
		{"invalid_type", root, w1, "memo", envelope.ReasonInvalidType},
		{"invalid_type empty", root, w1, "", envelope.ReasonInvalidType},
		{"invalid_type case", root, w1, "Directive", envelope.ReasonInvalidType},
		{"permission_denied", w1, root, taxonomy.EnvelopeDirective, envelope.ReasonPermissionDenied},
		{"no_send_right (grandchild)", root, c, taxonomy.EnvelopeDirective, envelope.ReasonNoSendRight},
		{"no_send_right (terminal holder)", terminalFrom, w1, taxonomy.EnvelopeDirective, envelope.ReasonNoSendRight},

		// Several checks fail: the earliest in the documented order wins.
		{"not found beats everything", with(w1, func(p *envelope.Party) { p.Terminal = true }),
			envelope.Party{ID: "ghost", Sealed: true}, "memo", envelope.ReasonTargetNotFound},
		{"terminal beats type, matrix and right", with(w1, func(p *envelope.Party) { p.Terminal = true }),
			with(w2, func(p *envelope.Party) { p.Sealed = true }), "memo", envelope.ReasonTargetTerminal},
		{"type beats matrix and right", w1, w2, "memo", envelope.ReasonInvalidType},
		{"matrix beats right", w1, w2, taxonomy.EnvelopeDirective, envelope.ReasonPermissionDenied},
		{"matrix beats terminal holder", with(w1, func(p *envelope.Party) { p.Terminal = true }), root, taxonomy.EnvelopeFeedback, envelope.ReasonPermissionDenied},
		{"right after matrix passes", root, g, taxonomy.EnvelopeFeedback, envelope.ReasonNoSendRight},
	}
	tax := taxonomy.Base()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := envelope.Check(tax, tt.from, tt.to, tt.typ)
			if got := reasonOf(t, err); got != tt.want {
				t.Errorf("Check(%s → %s → %s) = %v, want reason %q", tt.from.ID, tt.typ, tt.to.ID, err, tt.want)
			}
		})
	}
}

// TestCheckBaseMatrix runs every sender role × type × receiver role of the
// base taxonomy between a parent and its child (so the send right holds and
// only the matrix decides). Only the three base rows are allowed (Roles §6).
func TestCheckBaseMatrix(t *testing.T) {
	allowed := map[[3]string]bool{
		{taxonomy.RoleCoordinator, taxonomy.EnvelopeDirective, taxonomy.RoleWorker}: true,
		{taxonomy.RoleCoordinator, taxonomy.EnvelopeFeedback, taxonomy.RoleWorker}:  true,
		{taxonomy.RoleWorker, taxonomy.EnvelopeQuery, taxonomy.RoleCoordinator}:     true,
	}
	roles := []string{taxonomy.RoleCoordinator, taxonomy.RoleWorker, taxonomy.RoleObserver}
	types := []string{taxonomy.EnvelopeDirective, taxonomy.EnvelopeFeedback, taxonomy.EnvelopeQuery}
	tax := taxonomy.Base()
	n := 0
	for _, fromRole := range roles {
		for _, typ := range types {
			for _, toRole := range roles {
				for _, down := range []bool{true, false} {
					from := envelope.Party{ID: "from", Role: fromRole, Exists: true}
					to := envelope.Party{ID: "to", Role: toRole, Exists: true}
					if down {
						to.Parent = from.ID
					} else {
						from.Parent = to.ID
					}
					want := envelope.ReasonPermissionDenied
					if allowed[[3]string{fromRole, typ, toRole}] {
						want = ""
					}
					err := envelope.Check(tax, from, to, typ)
					if got := reasonOf(t, err); got != want {
						t.Errorf("Check(%s → %s → %s, parent-child %v) = %v, want reason %q", fromRole, typ, toRole, down, err, want)
					}
					if got := tax.CanSend(fromRole, typ, toRole); got != (want == "") {
						t.Errorf("Base().CanSend(%s, %s, %s) = %v, want %v", fromRole, typ, toRole, got, want == "")
					}
					n++
				}
			}
		}
	}
	if n != 3*3*3*2 {
		t.Errorf("checked %d combinations, want 54", n)
	}
}

func TestCheckDelegateRows(t *testing.T) {
	nonDelegate := with(d, func(p *envelope.Party) { p.Delegate = false })
	tests := []struct {
		name     string
		from, to envelope.Party
		typ      string
		want     envelope.Reason
	}{
		{"delegate directive to its child", d, c, taxonomy.EnvelopeDirective, ""},
		{"delegate feedback to its child", d, c, taxonomy.EnvelopeFeedback, ""},
		{"delegate directive to its observer child", d, co, taxonomy.EnvelopeDirective, ""},
		{"child query to its delegate", c, d, taxonomy.EnvelopeQuery, ""},
		{"observer child query to its delegate", co, d, taxonomy.EnvelopeQuery, ""},
		{"delegate query to its child", d, c, taxonomy.EnvelopeQuery, envelope.ReasonPermissionDenied},
		{"child directive to its delegate", c, d, taxonomy.EnvelopeDirective, envelope.ReasonPermissionDenied},
		{"child feedback to its delegate", c, d, taxonomy.EnvelopeFeedback, envelope.ReasonPermissionDenied},
		{"delegate directive to grandchild", d, g, taxonomy.EnvelopeDirective, envelope.ReasonPermissionDenied},
		{"grandchild query to delegate", g, d, taxonomy.EnvelopeQuery, envelope.ReasonPermissionDenied},
		{"delegate directive to sibling", d, w1, taxonomy.EnvelopeDirective, envelope.ReasonPermissionDenied},
		{"non-delegate parent directive to child", nonDelegate, c, taxonomy.EnvelopeDirective, envelope.ReasonPermissionDenied},
		{"child query to non-delegate parent", c, nonDelegate, taxonomy.EnvelopeQuery, envelope.ReasonPermissionDenied},
		{"delegate still a worker upward", d, root, taxonomy.EnvelopeQuery, ""},
		{"root directive to delegate", root, d, taxonomy.EnvelopeDirective, ""},
		{"root directive to delegate's child", root, c, taxonomy.EnvelopeDirective, envelope.ReasonNoSendRight},
		{"terminal delegate to child", with(d, func(p *envelope.Party) { p.Terminal = true }), c, taxonomy.EnvelopeDirective, envelope.ReasonNoSendRight},
	}
	tax := taxonomy.Base()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := envelope.Check(tax, tt.from, tt.to, tt.typ)
			if got := reasonOf(t, err); got != tt.want {
				t.Errorf("Check(%s → %s → %s) = %v, want reason %q", tt.from.ID, tt.typ, tt.to.ID, err, tt.want)
			}
		})
	}
}

func TestHasSendRight(t *testing.T) {
	tests := []struct {
		name     string
		from, to envelope.Party
		want     bool
	}{
		{"parent to child", root, w1, true},
		{"child to parent", w1, root, true},
		{"delegate to child", d, c, true},
		{"child to delegate", c, d, true},
		{"siblings", w1, w2, false},
		{"sibling of other role", w1, obs, false},
		{"grandparent to grandchild", root, c, false},
		{"grandchild to grandparent", c, root, false},
		{"great-grandchild", root, g, false},
		{"cousins", c, w1, false},
		{"self", w1, w1, false},
		{"terminal parent", with(root, func(p *envelope.Party) { p.Terminal = true }), w1, false},
		{"terminal child", with(w1, func(p *envelope.Party) { p.Terminal = true }), root, false},
		{"terminal receiver does not void the holder's right", root, with(w1, func(p *envelope.Party) { p.Terminal = true }), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := envelope.HasSendRight(tt.from, tt.to); got != tt.want {
				t.Errorf("HasSendRight(%s, %s) = %v, want %v", tt.from.ID, tt.to.ID, got, tt.want)
			}
		})
	}
}

func TestRank(t *testing.T) {
	if !(envelope.Rank(envelope.PriorityBlocking) < envelope.Rank(envelope.PriorityUrgent) &&
		envelope.Rank(envelope.PriorityUrgent) < envelope.Rank(envelope.PriorityNormal)) {
		t.Errorf("Rank(blocking, urgent, normal) = %d, %d, %d, want increasing",
			envelope.Rank(envelope.PriorityBlocking), envelope.Rank(envelope.PriorityUrgent), envelope.Rank(envelope.PriorityNormal))
	}
	// The rank is a byte of the inbox key e/i/<ws>/<rank><id>: frozen values.
	tests := []struct {
		priority string
		want     byte
	}{
		{envelope.PriorityBlocking, 0},
		{envelope.PriorityUrgent, 1},
		{envelope.PriorityNormal, 2},
		{"", 2},
	}
	for _, tt := range tests {
		if got := envelope.Rank(tt.priority); got != tt.want {
			t.Errorf("Rank(%q) = %d, want %d", tt.priority, got, tt.want)
		}
	}
	// Inbox order: by rank, FIFO within a rank (ids increase in arrival order).
	type item struct{ id, priority string }
	inbox := []item{{"01", "normal"}, {"02", "urgent"}, {"03", "blocking"}, {"04", "normal"}, {"05", "blocking"}, {"06", "urgent"}}
	slices.SortFunc(inbox, func(a, b item) int {
		ka := string(envelope.Rank(a.priority)) + a.id
		kb := string(envelope.Rank(b.priority)) + b.id
		return strings.Compare(ka, kb)
	})
	var got []string
	for _, it := range inbox {
		got = append(got, it.id)
	}
	if want := []string{"03", "05", "02", "06", "01", "04"}; !slices.Equal(got, want) {
		t.Errorf("inbox order = %v, want %v", got, want)
	}
}

func TestRejectionError(t *testing.T) {
	err := envelope.Check(taxonomy.Base(), root, envelope.Party{ID: "ghost"}, taxonomy.EnvelopeDirective)
	if got, want := err.Error(), "envelope: rejected (target_not_found): workspace ghost does not exist"; got != want {
		t.Errorf("Check(...).Error() = %q, want %q", got, want)
	}
}
