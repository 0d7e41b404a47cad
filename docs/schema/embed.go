// Package schema holds the JSON Schemas of the wire contract (wire-v1),
// docs/schema/*.json, embedded for the programs that serve them: the MCP
// server (package mcpagent) gives each of its tools the schema of its
// endpoint's request. The files are the documentation; this package only
// carries them. wire.Endpoint's Request and Reply name them ("file.json"
// or "file.json#def", a definition in the file's $defs).
package schema

import "embed"

// FS holds every docs/schema/*.json file at its base name.
//
//go:embed *.json
var FS embed.FS
