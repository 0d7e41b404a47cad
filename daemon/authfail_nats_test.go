package daemon_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/wacpd/wacpd/daemon"

	"github.com/nats-io/nats.go"

	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/internal/daemontest"
)

// TestAuthenticationFailedFloodIsAggregated: a client that connects with a
// bad token over and over cannot make the daemon write one trail entry per
// attempt. Refusals are counted per source and written about once a
// second; every one of them is in some entry's count, none silent.
func TestAuthenticationFailedFloodIsAggregated(t *testing.T) {
	d := daemontest.Start(t, daemon.Config{})
	const attempts = 150
	start := time.Now()
	for range attempts {
		nc, err := nats.Connect(d.URL, nats.Token("not-a-token"), nats.NoReconnect(), nats.MaxReconnects(0))
		if err == nil {
			nc.Close()
			t.Fatal("a bad token was admitted")
		}
	}
	elapsed := time.Since(start)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	coord, err := client.Dial(ctx, client.Options{DataDir: d.Dir})
	if err != nil {
		t.Fatal(err)
	}
	defer coord.Close()
	var entries, counted int
	for {
		page, err := coord.ReadTrail(ctx, client.TrailQuery{EventType: "authentication_failed", Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		entries, counted = len(page.Entries), 0
		for _, e := range page.Entries {
			var body struct {
				Source string `json:"source"`
				Count  int    `json:"count"`
				Window string `json:"window"`
			}
			if err := json.Unmarshal(e.Body, &body); err != nil {
				t.Fatal(err)
			}
			if body.Source != "127.0.0.1" || body.Window != "1s" || body.Count < 1 {
				t.Fatalf("entry body %s, want source 127.0.0.1, a count and the window", e.Body)
			}
			counted += body.Count
		}
		if counted >= attempts || ctx.Err() != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if counted != attempts {
		t.Fatalf("entries count %d refusals, want all %d", counted, attempts)
	}
	// One entry per window at most, plus the first at once.
	if limit := int(elapsed/time.Second) + 3; entries > limit {
		t.Fatalf("%d authentication_failed entries for %d refusals in %v, want at most %d", entries, attempts, elapsed, limit)
	}
}

// TestAuthenticationSucceededOncePerRun: User spec §3.3: a user's accepted
// token writes authentication_succeeded (user_id, method token), once per
// user per daemon run however often it connects; after a restart, once
// again. Stopping the daemon writes what is noted (no waiting on timing).
func TestAuthenticationSucceededOncePerRun(t *testing.T) {
	d := daemontest.Start(t, daemon.Config{})
	dir := d.Dir
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	coord, err := client.Dial(ctx, client.Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := coord.CreateToken(ctx, "user", "bob")
	if err != nil {
		t.Fatal(err)
	}
	audTok, err := coord.CreateToken(ctx, "auditor", "carol")
	if err != nil {
		t.Fatal(err)
	}
	coord.Close()
	connect := func(url, token string) {
		t.Helper()
		nc, err := nats.Connect(url, nats.Token(token), nats.NoReconnect())
		if err != nil {
			t.Fatal(err)
		}
		nc.Close()
	}
	succeeded := func() []map[string]any {
		t.Helper()
		d.Stop() // writes what the recorder noted
		d = daemontest.Start(t, daemon.Config{DataDir: dir})
		coord, err := client.Dial(ctx, client.Options{DataDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		defer coord.Close()
		page, err := coord.ReadTrail(ctx, client.TrailQuery{EventType: "authentication_succeeded", Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		var out []map[string]any
		for _, e := range page.Entries {
			var b map[string]any
			if err := json.Unmarshal(e.Body, &b); err != nil {
				t.Fatal(err)
			}
			out = append(out, b)
		}
		return out
	}
	for range 3 {
		connect(d.URL, tok)
	}
	connect(d.URL, audTok) // an auditor is no user: nothing
	got := succeeded()
	if len(got) != 1 || got[0]["user_id"] != "bob" || got[0]["method"] != "token" || got[0]["timestamp"] == nil {
		t.Fatalf("authentication_succeeded after three connections = %v, want one for bob by token", got)
	}
	connect(d.URL, tok)
	if got := succeeded(); len(got) != 2 {
		t.Errorf("after a restart and one more connection: %d entries, want 2", len(got))
	}
}
