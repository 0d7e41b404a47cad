package runtime

import (
	"fmt"
	"time"

	"github.com/wacpd/wacpd/checkpointchain"
	"github.com/wacpd/wacpd/clock"
	"github.com/wacpd/wacpd/internal/seglog"
	agentsignal "github.com/wacpd/wacpd/signal"
	"github.com/wacpd/wacpd/signal/outboxstore"
	"github.com/wacpd/wacpd/steward"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/trail/traillog"
	"github.com/wacpd/wacpd/workspace"
	"github.com/wacpd/wacpd/workspace/wsstore"
)

// tx is one commit in the making: a layer over the open batch (see
// committer.go). Operations read the engine's state through it and change
// only tx-local copies. A commit that succeeds merges its layer into the
// batch; the batch's copies replace the engine's state only after the
// Badger transaction committed durably, so a failed commit leaves nothing
// behind, in memory or on disk.
type tx struct {
	e        *Engine
	parent   *tx         // the batch layer; nil for the batch itself
	txn      *seglog.Txn // the batch's transaction: its writes are recorded in its block
	batch    *traillog.Batch
	dirty    map[string]*workspace.Workspace // changed copies, by id
	created  map[string]*workspace.Workspace // new workspaces (also in dirty)
	chains   map[string]checkpointchain.Chain
	outbox   []agentsignal.OutboxItem
	mark     outboxstore.Mark            // the outbox mark the batch writes (takeAcks)
	inboxed  map[string]bool             // workspaces whose inbox got an envelope
	leased   bool                        // a delivery lease was taken (lease.go)
	later    []func()                    // run after a successful commit
	steps    *int                        // writes started in the whole batch (shared)
	detail   string                      // free text for the next workspace_state_changed, then cleared
	reasons  []string                    // reasons of the rejections recorded, kept only for an observer
	reloaded bool                        // the batch that ends degraded mode (Commit.Reloaded)
	gov      *govLayer                   // changed tasks, graphs, gates and users (gov.go); nil until one changes
	carp     *carpLayer                  // the batch's CARP changes (carp.go; on the batch's layer only)
	appr     *apprLayer                  // the batch's approval changes (approvals.go; on the batch's layer only)
	stew     map[string]*steward.Session // the batch's steward session states (steward.go; on the batch's layer only)
	traces   *traceLayer                 // the batch's TRACE events (tracelog.go; on the batch's layer only)
	emitted  int                         // TRACE events this layer's operation wrote (telemetry_link.events_emitted)
}

// CommitObserver is told of durable commits and of the rejections they
// record (the daemon's metrics). It is called with the engine's lock held
// and must not block or call the Engine.
type CommitObserver interface {
	// Committed reports one durable write of ops operations that took d
	// from the start of the commit.
	Committed(d time.Duration, ops int)
	// Rejected reports one checkpoint_rejected or envelope_rejected entry
	// made durable, by its reason.
	Rejected(reason string)
}

func newLayer(e *Engine, parent *tx, txn *seglog.Txn, batch *traillog.Batch, steps *int) *tx {
	return &tx{
		e: e, parent: parent, txn: txn, batch: batch, steps: steps,
		dirty: map[string]*workspace.Workspace{}, created: map[string]*workspace.Workspace{},
		chains: map[string]checkpointchain.Chain{}, inboxed: map[string]bool{},
	}
}

// commit runs fn on a new layer of the open batch. The caller runs inside
// Engine.run (the committer holds e.mu). If fn fails before writing
// anything, its layer is dropped and the batch goes on; if it fails after
// writing, the batch is poisoned and every operation in it fails. The
// effect is durable, and visible to readers, once the batch committed.
func (e *Engine) commit(fn func(*tx) error) error {
	if e.closed {
		return ErrClosed
	}
	b := e.open
	if b == nil {
		panic("runtime: commit outside Engine.run")
	}
	if b.poisoned != nil {
		return b.poisoned
	}
	t := newLayer(e, b.tx, b.tx.txn, b.tx.batch, b.tx.steps)
	before := *b.tx.steps
	if err := fn(t); err != nil {
		if *b.tx.steps != before {
			b.poisoned = fmt.Errorf("%w: an operation failed after writing: %v", ErrStorage, err)
		}
		return err
	}
	b.tx.merge(t)
	return nil
}

// merge folds layer c into t.
func (t *tx) merge(c *tx) {
	t.mergeGov(c)
	for id, w := range c.dirty {
		t.dirty[id] = w
	}
	for id, w := range c.created {
		t.created[id] = w
	}
	for id, ch := range c.chains {
		t.chains[id] = ch
	}
	for id := range c.inboxed {
		t.inboxed[id] = true
	}
	t.leased = t.leased || c.leased
	t.outbox = append(t.outbox, c.outbox...)
	t.later = append(t.later, c.later...)
	t.reasons = append(t.reasons, c.reasons...)
}

// apply makes a committed batch the engine's state. Caller holds e.mu.
func (e *Engine) apply(t *tx) {
	e.applyGov(t)
	e.applyCarp(t)
	e.applyApprovals(t)
	e.applySteward(t)
	e.applyTrace(t)
	for id, w := range t.dirty {
		e.ws[id] = w
	}
	for id, c := range t.chains {
		e.chains[id] = c
	}
	for id := range t.inboxed {
		if ch, ok := e.inboxSig[id]; ok {
			close(ch)
			delete(e.inboxSig, id)
		}
	}
	if t.leased {
		e.kickLeases()
	}
	for _, f := range t.later {
		f()
	}
	if t.mark.Seq > e.outMark.Seq {
		e.outMark = t.mark
	}
	c := Commit{Entries: t.batch.Entries(), Outbox: t.outbox, Reloaded: t.reloaded}
	for _, fn := range e.onCommit {
		fn(c)
	}
}

// step calls the failAt test seam; production code never sets it.
func (t *tx) step(name string) error {
	*t.steps++
	if t.e.cfg.failAt != nil {
		if err := t.e.cfg.failAt(name); err != nil {
			return fmt.Errorf("%w: injected at %s: %v", ErrStorage, name, err)
		}
	}
	return nil
}

// after queues fn to run after a successful commit.
func (t *tx) after(fn func()) { t.later = append(t.later, fn) }

// next returns a fresh timestamp.
func (t *tx) next() time.Time { return t.e.clock.Next() }

// ws returns the tx's copy of workspace id, or nil.
func (t *tx) ws(id string) *workspace.Workspace {
	if w, ok := t.dirty[id]; ok {
		return w
	}
	w := t.base(id)
	if w == nil {
		return nil
	}
	c := w.Clone()
	t.dirty[id] = c
	return c
}

// base returns id's record below this layer.
func (t *tx) base(id string) *workspace.Workspace {
	if t.parent != nil {
		return t.parent.peek(id)
	}
	return t.e.ws[id]
}

// peek returns the current record of id without copying; do not modify it.
func (t *tx) peek(id string) *workspace.Workspace {
	if w, ok := t.dirty[id]; ok {
		return w
	}
	return t.base(id)
}

// snapshot returns all records as this tx sees them (for Cascade).
func (t *tx) snapshot() (map[string]*workspace.Workspace, map[string][]string) {
	all := make(map[string]*workspace.Workspace, len(t.e.ws)+len(t.created))
	kids := map[string][]string{}
	for id := range t.e.ws {
		all[id] = t.peek(id)
	}
	for l := t; l != nil; l = l.parent {
		for id := range l.created {
			all[id] = t.peek(id)
		}
	}
	for id, w := range all {
		if p := w.ParentID(); p != "" {
			kids[p] = append(kids[p], id)
		}
	}
	return all, kids
}

// put writes a workspace record.
func (t *tx) put(w *workspace.Workspace) error {
	if err := t.step("workspace"); err != nil {
		return err
	}
	t.dirty[w.ID] = w
	return wsstore.Put(t.txn, w)
}

// chain returns workspace id's chain as this tx sees it.
func (t *tx) chain(id string) checkpointchain.Chain {
	if c, ok := t.chains[id]; ok {
		return c
	}
	if t.parent != nil {
		return t.parent.chain(id)
	}
	return t.e.chains[id]
}

// appendAt writes one trail entry at ts. ws is the workspace whose local
// trail gets the entry; entries about a workspace that is already terminal
// go to the global trail only (ws ""), so nothing is recorded in a local
// trail after its terminal state.
func (t *tx) appendAt(ts time.Time, ws, actor string, typ trail.EventType, body any) error {
	if err := t.step(string(typ)); err != nil {
		return err
	}
	if w := t.peek(ws); w != nil && w.State.Terminal() {
		ws = ""
	}
	if m, ok := body.(map[string]any); ok && t.e.cfg.Observer != nil && (typ == trail.EventCheckpointRejected || typ == trail.EventEnvelopeRejected) {
		t.reasons = append(t.reasons, fmt.Sprint(m["reason"]))
	}
	_, err := t.batch.Append(traillog.Event{
		ID: t.e.ids.New(ts), Timestamp: clock.Format(ts), Workspace: ws,
		Actor: actor, Type: typ, Body: body,
	})
	return err
}

// append writes one trail entry at a fresh timestamp. A "timestamp" key in
// body is set to that timestamp.
func (t *tx) append(ws, actor string, typ trail.EventType, body map[string]any) (time.Time, error) {
	ts := t.next()
	if _, ok := body["timestamp"]; ok {
		body["timestamp"] = clock.Format(ts)
	}
	return ts, t.appendAt(ts, ws, actor, typ, body)
}
