package daemon_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/wacpd/wacpd/daemon"
)

// securityDoc holds the tables authz_table_test.go mirrors.
const securityDoc = "../docs/security.md"

// The headings of the four tables in securityDoc.
const (
	headEndpointRequests = "### Endpoint requests"
	headEndpointAnswers  = "### Endpoint answers"
	headSubjectActions   = "### Subject actions"
	headSubjectAnswers   = "### Subject answers"
)

// TestAuthzDocMatchesTable checks that the tables of docs/security.md are
// exactly authzRows and subjectRows: the same requests, in the same order,
// with the same answers, so the document says what TestAuthz checks.
func TestAuthzDocMatchesTable(t *testing.T) {
	doc := readSecurityDoc(t)
	var want [][]string
	for _, r := range authzRows {
		want = append(want, []string{r.name, r.docSubject(), r.body, r.state})
	}
	compareTable(t, doc, headEndpointRequests, []string{"request", "subject", "body", "W is"}, want)

	want = nil
	for _, r := range authzRows {
		want = append(want, append([]string{r.name}, r.want...))
	}
	compareTable(t, doc, headEndpointAnswers, append([]string{"request"}, authzColumns...), want)

	want = nil
	for _, r := range subjectRows {
		want = append(want, []string{r.name, r.action, r.subject, r.body})
	}
	compareTable(t, doc, headSubjectActions, []string{"what", "action", "subject", "body"}, want)

	want = nil
	for _, r := range subjectRows {
		want = append(want, append([]string{r.name}, r.want...))
	}
	compareTable(t, doc, headSubjectAnswers, append([]string{"what"}, authzColumns...), want)
}

// TestAuthzDocCoversEveryEndpoint checks that every endpoint the daemon
// serves has at least one row in the authorization table.
func TestAuthzDocCoversEveryEndpoint(t *testing.T) {
	have := map[string]bool{}
	for _, r := range authzRows {
		have[r.docSubject()] = true
	}
	for _, s := range daemon.DocSubjects() {
		if !have[s] {
			t.Errorf("endpoint %s has no row in the authorization table", s)
		}
	}
}

func readSecurityDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(securityDoc)
	if err != nil {
		t.Fatalf("read %s: %v", securityDoc, err)
	}
	return string(b)
}

// compareTable checks the table under heading in doc against header and
// rows.
func compareTable(t *testing.T, doc, heading string, header []string, rows [][]string) {
	t.Helper()
	gotHeader, gotRows := docTable(t, doc, heading)
	if !slices.Equal(gotHeader, header) {
		t.Errorf("%s: header = %q, want %q", heading, gotHeader, header)
		return
	}
	for i := range max(len(gotRows), len(rows)) {
		switch {
		case i >= len(gotRows):
			t.Errorf("%s: row %d missing, want %q", heading, i+1, rows[i])
		case i >= len(rows):
			t.Errorf("%s: row %d = %q, which the Go table does not have", heading, i+1, gotRows[i])
		case !slices.Equal(gotRows[i], rows[i]):
			t.Errorf("%s: row %d = %q, want %q", heading, i+1, gotRows[i], rows[i])
		}
	}
}

// docTable returns the header and rows of the first markdown table after
// the line heading, with each cell trimmed of spaces and of one pair of
// enclosing backticks.
func docTable(t *testing.T, doc, heading string) (header []string, rows [][]string) {
	t.Helper()
	lines := strings.Split(doc, "\n")
	i := slices.Index(lines, heading)
	if i < 0 {
		t.Fatalf("%s has no line %q", securityDoc, heading)
	}
	for i++; i < len(lines) && !strings.HasPrefix(lines[i], "|"); i++ {
		if strings.HasPrefix(lines[i], "#") {
			t.Fatalf("%s: no table under %q", securityDoc, heading)
		}
	}
	for ; i < len(lines) && strings.HasPrefix(lines[i], "|"); i++ {
		cells := strings.Split(strings.Trim(strings.TrimSpace(lines[i]), "|"), "|")
		for j, c := range cells {
			c = strings.TrimSpace(c)
			if len(c) >= 2 && c[0] == '`' && c[len(c)-1] == '`' {
				c = c[1 : len(c)-1]
			}
			cells[j] = c
		}
		switch {
		case header == nil:
			header = cells
		case strings.Trim(strings.Join(cells, ""), "-: ") == "": // the separator line
		default:
			rows = append(rows, cells)
		}
	}
	return header, rows
}
