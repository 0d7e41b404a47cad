package wire

import (
	"encoding/json"
	"time"

	"github.com/wacpd/wacpd/trace"
)

// MaxToolTimeout bounds how long the daemon waits for a tool service's
// answer to a forwarded execution (carp.execute's own deadline is this
// plus RequestTimeout).
const MaxToolTimeout = 5 * time.Minute

// AtlasLoadRequest is the body of atlas.load: an Atlas manifest, whole
// (the JSON of atlas.Manifest; the daemon validates it as -atlas does).
type AtlasLoadRequest struct {
	Manifest json.RawMessage `json:"manifest"`
}

// AtlasUnloadRequest is the body of atlas.unload.
type AtlasUnloadRequest struct {
	AtlasID string `json:"atlas_id"`
}

// AtlasChange is the reply of atlas.load and atlas.unload: the atlas and
// what changed (loaded, replaced, unchanged, unloaded).
type AtlasChange struct {
	AtlasID  string `json:"atlas_id"`
	Version  string `json:"version"`
	Checksum string `json:"checksum"`
	Change   string `json:"change"`
}

// AtlasInfo is one loaded atlas in atlas.list.
type AtlasInfo struct {
	AtlasID  string   `json:"atlas_id"`
	Version  string   `json:"version"`
	Name     string   `json:"name"`
	Checksum string   `json:"checksum"`
	Domains  []string `json:"domains"`
	Actions  []string `json:"actions"`
}

// AtlasList is the reply of atlas.list, in load order.
type AtlasList struct {
	Atlases []AtlasInfo `json:"atlases"`
}

// TraceRequest is the body of trace (an agent's own CARP session) and of
// audit.trace.read (Session names one; empty: the whole log, in commit
// order). From is the log index to start at; Limit at most 1000.
type TraceRequest struct {
	Session string `json:"session,omitempty"`
	From    uint64 `json:"from,omitempty"`
	Limit   int    `json:"limit,omitempty"`
}

// TracePage is a page of TRACE events: Next is the index to read on from,
// null at the end. TreeHead is the TRACE log's latest signed head (on
// audit.trace.read; null before the first).
type TracePage struct {
	Events   []trace.Event   `json:"events"`
	Next     *uint64         `json:"next"`
	TreeHead *trace.TreeHead `json:"tree_head,omitempty"`
}
