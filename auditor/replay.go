package auditor

import (
	"encoding/json"
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/wacpd/wacpd/checkpointchain"
	"github.com/wacpd/wacpd/trail"
)

// State is what the trail says exists: every workspace's role, parent and
// state, and every workspace's checkpoint chain (WACP: if it is in the
// trail it happened; if not, it did not).
type State struct {
	Workspaces map[string]WorkspaceState `json:"workspaces"`
	Chains     map[string]Chain          `json:"chains"` // by workspace; absent when it has no checkpoint
}

// WorkspaceState is a workspace as the trail leaves it.
type WorkspaceState struct {
	Role   string `json:"role"`
	Parent string `json:"parent"` // "" for the root
	State  string `json:"state"`
}

// Chain is a workspace's checkpoint chain as the trail leaves it.
type Chain struct {
	Head      string `json:"head"`       // the last checkpoint's id
	Count     int    `json:"count"`      // checkpoints in the chain; negative when not known (Diff skips it)
	LastFinal string `json:"last_final"` // the most recent final checkpoint's id, "" if none
}

// Checkpoints returns the number of checkpoints in s's chains.
func (s State) Checkpoints() int {
	n := 0
	for _, c := range s.Chains {
		n += max(c.Count, 0)
	}
	return n
}

// Replayer rebuilds State from entries fed in global order. The zero
// value is not ready: use NewReplayer.
type Replayer struct {
	st   State
	last string // id of the last entry applied
}

// NewReplayer returns a replayer of an empty trail.
func NewReplayer() *Replayer {
	return &Replayer{st: State{Workspaces: map[string]WorkspaceState{}, Chains: map[string]Chain{}}}
}

// Last returns the id of the last entry applied, "" before the first.
func (r *Replayer) Last() string { return r.last }

// State returns a copy of the state so far.
func (r *Replayer) State() State {
	out := State{Workspaces: make(map[string]WorkspaceState, len(r.st.Workspaces)), Chains: make(map[string]Chain, len(r.st.Chains))}
	for k, v := range r.st.Workspaces {
		out.Workspaces[k] = v
	}
	for k, v := range r.st.Chains {
		out.Chains[k] = v
	}
	return out
}

// Apply applies one entry (global or local view). Entries of types that
// change no workspace or chain are skipped. An entry that contradicts the
// state so far is an error wrapping ErrInconsistent.
func (r *Replayer) Apply(e trail.Entry) error {
	if err := r.apply(e); err != nil {
		return fmt.Errorf("replay entry %s (%s): %w", e.ID, e.EventType, err)
	}
	r.last = e.ID
	return nil
}

func (r *Replayer) apply(e trail.Entry) error {
	switch e.EventType {
	case trail.EventWorkspaceCreated:
		var b struct {
			ID     string  `json:"workspace_id"`
			Role   string  `json:"role"`
			Parent *string `json:"parent"`
		}
		if err := json.Unmarshal(e.Body, &b); err != nil {
			return err
		}
		if _, dup := r.st.Workspaces[b.ID]; dup || b.ID == "" {
			return fmt.Errorf("%w: workspace %q created twice", ErrInconsistent, b.ID)
		}
		parent := ""
		if b.Parent != nil {
			parent = *b.Parent
			if _, ok := r.st.Workspaces[parent]; !ok {
				return fmt.Errorf("%w: workspace %s created under unknown parent %s", ErrInconsistent, b.ID, parent)
			}
		}
		r.st.Workspaces[b.ID] = WorkspaceState{Role: b.Role, Parent: parent, State: "idle"}
	case trail.EventWorkspaceStateChanged:
		var b struct {
			ID   string `json:"workspace_id"`
			From string `json:"from_state"`
			To   string `json:"to_state"`
		}
		if err := json.Unmarshal(e.Body, &b); err != nil {
			return err
		}
		w, ok := r.st.Workspaces[b.ID]
		switch {
		case !ok:
			return fmt.Errorf("%w: state change of unknown workspace %s", ErrInconsistent, b.ID)
		case w.State != b.From:
			return fmt.Errorf("%w: workspace %s moves from %s but is %s", ErrInconsistent, b.ID, b.From, w.State)
		}
		w.State = b.To
		r.st.Workspaces[b.ID] = w
	case trail.EventWorkspaceReparented:
		var b struct {
			ID        string `json:"workspace_id"`
			OldParent string `json:"old_parent"`
			NewParent string `json:"new_parent"`
		}
		if err := json.Unmarshal(e.Body, &b); err != nil {
			return err
		}
		w, ok := r.st.Workspaces[b.ID]
		switch {
		case !ok:
			return fmt.Errorf("%w: reparenting of unknown workspace %s", ErrInconsistent, b.ID)
		case w.Parent != b.OldParent:
			return fmt.Errorf("%w: workspace %s moves from parent %s but its parent is %s", ErrInconsistent, b.ID, b.OldParent, w.Parent)
		}
		if _, ok := r.st.Workspaces[b.NewParent]; !ok {
			return fmt.Errorf("%w: workspace %s moves under unknown parent %s", ErrInconsistent, b.ID, b.NewParent)
		}
		w.Parent = b.NewParent
		r.st.Workspaces[b.ID] = w
	case trail.EventCheckpointCreated:
		var b checkpointBody
		if err := json.Unmarshal(e.Body, &b); err != nil {
			return err
		}
		if _, ok := r.st.Workspaces[b.Workspace]; !ok {
			return fmt.Errorf("%w: checkpoint %s of unknown workspace %s", ErrInconsistent, b.CheckpointID, b.Workspace)
		}
		c := r.st.Chains[b.Workspace]
		parent := ""
		if b.Parent != nil {
			parent = *b.Parent
		}
		if parent != c.Head {
			return fmt.Errorf("%w: checkpoint %s has parent %q, the chain of %s has head %q", ErrInconsistent, b.CheckpointID, parent, b.Workspace, c.Head)
		}
		c.Head, c.Count = b.CheckpointID, c.Count+1
		if b.Status == checkpointchain.StatusFinal {
			c.LastFinal = b.CheckpointID
		}
		r.st.Chains[b.Workspace] = c
	}
	return nil
}

// Replay rebuilds the state from the trail alone: entries must yield the
// whole global trail in global order. It returns the first error entries
// yields, or the first entry that contradicts the state so far (wrapping
// ErrInconsistent).
func Replay(entries iter.Seq2[trail.Entry, error]) (State, error) {
	r := NewReplayer()
	for e, err := range entries {
		if err != nil {
			return State{}, err
		}
		if err := r.Apply(e); err != nil {
			return State{}, err
		}
	}
	return r.State(), nil
}

// Difference is one way the replayed state and the live state disagree.
type Difference struct {
	Workspace string `json:"workspace"`
	Field     string `json:"field"` // "workspace", role, parent, state, "chain", head, count, last_final
	Replayed  string `json:"replayed"`
	Live      string `json:"live"`
}

func (d Difference) String() string {
	return fmt.Sprintf("workspace %s: %s: the trail says %s, the live state %s", d.Workspace, d.Field, orNone(d.Replayed), orNone(d.Live))
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return fmt.Sprintf("%q", s)
}

// Diff returns every difference between the replayed and the live state,
// sorted by workspace and field. A chain Count below zero on either side
// is not compared.
func Diff(replayed, live State) []Difference {
	var out []Difference
	add := func(ws, field, r, l string) {
		if r != l {
			out = append(out, Difference{Workspace: ws, Field: field, Replayed: r, Live: l})
		}
	}
	for _, ws := range union(replayed.Workspaces, live.Workspaces) {
		r, inR := replayed.Workspaces[ws]
		l, inL := live.Workspaces[ws]
		if inR != inL {
			add(ws, "workspace", exists(inR), exists(inL))
			continue
		}
		add(ws, "role", r.Role, l.Role)
		add(ws, "parent", r.Parent, l.Parent)
		add(ws, "state", r.State, l.State)
	}
	for _, ws := range union(replayed.Chains, live.Chains) {
		r, inR := replayed.Chains[ws]
		l, inL := live.Chains[ws]
		if inR != inL {
			add(ws, "chain", exists(inR), exists(inL))
			continue
		}
		add(ws, "head", r.Head, l.Head)
		if r.Count >= 0 && l.Count >= 0 {
			add(ws, "count", fmt.Sprint(r.Count), fmt.Sprint(l.Count))
		}
		add(ws, "last_final", r.LastFinal, l.LastFinal)
	}
	slices.SortStableFunc(out, func(a, b Difference) int {
		return strings.Compare(a.Workspace, b.Workspace)
	})
	return out
}

func exists(ok bool) string {
	if ok {
		return "exists"
	}
	return ""
}

func union[V any](a, b map[string]V) []string {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}
