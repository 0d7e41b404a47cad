package mcpagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Caller runs one operation of the wire contract (a wire.Endpoint's Op,
// such as "carp.resolve" or "checkpoint.list") as the agent, with body as
// the request's JSON, and returns the reply's JSON as the daemon sent it.
// A refusal by the daemon is a *Refusal; any other error is the
// transport's.
type Caller func(ctx context.Context, op string, body []byte) ([]byte, error)

// Refusal is the daemon's refusal of a request: its wire code
// ("invalid_parent") or CARP code ("CHECKPOINT_REQUIRED"), its message,
// and the error reply's body exactly as the daemon sent it (wire.ErrorBody,
// or CARP's error envelope for the carp.* operations).
type Refusal struct {
	Code    string
	Message string
	Body    json.RawMessage
}

func (e *Refusal) Error() string { return e.Code + ": " + e.Message }

// Config configures New. Call is required; the zero value of every other
// field means its default.
type Config struct {
	// Call runs the agent's requests.
	Call Caller
	// Name and Version name the server to the MCP host; default "wacpd"
	// and "".
	Name, Version string
	// Logger receives the SDK's log; default a discard logger.
	Logger *slog.Logger
	// Clock gives a filled CARP request's timestamp; default time.Now.
	Clock func() time.Time
	// NewID gives a filled CARP request's request_id; default a UUIDv7.
	NewID func() string
}

// instructions tell the host's model how the tools fit together.
const instructions = `You are the agent of one wacpd workspace. Your work is governed by CARP: call carp_resolve with your goal to learn which context and actions you may use, then carp_execute an allowed action under the resolution_id it gave. If a result says a steward checkpoint is pending, answer it with carp_respond; if an execution is pending_approval, wait with carp_approval. Record progress with checkpoint_create (parent: the previous checkpoint's id, null for the first) and report with signal_emit (complete once a final checkpoint records the result). inbox_next takes your next instruction. Resources: wacp://workspace, wacp://chain, wacp://trail, wacp://checkpoint/{id}.`

// New returns an MCP server exposing the contract of the workspace agent
// cfg.Call acts as: a tool for each operation of toolDefs, whose input
// schema is its endpoint's request schema (docs/schema, bundled), and the
// resources wacp://workspace, wacp://chain, wacp://trail and
// wacp://checkpoint/{id}. A refusal by the daemon is a tool result with
// isError, never a protocol error. The server keeps no state of its own
// between calls: every call asks cfg.Call.
func New(cfg Config) (*mcp.Server, error) {
	if cfg.Call == nil {
		return nil, errors.New("mcpagent: Config.Call is nil")
	}
	if cfg.Name == "" {
		cfg.Name = "wacpd"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.NewID == nil {
		cfg.NewID = func() string { return uuid.Must(uuid.NewV7()).String() }
	}
	tools, err := builtTools()
	if err != nil {
		return nil, fmt.Errorf("mcpagent: %w", err)
	}
	a := &agent{cfg: cfg}
	s := mcp.NewServer(&mcp.Implementation{Name: cfg.Name, Title: "wacpd workspace agent", Version: cfg.Version},
		&mcp.ServerOptions{Instructions: instructions, Logger: cfg.Logger})
	for i, t := range tools {
		s.AddTool(t, a.tool(toolDefs[i]))
	}
	a.addResources(s)
	return s, nil
}

// agent serves one server's tools and resources.
type agent struct {
	cfg Config
}

// tool returns the handler of d.
func (a *agent) tool(d toolDef) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		body := []byte(req.Params.Arguments)
		if d.carp != "" {
			var err error
			if body, err = a.fillCarp(ctx, body, d.carp); err != nil {
				return result(d.op, nil, err), nil
			}
		} else if len(body) == 0 {
			body = []byte("{}")
		}
		reply, err := a.cfg.Call(ctx, d.op, body)
		return result(d.op, reply, err), nil
	}
}

// fillCarp fills the members of a CARP request of operation op that the
// host left out (carpFilled).
func (a *agent) fillCarp(ctx context.Context, body []byte, op string) ([]byte, error) {
	return fill(body, carpFilled, func(name string) (any, error) {
		switch name {
		case "carp_version":
			return "1.0", nil
		case "request_id":
			return a.cfg.NewID(), nil
		case "timestamp":
			return a.cfg.Clock().UTC().Format(time.RFC3339Nano), nil
		case "operation":
			return op, nil
		case "requester":
			return a.requester(ctx)
		}
		return nil, fmt.Errorf("mcpagent: no value for %s", name)
	})
}

// requester is the CARP requester of the agent: its workspace's agent
// field (the workspace id when none is bound) and the workspace as the
// session. It is read on every use: a migration changes the agent.
func (a *agent) requester(ctx context.Context) (any, error) {
	b, err := a.cfg.Call(ctx, "workspace.get", []byte("{}"))
	if err != nil {
		return nil, err
	}
	var ws struct {
		ID    string `json:"id"`
		Agent string `json:"agent"`
	}
	if err := json.Unmarshal(b, &ws); err != nil || ws.ID == "" {
		return nil, fmt.Errorf("mcpagent: read the workspace for the requester: %v", err)
	}
	agent := ws.Agent
	if agent == "" {
		agent = ws.ID
	}
	return map[string]string{"agent_id": agent, "session_id": ws.ID}, nil
}

// result returns op's reply or refusal as a tool result: the reply's JSON
// as text and as structured content, then what to do next when the reply
// leaves the agent waiting; a refusal is isError with "CODE: message",
// what to do next, and the error body (also the structured content).
func result(op string, reply []byte, err error) *mcp.CallToolResult {
	var f *Refusal
	switch {
	case err == nil:
		r := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(reply)}}, StructuredContent: json.RawMessage(reply)}
		if next := nextAfterReply(op, reply); next != "" {
			r.Content = append(r.Content, &mcp.TextContent{Text: next})
		}
		return r
	case errors.As(err, &f):
		body := f.Body
		if !json.Valid(body) {
			body, _ = json.Marshal(map[string]any{"error": map[string]any{"code": f.Code, "message": f.Message}})
		}
		r := &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: f.Code + ": " + f.Message}}, StructuredContent: json.RawMessage(body)}
		if next := nextAfterRefusal(op, f); next != "" {
			r.Content = append(r.Content, &mcp.TextContent{Text: next})
		}
		r.Content = append(r.Content, &mcp.TextContent{Text: string(body)})
		return r
	}
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "error: " + err.Error()}}}
}
