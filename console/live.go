package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/wacpd/wacpd/trail"
)

// keepAlive is how often a quiet live stream sends a comment (and checks
// that its session still stands).
const keepAlive = 15 * time.Second

// liveEntry is a trail entry as the live stream sends it to the page.
type liveEntry struct {
	ID        string          `json:"id"`
	Timestamp string          `json:"timestamp"`
	Workspace string          `json:"workspace"`
	Actor     string          `json:"actor"`
	EventType trail.EventType `json:"event_type"`
	Body      json.RawMessage `json:"body"`
}

// events streams the trail entries committed from now on that the
// session's token may read, filtered by the query's ws, type and actor,
// as server-sent events: "entry" with a liveEntry, and "ended" (data: why)
// before the stream ends for good (the session ended, the reader lagged,
// the server is shutting down). A comment every keepAlive keeps proxies
// from closing a quiet stream.
func (c *Console) events(w http.ResponseWriter, r *http.Request, v *visit) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming is not supported here", http.StatusInternalServerError)
		return
	}
	q := trailQuery(r.URL.Query())
	if q.EventType != "" && !q.EventType.Valid() {
		http.Error(w, "type is not a trail event type", http.StatusBadRequest)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	var mu sync.Mutex // guards writes to w
	send := func(format string, args ...any) error {
		mu.Lock()
		defer mu.Unlock()
		if _, err := fmt.Fprintf(w, format, args...); err != nil {
			return err
		}
		fl.Flush()
		return nil
	}
	if err := send("retry: 3000\n: following the trail\n\n"); err != nil {
		return
	}
	ctx, cancel := context.WithCancelCause(r.Context())
	stop := context.AfterFunc(doneCtx(c.done), func() { cancel(errShutdown) })
	defer stop()
	var wg sync.WaitGroup
	defer func() { cancel(nil); wg.Wait() }() // the keep-alive writes no more once the handler returns
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(keepAlive)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if _, ok := c.sessions.get(v.ss.id); !ok {
					cancel(ErrEnded)
					return
				}
				if who, ok := c.cfg.Backend.Identify(v.ss.token); !ok || !consoleKind(who.Kind) {
					c.sessions.end(v.ss.id)
					cancel(ErrEnded)
					return
				}
				if send(": keep-alive\n\n") != nil {
					cancel(nil)
					return
				}
			}
		}
	}()
	err := c.cfg.Backend.Follow(ctx, v.ss.token, func(e trail.Entry) error {
		if (q.Workspace != "" && e.Workspace != q.Workspace) || (q.EventType != "" && e.EventType != q.EventType) ||
			(q.Actor != "" && e.Actor != q.Actor) {
			return nil
		}
		b, err := json.Marshal(liveEntry{ID: e.ID, Timestamp: e.Timestamp, Workspace: e.Workspace, Actor: e.Actor, EventType: e.EventType, Body: e.Body})
		if err != nil {
			return err
		}
		return send("id: %s\nevent: entry\ndata: %s\n\n", e.ID, b)
	})
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		err = cause
	}
	switch {
	case errors.Is(err, ErrEnded):
		c.sessions.end(v.ss.id)
		send("event: ended\ndata: the session has ended: log in again\n\n")
	case errors.Is(err, ErrLagged):
		send("event: ended\ndata: the page fell behind the trail: reload it\n\n")
	case errors.Is(err, errShutdown):
		send("event: ended\ndata: the daemon is shutting down\n\n")
	}
}

// errShutdown ends a live stream when the console closes.
var errShutdown = errors.New("console: shutting down")

// doneCtx is a context that ends when done closes.
func doneCtx(done <-chan struct{}) context.Context {
	return chanCtx(done)
}

// chanCtx adapts a channel to a context's Done.
type chanCtx <-chan struct{}

func (c chanCtx) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c chanCtx) Done() <-chan struct{}       { return c }
func (c chanCtx) Value(any) any               { return nil }
func (c chanCtx) Err() error {
	select {
	case <-c:
		return context.Canceled
	default:
		return nil
	}
}
