package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/uuid"

	"github.com/wacpd/wacpd/trace"
)

// The TRACE log (issue 15): every TRACE event of every CARP session,
// written in the commit of the effect it describes, chained per session
// (trace.Seal) and appended to one Merkle tree (trace.Tree) whose root the
// daemon signs with the WACP trail's tree head (SignTreeHead). The WACP
// trail's event registry is closed (Trail spec §9), so governance events
// live here and not in it. Keys (docs/formats.md):
//
//	r/e/<seq>            the event (its JSON), seq the 16-digit hex index in the log
//	r/s/<session>/<seq>  an index of a session's events (empty value)
//	r/h/<session>        the session's last event (its JSON)
//	r/t                  the tree: {"size":n,"hashes":[...]} (the compact range)
const (
	keyTraceEvent = "r/e/"
	keyTraceIndex = "r/s/"
	keyTraceHead  = "r/h/"
)

var keyTraceTree = []byte("r/t")

// traceState is the engine's TRACE log: the sessions' last events and the
// tree. Guarded by Engine.mu; changed only by apply.
type traceState struct {
	heads map[string]trace.Event
	tree  *trace.Tree
}

// traceLayer is a batch's TRACE events, as its operations see them (the
// batch's first layer holds it: an operation that fails after writing
// poisons the whole batch, so nothing of it is kept).
type traceLayer struct {
	heads map[string]trace.Event
	tree  *trace.Tree // a copy of the engine's, grown by this batch; nil until an event
}

type treeRecord struct {
	Size   uint64   `json:"size"`
	Hashes [][]byte `json:"hashes"`
}

func (e *Engine) loadTrace() error {
	st := traceState{heads: map[string]trace.Event{}, tree: trace.NewTree()}
	err := e.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte(keyTraceHead), PrefetchValues: true})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			var ev trace.Event
			if err := it.Item().Value(func(b []byte) error { return json.Unmarshal(b, &ev) }); err != nil {
				return fmt.Errorf("decode %s: %w", it.Item().Key(), err)
			}
			st.heads[ev.SessionID] = ev
		}
		item, err := txn.Get(keyTraceTree)
		if err == badger.ErrKeyNotFound {
			return nil
		}
		if err != nil {
			return err
		}
		var tr treeRecord
		if err := item.Value(func(b []byte) error { return json.Unmarshal(b, &tr) }); err != nil {
			return fmt.Errorf("decode %s: %w", keyTraceTree, err)
		}
		st.tree, err = trace.LoadTree(tr.Size, tr.Hashes)
		return err
	})
	if err != nil {
		return fmt.Errorf("load the TRACE log: %w", err)
	}
	e.trace = st
	return nil
}

// traceOf returns the batch's TRACE layer.
func (t *tx) traceOf() *traceLayer {
	b := t.e.open.tx
	if b.traces == nil {
		b.traces = &traceLayer{heads: map[string]trace.Event{}}
	}
	return b.traces
}

// head returns session's last event as the batch sees it.
func (t *tx) traceHead(session string) (trace.Event, bool) {
	if t.e.open != nil && t.e.open.tx.traces != nil {
		if ev, ok := t.e.open.tx.traces.heads[session]; ok {
			return ev, true
		}
	}
	ev, ok := t.e.trace.heads[session]
	return ev, ok
}

// span is where an event goes: its session, trace and span.
type span struct {
	session, trace, span string
	parent               *string
}

// newUUID returns a UUIDv7 (CARP's ids, TRACE's event ids).
func newUUID() string { return uuid.Must(uuid.NewV7()).String() }

// traceEmit writes one TRACE event of sp with payload, chained after the
// session's last, and appends it to the log's tree.
func (t *tx) traceEmit(sp span, typ string, payload map[string]any) (trace.Event, error) {
	if err := t.step("trace"); err != nil {
		return trace.Event{}, err
	}
	p, err := json.Marshal(payload)
	if err != nil {
		return trace.Event{}, fmt.Errorf("trace payload of %s: %w", typ, err)
	}
	var prev *trace.Event
	if h, ok := t.traceHead(sp.session); ok {
		prev = &h
	}
	ev, err := trace.Seal(trace.Event{
		EventID: newUUID(), TraceID: sp.trace, SpanID: sp.span, ParentSpanID: sp.parent, SessionID: sp.session,
		Timestamp: trace.FormatTime(t.next()), EventType: typ, Payload: p,
	}, prev)
	if err != nil {
		return trace.Event{}, err
	}
	l := t.traceOf()
	if l.tree == nil {
		l.tree = t.e.trace.tree.Clone()
	}
	seq := l.tree.Size()
	if err := l.tree.Append(ev.EventHash); err != nil {
		return trace.Event{}, err
	}
	line, err := json.Marshal(ev)
	if err != nil {
		return trace.Event{}, err
	}
	k := traceSeq(seq)
	if err := t.txn.Set([]byte(keyTraceEvent+k), line); err != nil {
		return trace.Event{}, err
	}
	if err := t.txn.Set([]byte(keyTraceIndex+sp.session+"/"+k), nil); err != nil {
		return trace.Event{}, err
	}
	l.heads[sp.session] = ev // its r/h/ and the tree's r/t: once per batch (writeTraceState)
	t.emitted++
	return ev, nil
}

func traceSeq(n uint64) string {
	s := strconv.FormatUint(n, 16)
	for len(s) < 16 {
		s = "0" + s
	}
	return s
}

// writeTraceState writes, once per batch and before its block is flushed,
// what the batch's events changed besides themselves: the last event of
// each session they went to (r/h/) and the tree (r/t). Written per event,
// they were rewritten, and recorded in the block, once per event.
func (t *tx) writeTraceState() error {
	l := t.traces
	if l == nil || l.tree == nil {
		return nil
	}
	for s, ev := range l.heads {
		line, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		if err := t.txn.Set([]byte(keyTraceHead+s), line); err != nil {
			return err
		}
	}
	tr, err := json.Marshal(treeRecord{Size: l.tree.Size(), Hashes: l.tree.Hashes()})
	if err != nil {
		return err
	}
	return t.txn.Set(keyTraceTree, tr)
}

// applyTrace makes a committed batch's events the engine's.
func (e *Engine) applyTrace(t *tx) {
	if t.traces == nil {
		return
	}
	for s, ev := range t.traces.heads {
		e.trace.heads[s] = ev
	}
	if t.traces.tree != nil {
		e.trace.tree = t.traces.tree
	}
}

// TraceEvents returns the events of session (every session's when it is
// ""), in log order, from log index from (0: from the start), at most
// limit of them, and the index to read on from (0 when none are left).
func (e *Engine) TraceEvents(ctx context.Context, session string, from uint64, limit int) ([]trace.Event, uint64, error) {
	if err := e.settle(ctx); err != nil {
		return nil, 0, err
	}
	if limit <= 0 {
		limit = 1000
	}
	var out []trace.Event
	var next uint64
	err := e.db.View(func(txn *badger.Txn) error {
		prefix := []byte(keyTraceEvent)
		if session != "" {
			prefix = []byte(keyTraceIndex + session + "/")
		}
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix, PrefetchValues: session == ""})
		defer it.Close()
		for it.Seek(append(append([]byte{}, prefix...), traceSeq(from)...)); it.Valid(); it.Next() {
			k := it.Item().Key()
			seq, err := strconv.ParseUint(string(k[len(prefix):]), 16, 64)
			if err != nil {
				return fmt.Errorf("TRACE key %q: %w", k, err)
			}
			if len(out) == limit {
				next = seq
				return nil
			}
			var line []byte
			if session == "" {
				line, err = it.Item().ValueCopy(nil)
			} else {
				var item *badger.Item
				if item, err = txn.Get([]byte(keyTraceEvent + traceSeq(seq))); err == nil {
					line, err = item.ValueCopy(nil)
				}
			}
			if err != nil {
				return fmt.Errorf("TRACE event %d: %w", seq, err)
			}
			var ev trace.Event
			if err := json.Unmarshal(line, &ev); err != nil {
				return fmt.Errorf("TRACE event %d: %w", seq, err)
			}
			out = append(out, ev)
		}
		return nil
	})
	return out, next, err
}

// TraceSize returns the number of events in the TRACE log and its root.
func (e *Engine) TraceSize() (uint64, []byte) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.trace.tree.Size(), e.trace.tree.Root()
}

// TraceLen returns the number of events in the TRACE log.
func (e *Engine) TraceLen() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.trace.tree.Size()
}
