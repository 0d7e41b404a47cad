// Package client is the Go client of wacpd: one method per endpoint of the
// wire contract v1 (docs: wire-v1), over NATS request/reply, plus Watch and
// TailTrail for what the daemon publishes. The wacp command is a thin shell
// over it.
//
// # Identity
//
// A Client acts as one workspace: every agent call goes to
// wacp.v1.agent.<ws>.<op>, where ws is Workspace(). The daemon takes the
// caller's identity from the token the connection authenticated with, and
// the NATS server lets a workspace agent's token publish only to its own
// workspace's subjects. The admin token (DataDir/admin.token) is the
// coordinator's, acting as the root workspace; an agent token must be
// dialed with its own workspace id (Options.Workspace or $WACP_WORKSPACE).
// Every request also carries the token in the Wacp-Token header, which the
// daemon requires when it runs on an external NATS server. Replies come
// back under the token's own inbox prefix (wire.InboxPrefix), the only
// one the server lets the token subscribe to.
//
// # Discovery
//
// Dial finds the daemon as wire-v1 §1 says: Options.URL and Options.Token,
// else $WACP_URL and $WACP_TOKEN, else the data directory (default
// ./wacp-data): the url in wacpd.json and the token in admin.token.
//
// # Errors
//
// An error reply is an *Error with the wire code; errors.Is(err, ErrRefused)
// reports a protocol refusal. A NATS permission violation (the server
// refuses the publish or subscription, so no reply comes) is an *Error with
// code permission_denied wrapping ErrPermission, reported as soon as the
// server says so. A daemon that cannot be found or does not answer wraps
// ErrUnreachable. ExitCode maps all of these to the CLI's exit codes.
//
// # Caveats
//
// The record types come from the daemon's own packages (checkpointchain,
// workspace, trail, envelope, signal), so the client compiles them in;
// it does not depend on the runtime package or on nats-server.
// Watch and TailTrail deliver at least once; drop repeats by id.
package client
