// Package user holds WACP's user records, their four states and the
// capability model (User spec, digest §3.14) as pure rules: the
// transitions with the trail event each writes, capability grants and
// revocations, and Authorize, which decides whether a user may take an
// action on a target and, if not, why (capability_denied).
//
// # Model
//
// A user is active, suspended, blocked or deactivated; the transitions are
// exactly the spec's ten (§3.4), each with its own event. Only an active
// user initiates anything. Capabilities are the spec's seventeen atoms;
// an _own capability covers a target the user owns (the target
// workspace's owner field, which inheritance at creation and transfers
// keep), an _any capability every target. Every active user holds
// view_trail_own implicitly; it is never stored and cannot be revoked.
//
// Authorize is deny by default, in a fixed order: not active
// (user_not_active); the action's _any capability held (allowed); its
// _own capability held (implicitly for view_trail_own) and the target
// owned by the user (allowed) or not (wrong_scope); otherwise
// missing_capability.
//
// # Format
//
// User is a JSON record; the engine stores it. This package links no
// storage.
package user
