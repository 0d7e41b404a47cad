package client_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/wire"
)

// TestCall: Call sends a body as is to an operation of the wire contract
// (an agent endpoint on the client's workspace, system.info on its own
// subject) and returns the reply's JSON; a refusal is an *Error carrying
// the daemon's error body, the CARP envelope for carp.*; a long poll gets
// its wait on top of the timeout; an op outside the contract is refused
// before anything is sent.
func TestCall(t *testing.T) {
	ctx := testCtx(t)
	dir, url := startDaemon(t)
	coord := dial(t, ctx, client.Options{DataDir: dir})
	w := newWorker(t, ctx, coord, url, true)

	b, err := w.Call(ctx, "system.info", []byte(`{}`))
	var info wire.Info
	if err != nil || json.Unmarshal(b, &info) != nil || info.RootWorkspace == "" {
		t.Fatalf("Call(system.info) = %s, %v", b, err)
	}
	b, err = w.Call(ctx, "workspace.get", []byte(`{}`))
	if err != nil || !strings.Contains(string(b), `"id":"`+w.Workspace()+`"`) {
		t.Fatalf("Call(workspace.get) = %s, %v", b, err)
	}

	var ce *client.Error
	_, err = w.Call(ctx, "checkpoint", []byte(`{"type":"artifact","intent":"x","status":"final","confidence":"high","parent":"nope"}`))
	if !errors.As(err, &ce) || ce.Code != "invalid_parent" || !strings.Contains(string(ce.Body), `"code":"invalid_parent"`) {
		t.Fatalf("Call(checkpoint with a wrong parent) = %v (body %s)", err, ce.Body)
	}
	_, err = w.Call(ctx, "checkpoint", []byte(`{"type":"artifact","type":"artifact"}`))
	if !errors.As(err, &ce) || ce.Code != "invalid_structure" {
		t.Fatalf("Call(a duplicate member) = %v; the body was not sent as is", err)
	}
	_, err = w.Call(ctx, "carp.resolve", []byte(`{}`))
	if !errors.As(err, &ce) || ce.Code != "MISSING_FIELD" || !strings.Contains(string(ce.Body), `"carp_version":"1.0"`) {
		t.Fatalf("Call(carp.resolve {}) = %v (body %s), want the CARP envelope", err, ce.Body)
	}

	// The coordinator with a timeout of 1 s, and an inbox wait of 2 s: the call lasts
	// the wait and answers {}.
	short, err := client.Dial(ctx, client.Options{DataDir: dir, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer short.Close()
	start := time.Now()
	b, err = short.Call(ctx, "inbox.next", []byte(`{"wait":"2s"}`))
	if err != nil || string(b) != "{}" || time.Since(start) < 2*time.Second {
		t.Fatalf("Call(inbox.next wait 2s) with a 1 s timeout = %s, %v after %v", b, err, time.Since(start))
	}

	if _, err := w.Call(ctx, "no.such.op", []byte(`{}`)); err == nil || !strings.Contains(err.Error(), "no operation") {
		t.Fatalf("Call(no.such.op) = %v", err)
	}
}
