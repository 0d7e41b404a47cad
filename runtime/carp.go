package runtime

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/wacpd/wacpd/atlas"
	"github.com/wacpd/wacpd/carp"
	"github.com/wacpd/wacpd/internal/recstore"
	"github.com/wacpd/wacpd/steward"
)

// CARP/1.0 in the engine (issue 15): the loaded atlases, the grants of
// the resolutions, the executions and the usage they count, each written
// in the commit of the operation with its TRACE events (tracelog.go). The
// decisions are package carp's (a pure core); the engine stores them, and
// the daemon serves the operations and forwards executions to the tool
// services. Keys (docs/formats.md): c/a/<atlas id> (a loaded atlas),
// c/g/<resolution id> (a grant), c/x/<execution id> (an execution).
const (
	keyAtlases    = "c/a/"
	keyGrants     = "c/g/"
	keyExecutions = "c/x/"
)

// A CARP session is one workspace's agent: its session_id is the
// workspace id, its agent_id the workspace's agent (the workspace id when
// it has none).

// Execution statuses beyond CARP's: running while the tool has it.
const execRunning = "running"

// Execution is the record of one execute: written with its intent before
// the tool is called (audit before effect), and again with its result.
type Execution struct {
	ID             string `json:"execution_id"`
	RequestID      string `json:"request_id"`
	ResolutionID   string `json:"resolution_id"`
	SessionID      string `json:"session_id"`
	AgentID        string `json:"agent_id"`
	ActionID       string `json:"action_id"`
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	TraceID        string `json:"trace_id"`
	SpanID         string `json:"span_id"`
	ParentSpanID   string `json:"parent_span_id,omitempty"`
	// Request is the SHA-256 of what the execute asked (action,
	// resolution, parameters): a repeated idempotency_key must ask the same.
	Request    string   `json:"request_hash,omitempty"`
	Status     string   `json:"status"`                   // running, or the CARP status answered
	Emitted    int      `json:"events_emitted,omitempty"` // TRACE events of the execute so far
	StartedAt  string   `json:"started_at"`
	FinishedAt string   `json:"finished_at,omitempty"`
	Limits     []string `json:"limits,omitempty"` // the limit keys the execution counts against
	// Paths are the paths the request touches (the action's
	// path_parameters), PermitID the permit it ran under, if any
	// (approvals, issue 16).
	Paths    []string `json:"paths,omitempty"`
	PermitID string   `json:"permit_id,omitempty"`
	// Result is the CARPExecutionResult answered (set when it finished).
	Result json.RawMessage `json:"result,omitempty"`
	// Late is the status of a tool's answer after the execution timed
	// out, and LateOutputHash its output's hash (recorded, not answered).
	Late           string `json:"late,omitempty"`
	LateOutputHash string `json:"late_output_hash,omitempty"`
}

type storedAtlas struct {
	Seq      int             `json:"seq"` // load order
	Checksum string          `json:"checksum"`
	Manifest json.RawMessage `json:"manifest"`
}

// carpState is the engine's CARP state. Guarded by Engine.mu.
type carpState struct {
	atlases []*atlas.Manifest // in load order
	sums    map[string]string // atlas id -> checksum
	seq     int               // the last load's order
	grants  map[string]carp.Grant
	execs   map[string]Execution
	idem    map[string]string      // session "\x00" idempotency key -> execution id
	usage   map[string][]time.Time // limit key -> the executions counted, oldest first
	cache   map[string]cachedResolution
	set     *steward.Set // the atlases' steward checkpoints, compiled (nil: not yet)
}

type cachedResolution struct {
	out     carp.Output
	expires time.Time
}

// carpLayer is a batch's CARP changes (see traceLayer).
type carpLayer struct {
	atlases *[]*atlas.Manifest // the new list when one was loaded or unloaded
	sums    map[string]string
	seq     int
	grants  map[string]carp.Grant
	execs   map[string]Execution
	usage   map[string][]time.Time
	uncount map[string][]time.Time // executions counted that no tool got (uncounted by CarpFinish)
	set     *steward.Set           // the new atlases' checkpoints, compiled (nil: not yet)
}

func (e *Engine) loadCarp() error {
	st := carpState{sums: map[string]string{}, idem: map[string]string{}, usage: map[string][]time.Time{},
		cache: map[string]cachedResolution{}}
	stored, err := recstore.LoadAll[storedAtlas](e.db, keyAtlases)
	if err != nil {
		return err
	}
	list := make([]storedAtlas, 0, len(stored))
	for _, s := range stored {
		list = append(list, *s)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Seq < list[j].Seq })
	for _, s := range list {
		m, err := atlas.Parse("stored atlas", s.Manifest)
		if err != nil {
			return fmt.Errorf("load atlases: %w", err)
		}
		st.atlases = append(st.atlases, m)
		st.sums[m.AtlasID] = s.Checksum
		st.seq = max(st.seq, s.Seq)
	}
	grants, err := recstore.LoadAll[carp.Grant](e.db, keyGrants)
	if err != nil {
		return err
	}
	st.grants = make(map[string]carp.Grant, len(grants))
	for id, g := range grants {
		st.grants[id] = *g
	}
	execs, err := recstore.LoadAll[Execution](e.db, keyExecutions)
	if err != nil {
		return err
	}
	st.execs = make(map[string]Execution, len(execs))
	for id, x := range execs {
		st.execs[id] = *x
		st.noteExec(*x)
	}
	for k, ts := range st.usage {
		slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
		st.usage[k] = ts
	}
	e.carp = st
	return nil
}

// noteExec indexes x's idempotency key and counts its limits.
func (st *carpState) noteExec(x Execution) {
	if x.IdempotencyKey != "" {
		st.idem[x.SessionID+"\x00"+x.IdempotencyKey] = x.ID
	}
	if t, err := time.Parse(time.RFC3339Nano, x.StartedAt); err == nil {
		for _, k := range x.Limits {
			st.usage[k] = append(st.usage[k], t)
		}
	}
}

func (t *tx) carpOf() *carpLayer {
	b := t.e.open.tx
	if b.carp == nil {
		b.carp = &carpLayer{grants: map[string]carp.Grant{}, execs: map[string]Execution{}, usage: map[string][]time.Time{},
			uncount: map[string][]time.Time{}}
	}
	return b.carp
}

func (t *tx) carpLayerOrNil() *carpLayer {
	if t.e.open == nil {
		return nil
	}
	return t.e.open.tx.carp
}

func (t *tx) atlases() ([]*atlas.Manifest, map[string]string) {
	if l := t.carpLayerOrNil(); l != nil && l.atlases != nil {
		return *l.atlases, l.sums
	}
	return t.e.carp.atlases, t.e.carp.sums
}

func (t *tx) carpGrant(id string) (carp.Grant, bool) {
	if l := t.carpLayerOrNil(); l != nil {
		if g, ok := l.grants[id]; ok {
			return g, true
		}
	}
	g, ok := t.e.carp.grants[id]
	return g, ok
}

func (t *tx) execution(id string) (Execution, bool) {
	if l := t.carpLayerOrNil(); l != nil {
		if x, ok := l.execs[id]; ok {
			return x, true
		}
	}
	x, ok := t.e.carp.execs[id]
	return x, ok
}

func (t *tx) idempotent(session, key string) (Execution, bool) {
	if key == "" {
		return Execution{}, false
	}
	if l := t.carpLayerOrNil(); l != nil {
		for _, x := range l.execs {
			if x.SessionID == session && x.IdempotencyKey == key {
				return x, true
			}
		}
	}
	id, ok := t.e.carp.idem[session+"\x00"+key]
	if !ok {
		return Execution{}, false
	}
	return t.execution(id)
}

// usage counts the executions of limit l within its window at now, and
// says when the oldest counted leaves it.
func (t *tx) usage(l carp.Limit, now time.Time) (int, time.Time) {
	all := t.e.carp.usage[l.Key]
	if cl := t.carpLayerOrNil(); cl != nil {
		all = append(slices.Clip(all), cl.usage[l.Key]...)
		for _, u := range cl.uncount[l.Key] {
			if i := slices.IndexFunc(all, u.Equal); i >= 0 {
				all = slices.Delete(slices.Clone(all), i, i+1)
			}
		}
	}
	n, oldest := 0, time.Time{}
	for _, ts := range all {
		if l.Window > 0 && !ts.After(now.Add(-time.Duration(l.Window)*time.Second)) {
			continue
		}
		if n == 0 || ts.Before(oldest) {
			oldest = ts
		}
		n++
	}
	if n == 0 || l.Window == 0 {
		return n, time.Time{}
	}
	return n, oldest.Add(time.Duration(l.Window) * time.Second)
}

func (t *tx) putGrant(g carp.Grant) error {
	if err := t.step("grant"); err != nil {
		return err
	}
	t.carpOf().grants[g.ResolutionID] = g
	return recstore.Put(t.txn, keyGrants, g.ResolutionID, &g)
}

func (t *tx) putExecution(x Execution, count []string, at time.Time) error {
	if err := t.step("execution"); err != nil {
		return err
	}
	l := t.carpOf()
	l.execs[x.ID] = x
	for _, k := range count {
		l.usage[k] = append(l.usage[k], at)
	}
	return recstore.Put(t.txn, keyExecutions, x.ID, &x)
}

// applyCarp makes a committed batch's CARP changes the engine's.
func (e *Engine) applyCarp(t *tx) {
	l := t.carp
	if l == nil {
		return
	}
	if l.atlases != nil {
		e.carp.atlases, e.carp.sums, e.carp.seq = *l.atlases, l.sums, l.seq
		clear(e.carp.cache) // §7.2: invalidated when an atlas changes
		e.carp.set = l.set  // and the checkpoints' cached evaluations with their Set
	}
	for id, g := range l.grants {
		e.carp.grants[id] = g
	}
	for id, x := range l.execs {
		e.carp.execs[id] = x
		if x.IdempotencyKey != "" {
			e.carp.idem[x.SessionID+"\x00"+x.IdempotencyKey] = x.ID
		}
	}
	for k, ts := range l.usage {
		e.carp.usage[k] = append(e.carp.usage[k], ts...)
	}
	for k, ts := range l.uncount {
		for _, u := range ts {
			if i := slices.IndexFunc(e.carp.usage[k], u.Equal); i >= 0 {
				e.carp.usage[k] = slices.Delete(e.carp.usage[k], i, i+1)
			}
		}
	}
}

// Executions returns the recorded executions of session (every one when
// session is ""), oldest first.
func (e *Engine) Executions(session string) []Execution {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []Execution
	for _, x := range e.carp.execs {
		if session == "" || x.SessionID == session {
			out = append(out, x)
		}
	}
	slices.SortFunc(out, func(a, b Execution) int { return strings.Compare(a.StartedAt, b.StartedAt) })
	return out
}
