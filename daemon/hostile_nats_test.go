package daemon_test

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/wacpd/wacpd/daemon"
	"github.com/wacpd/wacpd/internal/daemontest"
	"github.com/wacpd/wacpd/wire"
)

// TestHostileInputOverNATS sends hostile bodies to the real daemon over
// NATS: a body between the request limit (1 MiB - 1) and the server's
// max_payload (4 MiB) arrives and gets too_large; a larger one never leaves
// the client (nats.ErrMaxPayload); deep nesting gets invalid_structure. The
// trail does not grow.
func TestHostileInputOverNATS(t *testing.T) {
	d := daemontest.Start(t, daemon.Config{})
	nc, err := nats.Connect(d.URL, nats.Token(d.AdminToken), nats.CustomInboxPrefix(wire.InboxPrefix(d.AdminToken)))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if got := nc.MaxPayload(); got != 4<<20 {
		t.Errorf("server max_payload = %d, want 4 MiB", got)
	}
	var info struct {
		Root string `json:"root_workspace"`
	}
	request(t, nc, "wacp.v1.system.info", []byte(`{}`), &info)
	entries := func() int {
		var res struct {
			Entries int `json:"entries"`
		}
		request(t, nc, "wacp.v1.audit.trail.verify", []byte(`{}`), &res)
		return res.Entries
	}
	before := entries()
	create := "wacp.v1.agent." + info.Root + ".workspace.create"
	withContext := func(n int) []byte {
		return []byte(`{"role":"worker","context":"` + strings.Repeat("x", n) + `"}`)
	}

	tests := []struct {
		name, subject string
		body          []byte
		code          string
	}{
		{"just over the limit", create, withContext(1 << 20), wire.CodeTooLarge},
		{"3 MiB", create, withContext(3 << 20), wire.CodeTooLarge},
		{"3 MiB checkpoint", "wacp.v1.agent." + info.Root + ".checkpoint", withContext(3 << 20), wire.CodeTooLarge},
		{"3 MiB audit read", "wacp.v1.audit.trail.read", withContext(3 << 20), wire.CodeTooLarge},
		{"deep nesting", create, []byte(`{"role":"worker","context":` + strings.Repeat("[", 65) + strings.Repeat("]", 65) + `}`), wire.CodeInvalidStructure},
		{"invalid UTF-8", create, []byte("{\"role\":\"w\xff\"}"), wire.CodeInvalidStructure},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg, err := nc.Request(tt.subject, tt.body, 10*time.Second)
			if err != nil {
				t.Fatalf("request of %d bytes: %v", len(tt.body), err)
			}
			if got := msg.Header.Get("Nats-Service-Error"); got != tt.code {
				t.Fatalf("reply to %d bytes: error %q (%s), want %q", len(tt.body), got, msg.Data, tt.code)
			}
			want := wire.LookupCode(tt.code).Status
			if got := msg.Header.Get("Nats-Service-Error-Code"); got != strconv.Itoa(want) {
				t.Errorf("status header %q, want %d", got, want)
			}
		})
	}

	// Over max_payload the client refuses to send: the daemon sees nothing.
	if _, err := nc.Request(create, withContext(4<<20), 10*time.Second); !errors.Is(err, nats.ErrMaxPayload) {
		t.Errorf("request over max_payload = %v, want %v", err, nats.ErrMaxPayload)
	}
	// The checkpoint refusal records checkpoint_rejected; nothing else
	// wrote to the trail.
	if after := entries(); after != before+1 {
		t.Errorf("trail has %d entries after the refusals, want %d (+1 checkpoint_rejected)", after, before+1)
	}
}

func request(t *testing.T, nc *nats.Conn, subject string, body []byte, reply any) {
	t.Helper()
	msg, err := nc.Request(subject, body, 10*time.Second)
	if err != nil {
		t.Fatalf("%s: %v", subject, err)
	}
	if e := msg.Header.Get("Nats-Service-Error"); e != "" {
		t.Fatalf("%s: %s: %s", subject, e, msg.Data)
	}
	if err := json.Unmarshal(msg.Data, reply); err != nil {
		t.Fatalf("%s reply %s: %v", subject, msg.Data, err)
	}
}
