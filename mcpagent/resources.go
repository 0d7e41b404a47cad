package mcpagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Resource URIs.
const (
	WorkspaceURI  = "wacp://workspace"       // workspace.get: the agent's workspace
	ChainURI      = "wacp://chain"           // checkpoint.list, every page: the workspace's checkpoint chain
	TrailURI      = "wacp://trail"           // trail, every page: the agent's local trail
	CheckpointURI = "wacp://checkpoint/{id}" // checkpoint.get: one checkpoint
)

// MaxPages bounds the pages a resource reads (checkpoint.list gives up
// to 1000 checkpoints a page, trail up to 1000 entries); a resource that
// would need more ends with "truncated": true.
const MaxPages = 100

func (a *agent) addResources(s *mcp.Server) {
	const mime = "application/json"
	s.AddResource(&mcp.Resource{URI: WorkspaceURI, Name: "workspace", Title: "This workspace", MIMEType: mime,
		Description: "The agent's workspace record (workspace.get): state, role, parent, directive, budget."},
		a.read(func(ctx context.Context, _ string) ([]byte, error) {
			return a.cfg.Call(ctx, "workspace.get", []byte("{}"))
		}))
	s.AddResource(&mcp.Resource{URI: ChainURI, Name: "chain", Title: "Checkpoint chain", MIMEType: mime,
		Description: "Every checkpoint of the workspace in chain order (checkpoint.list, all pages): {\"checkpoints\": [...]}."},
		a.read(func(ctx context.Context, _ string) ([]byte, error) {
			return a.pages(ctx, "checkpoint.list", "checkpoints", 1000)
		}))
	s.AddResource(&mcp.Resource{URI: TrailURI, Name: "trail", Title: "Local trail", MIMEType: mime,
		Description: "The agent's visible trail entries in order (trail, all pages): {\"entries\": [...]}."},
		a.read(func(ctx context.Context, _ string) ([]byte, error) { return a.pages(ctx, "trail", "entries", 1000) }))
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: CheckpointURI, Name: "checkpoint", Title: "A checkpoint", MIMEType: mime,
		Description: "One checkpoint by id (checkpoint.get)."},
		a.read(func(ctx context.Context, uri string) ([]byte, error) {
			id, ok := strings.CutPrefix(uri, "wacp://checkpoint/")
			if !ok || id == "" || strings.Contains(id, "/") {
				return nil, mcp.ResourceNotFoundError(uri)
			}
			b, _ := json.Marshal(map[string]string{"id": id})
			return a.cfg.Call(ctx, "checkpoint.get", b)
		}))
}

// read returns a resource handler answering get's JSON, uncacheable and
// private; a refusal is a protocol error naming its code (not_found: the
// SDK's resource not found).
func (a *agent) read(get func(ctx context.Context, uri string) ([]byte, error)) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		uri := req.Params.URI
		b, err := get(ctx, uri)
		var f *Refusal
		switch {
		case errors.As(err, &f) && f.Code == "not_found":
			return nil, mcp.ResourceNotFoundError(uri)
		case errors.As(err, &f):
			return nil, fmt.Errorf("%s: %s: %s", uri, f.Code, f.Message)
		case err != nil:
			return nil, fmt.Errorf("%s: %w", uri, err)
		}
		// One agent's records, read now: no cache may keep them (ttlMs 0)
		// or serve them to another (private; the default is public).
		return &mcp.ReadResourceResult{Cacheable: mcp.Cacheable{CacheScope: "private"},
			Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(b)}}}, nil
	}
}

// pages reads every page of op, whose replies hold their items in the
// member items and the next page's after in next, and returns
// {items: [...]} (with "truncated": true past MaxPages).
func (a *agent) pages(ctx context.Context, op, items string, limit int) ([]byte, error) {
	all := []json.RawMessage{}
	after := ""
	for range MaxPages {
		req := map[string]any{"limit": limit}
		if after != "" {
			req["after"] = after
		}
		body, _ := json.Marshal(req)
		b, err := a.cfg.Call(ctx, op, body)
		if err != nil {
			return nil, err
		}
		var page map[string]json.RawMessage
		if err := json.Unmarshal(b, &page); err != nil {
			return nil, fmt.Errorf("decode %s's reply: %w", op, err)
		}
		var got []json.RawMessage
		if err := json.Unmarshal(page[items], &got); err != nil && page[items] != nil {
			return nil, fmt.Errorf("decode %s's %s: %w", op, items, err)
		}
		all = append(all, got...)
		var next *string
		json.Unmarshal(page["next"], &next)
		if next == nil || *next == "" || len(got) == 0 {
			return json.Marshal(map[string]any{items: all})
		}
		after = *next
	}
	return json.Marshal(map[string]any{items: all, "truncated": true})
}
