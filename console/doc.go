// Package console is wacpd's web console (issue 18): server-rendered HTML
// (html/template) with a little plain JavaScript for the live parts, its
// templates and assets embedded in the binary, no build step. It is an
// http.Handler over a Backend (the daemon's, daemon/console.go): it calls
// the wire contract's operations as the session's principal, reads the two
// views the wire has no operation for through the same scoping rule, and
// follows the live trail.
//
// # Routes
//
//	GET  /login, POST /login   the login form; the token only in the POST body
//	POST /logout               ends the session
//	GET  /                     the workspace tree with states
//	GET  /ws/{id}              a workspace's checkpoint chain
//	GET  /checkpoint/{id}      a checkpoint with its payload (audit.checkpoint.get)
//	GET  /trail                the trail's history (audit.trail.read) and the live timeline
//	GET  /trail/events         the live timeline: server-sent events (ws, type, actor filters)
//	GET  /queue                the highway queue (highway.queue), users only
//	POST /queue/{id}           approve / reject / modify a gate (highway.resolve)
//	GET  /audit                the signed tree head (audit.sth) and, asked, audit.trail.verify
//	GET  /static/…             the stylesheet and the script
//
// # Sessions
//
// Only user and auditor tokens log in; agent, tool and coordinator tokens
// are refused with a message naming the kind. A login makes a session: a
// random 256-bit id in a cookie (HttpOnly, SameSite=Strict, Secure over
// TLS); the token stays in the server's memory. Every request looks the
// token up again (Authenticator.Identify), so a revoked token ends its
// session at the next request, and a live stream within seconds. A
// session ends after Config.IdleTimeout unused (an open live page uses
// it) or Config.MaxAge after its login, and at logout; sessions do not
// survive a restart.
//
// # Cross-site requests
//
// Every POST passes net/http's CrossOriginProtection (Sec-Fetch-Site,
// else Origin against Host) and, once logged in, must carry the session's
// CSRF token (a hidden form field, compared in constant time). Every
// response has a Content-Security-Policy without inline script or style
// (script-src 'self'), frame-ancestors 'none' and X-Frame-Options DENY,
// Referrer-Policy no-referrer, nosniff, and Cache-Control no-store.
// Text from the daemon is escaped by html/template or written by the
// script with textContent, never as HTML.
//
// # Who sees what
//
// A user sees what its token would read over NATS: the trail, the tree
// and the chains of its own workspaces (all of them with view_trail_any),
// the highway queue (every user reads it, as highway.queue serves it), and
// decision forms only on the gates its capabilities answer (the gate
// type's _own or _any capability, user.Needs; the daemon still checks the
// scope and records a denial). An auditor sees every workspace, chain and
// entry, the tree head and verification, and no queue: the console is
// read-only for it.
//
// # Caveats
//
// An irreversible approval is asked twice: the gate's approve or modify
// shows a confirmation page first, and only its form sends confirm: true
// (the daemon refuses the approval without it too). The trail history
// pages from the oldest entry; the live table shows what is committed
// while the page is open.
package console
