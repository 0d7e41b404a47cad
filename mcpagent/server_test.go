package mcpagent

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// call is one request a session made of its Caller.
type call struct {
	op   string
	body map[string]any
}

// session connects an SDK client to New's server over an in-memory
// transport; answer plays the daemon.
func session(t *testing.T, answer func(op string, body map[string]any) ([]byte, error)) (*mcp.ClientSession, *[]call) {
	t.Helper()
	ctx := context.Background()
	var calls []call
	srv, err := New(Config{Call: func(_ context.Context, op string, body []byte) ([]byte, error) {
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			return nil, fmt.Errorf("the body of %s is not a JSON object: %s", op, body)
		}
		calls = append(calls, call{op, m})
		return answer(op, m)
	}, Clock: func() time.Time { return time.Date(2026, 11, 27, 12, 0, 0, 5, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, &calls
}

// TestServer: through the SDK's client, the tools are toolDefs; a carp_*
// call without the envelope gets it filled (UUIDv7 request id, the
// clock's timestamp, the operation, the requester from workspace.get)
// and keeps what the host sent; a host's own members are not replaced;
// other tools send the arguments as they are; a refusal is a tool result.
func TestServer(t *testing.T) {
	ctx := context.Background()
	cs, calls := session(t, func(op string, body map[string]any) ([]byte, error) {
		switch op {
		case "workspace.get":
			return []byte(`{"id":"WS1","agent":"WS1/agent/2","state":"active"}`), nil
		case "checkpoint":
			return nil, &Refusal{Code: "invalid_parent", Message: "parent is not the head", Body: json.RawMessage(`{"error":{"code":"invalid_parent","message":"parent is not the head","details":{}}}`)}
		}
		return []byte(`{"ok":true}`), nil
	})
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names, want []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	for _, d := range toolDefs {
		want = append(want, d.name)
	}
	slices.Sort(names)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("tools/list = %v, want %v", names, want)
	}

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "carp_resolve", Arguments: map[string]any{"task": map[string]any{"goal": "answer T-1"}}})
	if err != nil || res.IsError {
		t.Fatalf("carp_resolve: %+v %v", res, err)
	}
	if len(*calls) != 2 || (*calls)[0].op != "workspace.get" || (*calls)[1].op != "carp.resolve" {
		t.Fatalf("calls %+v, want workspace.get then carp.resolve", *calls)
	}
	got := (*calls)[1].body
	id, err := uuid.Parse(fmt.Sprint(got["request_id"]))
	if err != nil || id.Version() != 7 {
		t.Errorf("request_id %v: %v, version %d, want a UUIDv7", got["request_id"], err, id.Version())
	}
	req, _ := got["requester"].(map[string]any)
	if got["carp_version"] != "1.0" || got["operation"] != "resolve" || got["timestamp"] != "2026-11-27T12:00:00.000000005Z" ||
		req["agent_id"] != "WS1/agent/2" || req["session_id"] != "WS1" || got["task"].(map[string]any)["goal"] != "answer T-1" {
		t.Errorf("the filled request: %v", got)
	}

	*calls = nil
	mine := map[string]any{"carp_version": "1.0", "request_id": "0193a5b2-7c4e-7d3a-9f1e-2b6c8d0e4f5a", "timestamp": "2026-11-27T12:00:00Z",
		"operation": "execute", "requester": map[string]any{"agent_id": "me", "session_id": "WS1"}, "action": map[string]any{"action_id": "a"}}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "carp_execute", Arguments: mine}); err != nil {
		t.Fatal(err)
	}
	if len(*calls) != 1 || fmt.Sprint((*calls)[0].body) != fmt.Sprint(mine) {
		t.Errorf("a complete request was changed: %+v, want %v", *calls, mine)
	}

	*calls = nil
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "checkpoint_create", Arguments: map[string]any{"type": "artifact", "intent": "x", "status": "final", "confidence": "high", "parent": "c9"}})
	if err != nil {
		t.Fatalf("a refusal came back as a protocol error: %v", err)
	}
	if !res.IsError || !strings.HasPrefix(text(res), "invalid_parent: parent is not the head") {
		t.Errorf("checkpoint_create refused: %+v", res)
	}
	if len(*calls) != 1 || (*calls)[0].op != "checkpoint" || (*calls)[0].body["parent"] != "c9" || len((*calls)[0].body) != 5 {
		t.Errorf("checkpoint_create sent %+v", *calls)
	}
}

// TestResources: wacp://chain reads every page of checkpoint.list, passing
// each page's next as after, and may not be cached or shared; wacp://checkpoint/{id} asks checkpoint.get;
// a not_found refusal is the SDK's resource not found.
func TestResources(t *testing.T) {
	ctx := context.Background()
	cs, calls := session(t, func(op string, body map[string]any) ([]byte, error) {
		switch {
		case op == "checkpoint.list" && body["after"] == nil:
			return []byte(`{"checkpoints":[{"id":"c1"},{"id":"c2"}],"next":"c2"}`), nil
		case op == "checkpoint.list" && body["after"] == "c2":
			return []byte(`{"checkpoints":[{"id":"c3"}],"next":null}`), nil
		case op == "checkpoint.get" && body["id"] == "c3":
			return []byte(`{"id":"c3"}`), nil
		}
		return nil, &Refusal{Code: "not_found", Message: "no such thing", Body: json.RawMessage(`{"error":{"code":"not_found","message":"no such thing"}}`)}
	})
	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: ChainURI})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Contents[0].Text; got != `{"checkpoints":[{"id":"c1"},{"id":"c2"},{"id":"c3"}]}` {
		t.Errorf("wacp://chain = %s", got)
	}
	if res.CacheScope != "private" || res.TTLMs != 0 {
		t.Errorf("wacp://chain: cacheScope %q ttlMs %d, want private and 0", res.CacheScope, res.TTLMs)
	}
	if len(*calls) != 2 {
		t.Errorf("%d calls for two pages: %+v", len(*calls), *calls)
	}
	res, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "wacp://checkpoint/c3"})
	if err != nil || res.Contents[0].Text != `{"id":"c3"}` {
		t.Errorf("wacp://checkpoint/c3 = %+v, %v", res, err)
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "wacp://checkpoint/nope"}); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("wacp://checkpoint/nope: %v, want not found", err)
	}
}
