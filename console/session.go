package console

import (
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// cookieName is the session cookie's name. Its value is a random session
// id; the token stays on the server.
const cookieName = "wacp_console"

// session is one login: the token it was made with (server-side only),
// its CSRF token, and when it was made and last used.
type session struct {
	id      string
	token   string
	csrf    string
	created time.Time
	seen    time.Time
}

// sessions holds the logins.
type sessions struct {
	cfg  Config
	mu   sync.Mutex // guards byID
	byID map[string]*session
}

func newSessions(cfg Config) *sessions {
	return &sessions{cfg: cfg, byID: map[string]*session{}}
}

// randomID returns 32 random bytes, base64url.
func randomID(r io.Reader) (string, error) {
	var b [32]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return "", fmt.Errorf("console: read entropy: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// create starts a session for token, ending the least recently used one
// when MaxSessions are held.
func (s *sessions) create(token string) (*session, error) {
	id, err := randomID(s.cfg.Entropy)
	if err != nil {
		return nil, err
	}
	csrf, err := randomID(s.cfg.Entropy)
	if err != nil {
		return nil, err
	}
	now := s.cfg.Clock()
	ss := &session{id: id, token: token, csrf: csrf, created: now, seen: now}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweepLocked(now)
	if len(s.byID) >= s.cfg.MaxSessions {
		var oldest *session
		for _, x := range s.byID {
			if oldest == nil || x.seen.Before(oldest.seen) {
				oldest = x
			}
		}
		delete(s.byID, oldest.id)
	}
	s.byID[id] = ss
	return ss, nil
}

// get returns the live session id and marks it used; an expired one is
// ended.
func (s *sessions) get(id string) (*session, bool) {
	now := s.cfg.Clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.byID[id]
	if !ok {
		return nil, false
	}
	if s.expiredLocked(ss, now) {
		delete(s.byID, id)
		return nil, false
	}
	ss.seen = now
	c := *ss
	return &c, true
}

// end ends session id.
func (s *sessions) end(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byID, id)
}

// live counts the sessions held.
func (s *sessions) live() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byID)
}

func (s *sessions) expiredLocked(ss *session, now time.Time) bool {
	return now.Sub(ss.seen) > s.cfg.IdleTimeout || now.Sub(ss.created) > s.cfg.MaxAge
}

func (s *sessions) sweepLocked(now time.Time) {
	for id, ss := range s.byID {
		if s.expiredLocked(ss, now) {
			delete(s.byID, id)
		}
	}
}

// setCookie sends the session cookie: HttpOnly, SameSite=Strict, Secure
// when the request came over TLS, for the whole site.
func setCookie(w http.ResponseWriter, r *http.Request, id string) {
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: id, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
}

// clearCookie removes the session cookie.
func clearCookie(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/", MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
}

// validCSRF reports whether form's csrf field is the session's token.
func validCSRF(ss *session, got string) bool {
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(ss.csrf)) == 1
}
