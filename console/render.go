package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
)

// pageNames are the templates/<name>.html pages; each is parsed with
// layout.html.
var pageNames = []string{"login", "tree", "chain", "checkpoint", "trail", "queue", "confirm", "audit", "error"}

var funcs = template.FuncMap{
	"pretty": pretty,
	"short": func(s string) string {
		if len(s) > 20 {
			return s[:20] + "…"
		}
		return s
	},
}

func parsePages() (map[string]*template.Template, error) {
	pages := map[string]*template.Template{}
	for _, name := range pageNames {
		t, err := template.New(name).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("console: parse page %s: %w", name, err)
		}
		pages[name] = t
	}
	return pages, nil
}

// pageData is what the layout renders around a page.
type pageData struct {
	Title string
	Nav   string
	Who   *Identity // nil when logged out
	CSRF  string
	Data  any
}

// IsUser reports whether the page is a user's (the layout shows the
// queue).
func (p pageData) IsUser() bool { return p.Who != nil && p.Who.Kind == KindUser }

// render writes page name with data; the layout shows v's identity and
// CSRF token.
func (c *Console) render(w http.ResponseWriter, r *http.Request, v *visit, status int, name, title string, data any) {
	pd := pageData{Title: title, Nav: name, Data: data}
	if v != nil {
		pd.Who, pd.CSRF = &v.who, v.ss.csrf
	}
	var buf bytes.Buffer
	if err := c.pages[name].ExecuteTemplate(&buf, "layout", pd); err != nil {
		c.cfg.Logger.Error("console: render", "page", name, "err", err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// errorData is the error page's.
type errorData struct {
	Status  int
	Message string
	Code    string // the wire code of a refusal
}

// fail renders the error page.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, v *visit, status int, msg string) {
	c.render(w, r, v, status, "error", http.StatusText(status), errorData{Status: status, Message: msg})
}

// failErr renders err: a refusal with its code and status, anything else
// as an internal error (logged).
func (c *Console) failErr(w http.ResponseWriter, r *http.Request, v *visit, what string, err error) {
	if f, ok := err.(*Refusal); ok {
		status := f.Status
		if status < 400 || status > 599 {
			status = http.StatusBadRequest
		}
		c.render(w, r, v, status, "error", http.StatusText(status), errorData{Status: status, Code: f.Code, Message: what + ": " + f.Message})
		return
	}
	c.cfg.Logger.Error("console: "+what, "err", err)
	c.fail(w, r, v, http.StatusInternalServerError, what+": the daemon's log has the details")
}

// pretty indents JSON as the daemon sent it (members in its order); text
// that is not JSON is shown as it is.
func pretty(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return string(raw)
	}
	return b.String()
}
