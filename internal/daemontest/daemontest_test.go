package daemontest_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/wacpd/wacpd/daemon"
	"github.com/wacpd/wacpd/internal/daemontest"
	"github.com/wacpd/wacpd/wire"
)

func TestStart(t *testing.T) {
	d := daemontest.Start(t, daemon.Config{})
	if d.Dir == "" || d.URL == "" || d.AdminToken == "" {
		t.Fatalf("Start = %+v, want Dir, URL and AdminToken set", d)
	}
	nc, err := nats.Connect(d.URL, nats.Token(d.AdminToken), nats.CustomInboxPrefix(wire.InboxPrefix(d.AdminToken)))
	if err != nil {
		t.Fatalf("nats.Connect = %v", err)
	}
	defer nc.Close()
	msg, err := nc.Request("wacp.v1.system.info", nil, 10*time.Second)
	if err != nil {
		t.Fatalf("request system.info = %v", err)
	}
	var info struct {
		RootWorkspace string `json:"root_workspace"`
	}
	if err := json.Unmarshal(msg.Data, &info); err != nil {
		t.Fatalf("system.info reply %q: %v", msg.Data, err)
	}
	if info.RootWorkspace == "" {
		t.Errorf("system.info = %s, want a root_workspace", msg.Data)
	}
}
