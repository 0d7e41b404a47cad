package runtime_test

import (
	"strings"
	"testing"

	"github.com/wacpd/wacpd/taxonomy"
)

// TestAuthz sends every request of the authorization table with every
// principal's own NATS connection and checks the answer against the table
// (docs/security.md). Each cell gets a fresh fixture, so state-changing
// requests do not affect each other. A request that is refused must leave W
// unchanged.
func TestAuthz(t *testing.T) {
	w := newAuthzWorld(t)
	for _, row := range authzRows {
		t.Run(row.name, func(t *testing.T) {
			for i, col := range authzColumns {
				t.Run(col, func(t *testing.T) {
					got, detail := w.cell(t, row, col)
					if want := row.want[i]; got != want {
						t.Errorf("%s by %s = %s, want %s\n%s", row.name, col, got, want, detail)
					}
				})
			}
		})
	}
}

// TestAuthzSubjects tries every action of the subjects table (deliveries,
// reply inboxes, JetStream, the micro service) as every principal and checks
// the answer against the table (docs/security.md).
func TestAuthzSubjects(t *testing.T) {
	w := newAuthzWorld(t)
	for _, row := range subjectRows {
		t.Run(row.name, func(t *testing.T) {
			for i, col := range authzColumns {
				t.Run(col, func(t *testing.T) {
					got, detail := w.subjectCell(t, row, col)
					if want := row.want[i]; got != want {
						t.Errorf("%s (%s %s) by %s = %s, want %s\n%s", row.name, row.action, row.subject, col, got, want, detail)
					}
				})
			}
		})
	}
}

// cell runs one request of row as the principal of column col on a fresh
// fixture and returns the answer.
func (w *authzWorld) cell(t *testing.T, row authzRow, col string) (answer, detail string) {
	switch col {
	case "no token":
		return probe(t, w.url, "", row.subject(w.root), row.body)
	case "bad token":
		return probe(t, w.url, randomToken(t), row.subject(w.root), row.body)
	}
	f := w.fixture(t, row.state)
	token, ws := w.principal(t, f, col)
	head := "null"
	if ws == f.W.id {
		head = `"` + f.cp + `"`
	}
	body := strings.NewReplacer("$W", f.W.id, "$D", f.D.id, "$CP", f.cp, "$HEAD", head).Replace(row.body)
	before := w.stateOf(t, f.W.id)
	answer, detail = probe(t, w.url, token, row.subject(ws), body)
	if answer != ok && answer != empty {
		if after := w.stateOf(t, f.W.id); after != before {
			t.Errorf("%s by %s was refused (%s) but changed W from %+v to %+v", row.name, col, answer, before, after)
		}
	}
	return answer, detail
}

// subjectCell runs the action of row as the principal of column col on a
// fresh fixture and returns the answer.
func (w *authzWorld) subjectCell(t *testing.T, row subjectRow, col string) (answer, detail string) {
	var token, ws string
	r := strings.NewReplacer("<ws>", w.root)
	switch col {
	case "no token":
	case "bad token":
		token = randomToken(t)
	default:
		f := w.fixture(t, stActive)
		token, ws = w.principal(t, f, col)
		r = strings.NewReplacer("<ws>", ws, "<W>", f.W.id, "<D>", f.D.id, "<W inbox>", taxonomy.InboxPrefix(f.W.token))
	}
	subject, body := r.Replace(row.subject), r.Replace(row.body)
	switch row.action {
	case actSubscribe:
		return probeSubscribe(t, w.url, token, subject)
	case actPublish:
		return probePublish(t, w.url, token, subject, body)
	}
	return probe(t, w.url, token, subject, body)
}

// principal returns the token of column col and the workspace it acts on.
func (w *authzWorld) principal(t *testing.T, f *authzFixture, col string) (token, ws string) {
	switch col {
	case "coordinator":
		token, ws = w.adminToken, w.root
	case "delegate":
		token, ws = f.D.token, f.D.id
	case "worker":
		token, ws = f.W.token, f.W.id
	case "observer":
		token, ws = f.O.token, f.O.id
	case "other worker":
		token, ws = f.X.token, f.X.id
	case "other worker as W":
		token, ws = f.X.token, f.W.id
	case "user":
		token, ws = w.user, f.W.id
	case "auditor":
		token, ws = w.auditor, f.W.id
	default:
		t.Fatalf("unknown column %q", col)
	}
	return token, ws
}
