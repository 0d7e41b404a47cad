package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/mcpagent"
)

// mcpCmd serves the workspace agent's contract as an MCP server on stdin
// and stdout (issue 18) for an LLM host: the tools and resources of
// package mcpagent, each a request of this client. stdout belongs to the
// protocol; the log goes to stderr.
func mcpCmd(c *cli, args []string) error {
	const cmd = "mcp"
	fs := c.flags(cmd, cmd+"\n\n"+
		"Serves this workspace agent's contract (-ws/-token or $WACP_WORKSPACE/$WACP_TOKEN) to an MCP host over\n"+
		"stdio: tools carp_resolve, carp_execute, checkpoint_create, signal_emit, ... and resources wacp://workspace,\n"+
		"wacp://chain, wacp://trail. Runs until the host closes stdin.")
	if _, err := parse(fs, args, 0, 0); err != nil {
		return err
	}
	cl, err := c.dial()
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv, err := mcpagent.New(mcpagent.Config{Call: agentCaller(cl), Name: "wacp", Logger: log})
	if err != nil {
		return err
	}
	in, ok := c.stdin.(io.ReadCloser)
	if !ok {
		in = io.NopCloser(c.stdin)
	}
	err = srv.Run(c.ctx, &mcp.IOTransport{Reader: in, Writer: nopWriteCloser{c.stdout}})
	if err == nil || errors.Is(err, io.EOF) || c.ctx.Err() != nil {
		return nil // the host closed stdin, or a signal
	}
	return err
}

// agentCaller runs the MCP server's requests with cl; a refusal by the
// daemon becomes an *mcpagent.Refusal carrying its error body.
func agentCaller(cl *client.Client) mcpagent.Caller {
	return func(ctx context.Context, op string, body []byte) ([]byte, error) {
		b, err := cl.Call(ctx, op, body)
		var ce *client.Error
		if errors.As(err, &ce) {
			f := &mcpagent.Refusal{Code: ce.Code, Message: ce.Message, Body: ce.Body}
			if len(f.Body) == 0 { // the NATS server's refusal: no reply from the daemon
				details := ce.Details
				if details == nil {
					details = map[string]any{}
				}
				f.Body, _ = json.Marshal(map[string]any{"error": map[string]any{"code": ce.Code, "message": ce.Message, "details": details}})
			}
			return nil, f
		}
		return b, err
	}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
