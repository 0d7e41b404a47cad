package runtime_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/wacpd/wacpd/runtime"
)

// TestAgentCannotActForAnotherWorkspaceViaReplySubject checks wire-v1 §2 (an
// agent publishes only to its own workspace's subjects; identity never
// comes from anything the client chose) against reflection: a client names
// another workspace's endpoint as the reply subject of something the daemon
// or the server answers, so that the answer arrives there as a request. On
// the embedded server the subject is the caller's identity, so such a
// message must be dropped, not served as W: it would consume W's inbox or
// write rejection entries in W's trail.
func TestAgentCannotActForAnotherWorkspaceViaReplySubject(t *testing.T) {
	tap := newDropTap()
	w := newAuthzWorldCfg(t, runtime.Config{Logger: slog.New(tap)})
	tests := []struct {
		name   string
		target string // the op on W the reflected message lands on
		// sent is the subject of the message the daemon must drop: the
		// request X sends (when the daemon itself would answer it) or the
		// reflection on W's subject.
		sent bool
		send func(t *testing.T, nc *nats.Conn, x string, reply string) error
	}{
		{"daemon reply", "inbox.next", true, func(t *testing.T, nc *nats.Conn, x, reply string) error {
			// X's inbox is empty, so the daemon would answer {}: on W's
			// inbox.next that takes W's next envelope.
			return nc.PublishRequest("wacp.v1.agent."+x+".inbox.next", reply, []byte(`{}`))
		}},
		{"service ping reply", "checkpoint", false, func(t *testing.T, nc *nats.Conn, x, reply string) error {
			return nc.PublishRequest("$SRV.PING", reply, nil)
		}},
		{"jetstream pull status", "inbox.next", false, func(t *testing.T, nc *nats.Conn, x, reply string) error {
			js, err := jetstream.New(nc)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err = js.CreateConsumer(ctx, "WACP_SIGNALS", jetstream.ConsumerConfig{
				Durable: x, FilterSubject: "wacp.v1.sig." + x + ".>", AckPolicy: jetstream.AckExplicitPolicy,
			})
			if err != nil {
				return err
			}
			// No signal waits for X: the server answers with an empty
			// "404 No Messages" status, published to reply.
			return nc.PublishRequest("$JS.API.CONSUMER.MSG.NEXT.WACP_SIGNALS."+x, reply, []byte(`{"batch":1,"no_wait":true}`))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := w.fixture(t, stActive) // W's inbox holds D's directive
			xc := w.server.dialAgent(t, f.X.token, f.X.id)
			xc.do("inbox.next", `{}`) // X's own directive: X's inbox is now empty

			target := "wacp.v1.agent." + f.W.id + "." + tt.target
			if err := tt.send(t, xc.nc, f.X.id, target); err != nil {
				t.Fatalf("send: %v", err)
			}
			if err := xc.nc.Flush(); err != nil {
				t.Fatal(err)
			}
			dropped := target
			if tt.sent {
				dropped = "wacp.v1.agent." + f.X.id + "." + tt.target
			}
			if !tap.wait(dropped, 10*time.Second) {
				t.Errorf("the daemon did not drop the message on %s", dropped)
			}

			wc := w.server.dialAgent(t, f.W.token, f.W.id)
			var env struct {
				From string `json:"from"`
			}
			wc.decode(wc.do("inbox.next", `{}`), &env)
			if env.From != f.D.id {
				t.Errorf("W's inbox.next = envelope from %q, want D's directive (%s) still there", env.From, f.D.id)
			}
			var page struct {
				Entries []json.RawMessage `json:"entries"`
			}
			w.admin.decode(w.admin.do("trail", `{"workspace":"`+f.W.id+`","event_type":"checkpoint_rejected"}`), &page)
			if len(page.Entries) != 0 {
				t.Errorf("W's trail has %d checkpoint_rejected entries, want none", len(page.Entries))
			}
		})
	}
}

// droppedRequest is the message of the daemon's log record for a dropped
// request.
const droppedRequest = "dropped a request whose reply subject is not a client inbox"

// dropTap is a slog handler that reports the subjects of the requests the
// daemon drops.
type dropTap struct{ subjects chan string }

func newDropTap() dropTap { return dropTap{subjects: make(chan string, 64)} }

func (d dropTap) Enabled(context.Context, slog.Level) bool { return true }

func (d dropTap) Handle(_ context.Context, r slog.Record) error {
	if r.Message != droppedRequest {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "subject" {
			select {
			case d.subjects <- a.Value.String():
			default:
			}
		}
		return true
	})
	return nil
}

func (d dropTap) WithAttrs([]slog.Attr) slog.Handler { return d }
func (d dropTap) WithGroup(string) slog.Handler      { return d }

// wait reports whether a request on subject is dropped within d.
func (d dropTap) wait(subject string, within time.Duration) bool {
	deadline := time.After(within)
	for {
		select {
		case s := <-d.subjects:
			if s == subject {
				return true
			}
		case <-deadline:
			return false
		}
	}
}
