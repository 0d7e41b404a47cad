// Package atlas is the Atlas manifest (seeds 000 and 004, issue 15): what a
// steward publishes about a domain — its context blocks, actions,
// capabilities, policies and checkpoints — and the validation of a
// manifest as a whole. It is a pure core: the daemon loads manifests, the
// CARP resolver (package carp) decides with them.
package atlas
