package console

import (
	"net/http"
	"strings"
)

// maxForm bounds a form's body.
const maxForm = 256 << 10

// visit is one authenticated request: its session and who its token is
// now.
type visit struct {
	ss  *session
	who Identity
}

// loginMessages are the notices of /login?m=…: a fixed set, so that a
// link cannot put text of its own on the page.
var loginMessages = map[string]string{
	"ended":   "Your session has ended: the daemon no longer accepts its token (revoked, or its user or auditor was removed). Log in again with a valid token.",
	"expired": "Your session expired. Log in again.",
	"out":     "You have logged out.",
}

// kindRefusals explain why a token of another kind is refused.
var kindRefusals = map[string]string{
	"agent":       "This is a workspace agent's token. The console takes a user or auditor token (wacp token create --kind user|auditor --name NAME).",
	"coordinator": "This is the coordinator's (admin) token. The console takes a user or auditor token (wacp token create --kind user|auditor --name NAME); the admin token stays with the coordinator.",
	"tool":        "This is a tool service's token. The console takes a user or auditor token (wacp token create --kind user|auditor --name NAME).",
}

func consoleKind(k string) bool { return k == KindUser || k == KindAuditor }

func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, nil, http.StatusOK, "login", "Log in", loginData{Notice: loginMessages[r.URL.Query().Get("m")]})
}

type loginData struct {
	Notice string
	Error  string
}

// login takes a token from a POSTed form (never from the URL), and starts
// a session for a user or auditor token.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	refuse := func(status int, msg string) {
		c.render(w, r, nil, status, "login", "Log in", loginData{Error: msg})
	}
	if r.URL.Query().Has("token") {
		refuse(http.StatusBadRequest, "A token never goes in a URL: type it into the form.")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		refuse(http.StatusBadRequest, "The form could not be read.")
		return
	}
	token := strings.TrimSpace(r.PostForm.Get("token"))
	if token == "" {
		refuse(http.StatusBadRequest, "Enter a user or auditor token.")
		return
	}
	who, ok := c.cfg.Backend.Identify(token)
	if !ok {
		refuse(http.StatusUnauthorized, "The daemon does not accept this token: it is mistyped, revoked, or its principal has ended.")
		return
	}
	if !consoleKind(who.Kind) {
		msg, known := kindRefusals[who.Kind]
		if !known {
			msg = "The console takes a user or auditor token only."
		}
		refuse(http.StatusForbidden, msg)
		return
	}
	ss, err := c.sessions.create(token)
	if err != nil {
		c.cfg.Logger.Error("console: start a session", "err", err)
		refuse(http.StatusInternalServerError, "The session could not be started.")
		return
	}
	c.cfg.Logger.Info("console login", "kind", who.Kind, "name", who.Name)
	setCookie(w, r, ss.id)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request, v *visit) {
	c.sessions.end(v.ss.id)
	clearCookie(w, r)
	http.Redirect(w, r, "/login?m=out", http.StatusSeeOther)
}

// authed runs h for a request of a live session whose token still
// identifies a user or auditor; anything else goes to the login page (a
// live stream is answered 401). A POST must carry the session's CSRF
// token.
func (c *Console) authed(h func(http.ResponseWriter, *http.Request, *visit)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		away := func(m string) {
			clearCookie(w, r)
			if r.URL.Path == "/trail/events" {
				http.Error(w, "the session has ended; log in again", http.StatusUnauthorized)
				return
			}
			to := "/login"
			if m != "" {
				to += "?m=" + m
			}
			http.Redirect(w, r, to, http.StatusSeeOther)
		}
		ck, err := r.Cookie(cookieName)
		if err != nil {
			away("")
			return
		}
		ss, ok := c.sessions.get(ck.Value)
		if !ok {
			away("expired")
			return
		}
		who, ok := c.cfg.Backend.Identify(ss.token)
		if !ok || !consoleKind(who.Kind) {
			c.sessions.end(ss.id)
			away("ended")
			return
		}
		v := &visit{ss: ss, who: who}
		if r.Method == http.MethodPost {
			r.Body = http.MaxBytesReader(w, r.Body, maxForm)
			if err := r.ParseForm(); err != nil {
				c.fail(w, r, v, http.StatusBadRequest, "The form could not be read.")
				return
			}
			if !validCSRF(ss, r.PostForm.Get("csrf")) {
				c.fail(w, r, v, http.StatusForbidden, "The form's CSRF token is missing or not this session's: reload the page and try again.")
				return
			}
		}
		h(w, r, v)
	}
}
