package mcpagent

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wacpd/wacpd/docs/schema"
	"github.com/wacpd/wacpd/wire"
)

// toolDef is one tool: its name, the wire operation it calls, and for a
// CARP tool the CARP operation whose envelope it fills.
type toolDef struct {
	name, op string
	carp     string // "resolve", "execute", "validate", "respond"; "" for the others
	title    string
	desc     string
	readOnly bool
}

// carpFilled lists the members of a CARP request a carp_* tool fills
// when the arguments leave them out.
var carpFilled = []string{"carp_version", "request_id", "timestamp", "operation", "requester"}

const carpNote = " carp_version, request_id (a new UUIDv7), timestamp (now), operation and requester (this workspace's agent and session) are filled in when absent; leave them out."

// toolDefs is the agent's contract as tools, in the order tools/list
// gives them.
var toolDefs = []toolDef{
	{name: "carp_resolve", op: "carp.resolve", carp: "resolve", title: "CARP resolve", readOnly: true,
		desc: "Resolve context and permissions via CARP (seed 004 §3): say what the task is for (task.goal, optional task.risk_tier and task.context_hints, scope) and get the context blocks, the allowed and denied actions and a resolution_id to execute under. A resolution may list steward checkpoints (checkpoints): a pending one must be answered with carp_respond before the actions it gates run." + carpNote},
	{name: "carp_execute", op: "carp.execute", carp: "execute", title: "CARP execute",
		desc: "Execute an action of a resolution (seed 004 §4): action.action_id, action.action_type (usually the same), action.parameters, action.resolution_id; optional execution_options (timeout_ms, dry_run), idempotency_key. An action that needs an operator's approval answers status pending_approval with approval.approval_id: wait with carp_approval, then call carp_execute again with the same action and approval_id." + carpNote},
	{name: "carp_validate", op: "carp.validate", carp: "validate", title: "CARP validate", readOnly: true,
		desc: "Check an execute request (same shape as carp_execute) against its resolution without running it." + carpNote},
	{name: "carp_respond", op: "carp.respond", carp: "respond", title: "CARP respond",
		desc: "Answer a steward checkpoint's questions: checkpoint_response {checkpoint_id, atlas_id (only if the id is in several atlases), answers: {question_id: value}}. Answers that do not pass are refused CONSTRAINT_VIOLATED (answer again) or ACTION_DENIED (the checkpoint blocks)." + carpNote},
	{name: "carp_approval", op: "carp.approval", title: "Wait for an approval", readOnly: true,
		desc: "Where an operator's approval of a held execute stands: approval_id (from carp_execute's approval.approval_id) and wait (a duration such as \"2m\", at most 5m; the answer comes when the operator decides or the wait ends). approved: run carp_execute again with approval_id; denied or cancelled: do not."},
	{name: "checkpoint_create", op: "checkpoint", title: "Create a checkpoint",
		desc: "Record a checkpoint of this workspace's work in its hash-chained checkpoint chain: type (artifact, observation, ...), intent, status (provisional or final), confidence (low, medium, high), payload {files_changed, content, artifacts}, parent (the chain head's id, or null for the first; see checkpoint_head)."},
	{name: "checkpoint_list", op: "checkpoint.list", title: "List checkpoints", readOnly: true,
		desc: "A workspace's checkpoints in chain order (default this workspace), a page at a time: pass the reply's next as after."},
	{name: "checkpoint_head", op: "checkpoint.head", title: "Checkpoint chain head", readOnly: true,
		desc: "The head of a workspace's checkpoint chain (default this workspace), or with final the most recent final checkpoint; its id is the parent of the next checkpoint_create."},
	{name: "checkpoint_get", op: "checkpoint.get", title: "Get a checkpoint", readOnly: true,
		desc: "One checkpoint by id."},
	{name: "signal_emit", op: "signal", title: "Emit a signal",
		desc: "Tell the parent workspace how the work stands: type ready, started, blocked, complete, failed or escalation (reason required for blocked, failed and escalation). complete needs a final checkpoint first."},
	{name: "inbox_next", op: "inbox.next", title: "Next envelope",
		desc: "Take the next envelope (directive, message, ...) of this workspace's inbox, waiting up to wait (e.g. \"30s\", at most 5m); {} when none came. By default it acknowledges the envelopes taken before."},
	{name: "inbox_ack", op: "inbox.ack", title: "Acknowledge an envelope",
		desc: "Acknowledge one envelope of the inbox by id (it leaves the inbox)."},
	{name: "task_get", op: "task.get", title: "Get a task", readOnly: true,
		desc: "A task by id, with transitive its dependencies and dependents."},
}

// builtTools are the tools with their bundled input schemas, built once.
var builtTools = sync.OnceValues(func() ([]*mcp.Tool, error) { return buildTools(schema.FS) })

// buildTools returns toolDefs as MCP tools whose input schemas are the
// request schemas of their endpoints in fsys.
func buildTools(fsys fs.FS) ([]*mcp.Tool, error) {
	eps := map[string]wire.Endpoint{}
	for _, ep := range wire.Endpoints() {
		eps[ep.Op] = ep
	}
	var out []*mcp.Tool
	for _, d := range toolDefs {
		s, err := inputSchema(fsys, eps[d.op], d.carp)
		if err != nil {
			return nil, fmt.Errorf("tool %s: %w", d.name, err)
		}
		b, err := json.Marshal(s)
		if err != nil {
			return nil, fmt.Errorf("tool %s: %w", d.name, err)
		}
		t := &mcp.Tool{Name: d.name, Title: d.title, Description: d.desc, InputSchema: json.RawMessage(b),
			Annotations: &mcp.ToolAnnotations{Title: d.title, ReadOnlyHint: d.readOnly, IdempotentHint: d.readOnly}}
		if !d.readOnly {
			no := false
			if d.op != "carp.execute" {
				t.Annotations.DestructiveHint = &no // they add to a record; only an action may destroy
			}
		}
		out = append(out, t)
	}
	return out, nil
}

// inputSchema returns the request schema of ep, bundled; for a CARP tool
// (carpOp not "") specialized to its operation, the filled members no
// longer required.
func inputSchema(fsys fs.FS, ep wire.Endpoint, carpOp string) (map[string]any, error) {
	if ep.Op == "" {
		return nil, fmt.Errorf("no such endpoint")
	}
	if ep.Request == "" {
		return map[string]any{"$schema": draft2020, "type": "object", "additionalProperties": false}, nil
	}
	s, err := Bundle(fsys, ep.Request)
	if err != nil {
		return nil, err
	}
	if s["type"] != "object" {
		return nil, fmt.Errorf("%s is not an object schema", ep.Request)
	}
	if carpOp != "" {
		if err := specialize(s, carpOp); err != nil {
			return nil, fmt.Errorf("%s: %w", ep.Request, err)
		}
	}
	return s, nil
}

// specialize narrows the CARP request schema s to operation op: the
// branch of its if/then/else chain on operation that op takes replaces
// the chain (so that a request without operation, which the tool fills,
// is checked as op's), operation becomes the constant op, and the members
// the tool fills are no longer required.
func specialize(s map[string]any, op string) error {
	if _, ok := s["if"].(map[string]any); !ok {
		return fmt.Errorf("no if/then/else on operation")
	}
	var branch any
	for cur := s; ; {
		cond, ok := cur["if"].(map[string]any)
		if !ok {
			branch = cur // the last else
			break
		}
		props, _ := cond["properties"].(map[string]any)
		o, _ := props["operation"].(map[string]any)
		if o == nil || o["const"] == nil {
			return fmt.Errorf("an if that is not on operation")
		}
		if o["const"] == op {
			branch = cur["then"]
			break
		}
		next, ok := cur["else"].(map[string]any)
		if !ok {
			return fmt.Errorf("no branch for operation %s", op)
		}
		cur = next
	}
	if branch == nil {
		return fmt.Errorf("no branch for operation %s", op)
	}
	delete(s, "if")
	delete(s, "then")
	delete(s, "else")
	all, _ := s["allOf"].([]any)
	s["allOf"] = append(all, branch)
	props, ok := s["properties"].(map[string]any)
	if !ok || props["operation"] == nil {
		return fmt.Errorf("no operation property")
	}
	props["operation"] = map[string]any{"const": op, "description": "Filled in when absent."}
	req, _ := s["required"].([]any)
	s["required"] = slices.DeleteFunc(slices.Clone(req), func(v any) bool {
		name, _ := v.(string)
		return slices.Contains(carpFilled, name)
	})
	return nil
}
