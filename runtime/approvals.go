package runtime

import (
	"slices"
	"sort"

	"github.com/wacpd/wacpd/approval"
	"github.com/wacpd/wacpd/internal/recstore"
)

// Operator approvals in the engine (issue 16; the rules are package
// approval's): each session's envelope (mode, what its approvals cover),
// its checkpoints (each held by a highway gate of type envelope_delivery:
// the action request is an envelope from the agent to a tool), the
// permits approvals issue, and the session's trust log. Written in the
// commit of the operation, with their TRACE events. Keys
// (docs/formats.md): c/e/<session> (envelope), c/k/<approval id>
// (checkpoint; the approval id is its gate's), c/p/<permit id>,
// c/t/<session> (the trust log, oldest first).
const (
	keyEnvelopes   = "c/e/"
	keyCheckpoints = "c/k/"
	keyPermits     = "c/p/"
	keyTrust       = "c/t/"
)

type trustLog struct {
	Events []approval.TrustEvent `json:"events"`
}

// apprState is the engine's approval state. Guarded by Engine.mu.
type apprState struct {
	envelopes map[string]approval.Envelope
	cps       map[string]approval.Checkpoint
	permits   map[string]approval.Permit
	bySession map[string][]string // session -> its permits' ids: an execute reads its session's, not all
	trust     map[string][]approval.TrustEvent
	sig       map[string]chan struct{} // closed when a checkpoint is decided (ApprovalStatus waits on it)
}

// notePermit indexes permit p by its session (once).
func (st *apprState) notePermit(p approval.Permit) {
	if _, ok := st.permits[p.ID]; !ok {
		st.bySession[p.Session] = append(st.bySession[p.Session], p.ID)
	}
	st.permits[p.ID] = p
}

// apprLayer is a batch's approval changes (on the batch's layer only).
type apprLayer struct {
	envelopes map[string]approval.Envelope
	cps       map[string]approval.Checkpoint
	permits   map[string]approval.Permit
	trust     map[string][]approval.TrustEvent
}

func (e *Engine) loadApprovals() error {
	st := apprState{envelopes: map[string]approval.Envelope{}, cps: map[string]approval.Checkpoint{},
		permits: map[string]approval.Permit{}, bySession: map[string][]string{}, trust: map[string][]approval.TrustEvent{},
		sig: map[string]chan struct{}{}}
	envs, err := recstore.LoadAll[approval.Envelope](e.db, keyEnvelopes)
	if err != nil {
		return err
	}
	for id, v := range envs {
		st.envelopes[id] = *v
	}
	cps, err := recstore.LoadAll[approval.Checkpoint](e.db, keyCheckpoints)
	if err != nil {
		return err
	}
	for id, v := range cps {
		st.cps[id] = *v
	}
	pms, err := recstore.LoadAll[approval.Permit](e.db, keyPermits)
	if err != nil {
		return err
	}
	for _, v := range pms {
		st.notePermit(*v)
	}
	logs, err := recstore.LoadAll[trustLog](e.db, keyTrust)
	if err != nil {
		return err
	}
	for id, v := range logs {
		st.trust[id] = v.Events
	}
	e.appr = st
	return nil
}

func (t *tx) apprOf() *apprLayer {
	b := t.e.open.tx
	if b.appr == nil {
		b.appr = &apprLayer{envelopes: map[string]approval.Envelope{}, cps: map[string]approval.Checkpoint{},
			permits: map[string]approval.Permit{}, trust: map[string][]approval.TrustEvent{}}
	}
	return b.appr
}

func (t *tx) apprLayerOrNil() *apprLayer {
	if t.e.open == nil {
		return nil
	}
	return t.e.open.tx.appr
}

func (t *tx) envelope(session string) approval.Envelope {
	if l := t.apprLayerOrNil(); l != nil {
		if v, ok := l.envelopes[session]; ok {
			return v
		}
	}
	return t.e.appr.envelopes[session]
}

func (t *tx) checkpoint(id string) (approval.Checkpoint, bool) {
	if l := t.apprLayerOrNil(); l != nil {
		if v, ok := l.cps[id]; ok {
			return v, true
		}
	}
	v, ok := t.e.appr.cps[id]
	return v, ok
}

// isCheckpoint reports whether gate id holds a control-plane checkpoint
// (an envelope_delivery gate whose subject is an execution, not an
// envelope).
func (t *tx) isCheckpoint(id string) bool {
	_, ok := t.checkpoint(id)
	return ok
}

func (t *tx) permit(id string) (approval.Permit, bool) {
	if l := t.apprLayerOrNil(); l != nil {
		if v, ok := l.permits[id]; ok {
			return v, true
		}
	}
	v, ok := t.e.appr.permits[id]
	return v, ok
}

// sessionPermits returns session's permits as t sees them, by id.
func (t *tx) sessionPermits(session string) []approval.Permit {
	seen := map[string]approval.Permit{}
	for _, id := range t.e.appr.bySession[session] {
		seen[id] = t.e.appr.permits[id]
	}
	if l := t.apprLayerOrNil(); l != nil {
		for id, p := range l.permits {
			if p.Session == session {
				seen[id] = p
			}
		}
	}
	out := make([]approval.Permit, 0, len(seen))
	for _, p := range seen {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func (t *tx) trustEvents(session string) []approval.TrustEvent {
	if l := t.apprLayerOrNil(); l != nil {
		if v, ok := l.trust[session]; ok {
			return v
		}
	}
	return t.e.appr.trust[session]
}

func (t *tx) putEnvelope(session string, v approval.Envelope) error {
	if err := t.step("envelope"); err != nil {
		return err
	}
	t.apprOf().envelopes[session] = v
	return recstore.Put(t.txn, keyEnvelopes, session, &v)
}

func (t *tx) putCheckpoint(v approval.Checkpoint) error {
	if err := t.step("checkpoint"); err != nil {
		return err
	}
	t.apprOf().cps[v.ApprovalID] = v
	return recstore.Put(t.txn, keyCheckpoints, v.ApprovalID, &v)
}

func (t *tx) putPermit(v approval.Permit) error {
	if err := t.step("permit"); err != nil {
		return err
	}
	t.apprOf().permits[v.ID] = v
	return recstore.Put(t.txn, keyPermits, v.ID, &v)
}

func (t *tx) appendTrust(session string, ev approval.TrustEvent) (approval.TrustEvent, error) {
	if err := t.step("trust"); err != nil {
		return ev, err
	}
	log := slices.Clone(t.trustEvents(session))
	ev.Seq = len(log) + 1
	log = append(log, ev)
	t.apprOf().trust[session] = log
	return ev, recstore.Put(t.txn, keyTrust, session, &trustLog{Events: log})
}

// applyApprovals makes a committed batch's approval changes the engine's,
// and wakes whoever waits on a checkpoint that changed.
func (e *Engine) applyApprovals(t *tx) {
	l := t.appr
	if l == nil {
		return
	}
	for id, v := range l.envelopes {
		e.appr.envelopes[id] = v
	}
	for id, v := range l.cps {
		e.appr.cps[id] = v
		if ch, ok := e.appr.sig[id]; ok {
			close(ch)
			delete(e.appr.sig, id)
		}
	}
	for _, v := range l.permits {
		e.appr.notePermit(v)
	}
	for id, v := range l.trust {
		e.appr.trust[id] = v
	}
}
