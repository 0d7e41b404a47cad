// Package mcpagent serves one workspace agent's side of the wire contract
// as a Model Context Protocol server (issue 18; seed 004 §8.2, CARP over
// MCP), for LLM agents whose hosts speak MCP.
//
// # Model
//
// New builds an *mcp.Server around a Caller: a function that runs one
// operation of the wire contract as the agent. The same server runs in
// two places: "wacp mcp" serves it over stdio with a Caller that sends
// NATS requests with the agent's token (client.Client.Call), and the
// daemon serves it at /mcp on its -http listener with a Caller that runs
// the operation in-process for the Bearer token's principal. The package
// knows neither: it imports no daemon, client or NATS.
//
// Tools, each one operation (the wire endpoint's Op): carp_resolve,
// carp_validate, carp_execute, carp_respond (carp.*), carp_approval,
// checkpoint_create (checkpoint), checkpoint_list, checkpoint_head,
// checkpoint_get, signal_emit (signal), inbox_next, inbox_ack, task_get.
// A tool's input schema is its endpoint's request schema in docs/schema
// (wire.Endpoint.Request), bundled into one self-contained schema (Bundle);
// a carp_* tool's is narrowed to its operation.
//
// Resources: wacp://workspace (workspace.get), wacp://chain
// (checkpoint.list, every page), wacp://trail (trail, every page) and the
// template wacp://checkpoint/{id} (checkpoint.get).
//
// # Invariants
//
//   - The arguments go to the daemon as sent, byte for byte, except that a
//     carp_* tool adds the envelope members an LLM host cannot make
//     reliably, when they are absent: carp_version, request_id (UUIDv7),
//     timestamp, operation and requester (from workspace.get). The
//     daemon's strict decoding and checks decide; nothing is validated
//     twice.
//   - A refusal by the daemon is a tool result with isError, the text
//     "CODE: message" and the error body as structured content, never a
//     JSON-RPC error. Resources, which have no such result, answer a
//     refusal as a protocol error naming the code.
//   - A result that leaves the agent waiting on someone says what to do
//     next in its text: a pending steward checkpoint (carp_respond, with
//     its checkpoint and question ids), a held execution (carp_approval,
//     with the approval id).
//
// # Caveats
//
// The server holds no session state: a host may call any tool in any
// order, and the daemon refuses what the protocol does not allow.
// Resources read at most MaxPages pages.
package mcpagent
