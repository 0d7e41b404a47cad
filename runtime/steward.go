package runtime

import (
	"github.com/wacpd/wacpd/internal/recstore"
	"github.com/wacpd/wacpd/steward"
)

// Steward checkpoints in the engine (issue 17; the rules are package
// steward's): the compiled checkpoints of the loaded atlases (a cache of
// carpState, compiled again when the atlases change) and each session's
// checkpoint state, written in the commit of the operation that changed
// it, with its TRACE events. Key (docs/formats.md): c/s/<session>.
const keyStewardSessions = "c/s/"

// stewardState is the engine's steward state. Guarded by Engine.mu.
type stewardState struct {
	sessions map[string]*steward.Session
}

func (e *Engine) loadSteward() error {
	ss, err := recstore.LoadAll[steward.Session](e.db, keyStewardSessions)
	if err != nil {
		return err
	}
	e.stew = stewardState{sessions: make(map[string]*steward.Session, len(ss))}
	for id, s := range ss {
		e.stew.sessions[id] = s
	}
	return nil
}

// stewardSession returns a copy of session's checkpoint state as t sees
// it (a new one when it has none), and whether it had one.
func (t *tx) stewardSession(session string) (*steward.Session, bool) {
	if t.e.open != nil {
		if s, ok := t.e.open.tx.stew[session]; ok {
			return s.Clone(), true
		}
	}
	if s, ok := t.e.stew.sessions[session]; ok {
		return s.Clone(), true
	}
	return &steward.Session{}, false
}

func (t *tx) putStewardSession(session string, s *steward.Session) error {
	if err := t.step("steward"); err != nil {
		return err
	}
	b := t.e.open.tx
	if b.stew == nil {
		b.stew = map[string]*steward.Session{}
	}
	c := s.Clone()
	b.stew[session] = c
	return recstore.Put(t.txn, keyStewardSessions, session, c)
}

// applySteward makes a committed batch's session states the engine's.
func (e *Engine) applySteward(t *tx) {
	for id, s := range t.stew {
		e.stew.sessions[id] = s
	}
}

// stewardSet returns the checkpoints of the atlases t sees.
func (t *tx) stewardSet() (*steward.Set, error) {
	if l := t.carpLayerOrNil(); l != nil && l.atlases != nil {
		if l.set == nil {
			s, err := steward.Compile(*l.atlases)
			if err != nil {
				return nil, err
			}
			l.set = s
		}
		return l.set, nil
	}
	return t.e.stewardSetLocked()
}

// stewardSetLocked returns the checkpoints of the engine's atlases,
// compiled once per change of the atlases. Caller holds e.mu.
func (e *Engine) stewardSetLocked() (*steward.Set, error) {
	if e.carp.set == nil {
		s, err := steward.Compile(e.carp.atlases)
		if err != nil {
			return nil, err
		}
		e.carp.set = s
	}
	return e.carp.set, nil
}
