// Package e2e holds the end-to-end tests: they build the real wacpd binary,
// start it on a temp data dir and a free port of 127.0.0.1, and drive it over
// NATS through the client package, as agents, coordinators and auditors do.
package e2e
