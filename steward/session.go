package steward

import (
	"cmp"
	"maps"
	"slices"
	"time"

	"github.com/wacpd/wacpd/atlas"
)

// Statuses of a checkpoint in a session.
const (
	StatusIdle    = ""        // not triggered, or done with
	StatusPending = "pending" // triggered, its questions unanswered
	StatusPassed  = "passed"  // answered (or nothing to answer); its effects applied
	StatusBlocked = "blocked" // an answer's on_invalid was block: its gated actions stay refused this session
)

// Capability states a checkpoint's effects set.
const (
	CapUnlocked = "unlocked"
	CapLocked   = "locked"
)

// Session is one CARP session's checkpoint state: what each checkpoint
// did, the capabilities checkpoints unlocked and locked, the action
// overlays, the active guidance and the contexts checkpoints injected.
// Version counts its changes (a resolution cached for one version is not
// answered for another).
type Session struct {
	Started      time.Time           `json:"started"`
	Ended        bool                `json:"ended,omitempty"`
	Version      int                 `json:"version"`
	Checkpoints  map[string]*CPState `json:"checkpoints,omitempty"`  // by Key
	Capabilities map[string]string   `json:"capabilities,omitempty"` // atlas "/" capability -> unlocked | locked
	Allow        []Overlay           `json:"allow,omitempty"`
	Deny         []Overlay           `json:"deny,omitempty"`
	Guidance     []ActiveGuidance    `json:"guidance,omitempty"`
	Contexts     []ContextRef        `json:"contexts,omitempty"`
	// Atlases are the checksums of the atlases the state is of: when one
	// changes (a new version loaded), what its checkpoints did is
	// forgotten and they start again.
	Atlases map[string]string `json:"atlases,omitempty"`
}

// CPState is one checkpoint's state in a session.
type CPState struct {
	Status    string    `json:"status,omitempty"`
	Instance  string    `json:"instance,omitempty"` // the last triggering's id
	Fired     int       `json:"fired"`
	LastFired time.Time `json:"last_fired,omitzero"`
	Count     int       `json:"count,omitempty"`    // count_interval: actions since it last fired
	Input     string    `json:"input,omitempty"`    // the hash of the input it last fired on
	Armed     int       `json:"armed,omitempty"`    // per-action checkpoints: answers not yet used by an execute
	Attempts  int       `json:"attempts,omitempty"` // answers to the current instance
	Action    string    `json:"action,omitempty"`   // per-action: the action it last fired for ("": any it gates)
	// EvalHeld: a blocking custom checkpoint whose evaluator failed holds
	// its actions until its evaluator answers (fail closed); it takes no
	// answers meanwhile.
	EvalHeld bool `json:"eval_held,omitempty"`
}

// Overlay is an allow_actions or deny_actions pattern a checkpoint put on
// its atlas's actions.
type Overlay struct {
	AtlasID    string `json:"atlas_id"`
	Pattern    string `json:"pattern"`
	Checkpoint string `json:"checkpoint_id"`
}

// ActiveGuidance is a guidance block in effect in a session.
type ActiveGuidance struct {
	AtlasID    string         `json:"atlas_id"`
	AtlasRef   string         `json:"atlas_ref"`
	Checkpoint string         `json:"checkpoint_id"`
	Guidance   atlas.Guidance `json:"guidance"`
	Hash       string         `json:"content_hash"`
	Seq        int            `json:"seq"` // order of injection
}

// ContextRef is a context block a checkpoint injected.
type ContextRef struct {
	AtlasID    string `json:"atlas_id"`
	ContextID  string `json:"context_id"`
	Checkpoint string `json:"checkpoint_id"`
}

// Clone returns a deep copy of s (nil: a new session).
func (s *Session) Clone() *Session {
	if s == nil {
		return &Session{}
	}
	c := *s
	c.Checkpoints = make(map[string]*CPState, len(s.Checkpoints))
	for k, v := range s.Checkpoints {
		x := *v
		c.Checkpoints[k] = &x
	}
	c.Capabilities = maps.Clone(s.Capabilities)
	c.Atlases = maps.Clone(s.Atlases)
	c.Allow, c.Deny = slices.Clone(s.Allow), slices.Clone(s.Deny)
	c.Guidance, c.Contexts = slices.Clone(s.Guidance), slices.Clone(s.Contexts)
	return &c
}

func (s *Session) state(key string) *CPState {
	if s.Checkpoints == nil {
		s.Checkpoints = map[string]*CPState{}
	}
	st, ok := s.Checkpoints[key]
	if !ok {
		st = &CPState{}
		s.Checkpoints[key] = st
	}
	return st
}

func (s *Session) peek(key string) CPState {
	if st, ok := s.Checkpoints[key]; ok {
		return *st
	}
	return CPState{}
}

// Block is a blocking checkpoint that holds an action back.
type Block struct {
	Def    *Def
	Status string // pending or blocked
}

// Gate returns the checkpoint (highest priority first) that holds back
// action of atlas atlasID at risk tier tier in s, or nil.
func (set *Set) Gate(s *Session, atlasID, action, tier string) *Block {
	if s == nil {
		return nil
	}
	for _, d := range set.defs {
		if d.Mode != atlas.ModeBlocking {
			continue
		}
		st := s.peek(d.Key)
		if (st.Status == StatusPending || st.Status == StatusBlocked) && d.Gates(atlasID, action, tier) {
			return &Block{Def: d, Status: st.Status}
		}
	}
	return nil
}

// Denial is why the session's checkpoints deny an action.
type Denial struct {
	Reason      string
	Checkpoint  string // the checkpoint_id responsible
	Permanent   bool   // for the session
	Remediation string
}

// Deny returns why s's checkpoints deny action of atlas m at tier (nil:
// they do not), and whether a checkpoint's allow_actions covers it. A
// denial wins over an allow; neither overrides the atlas's deny policies
// (the resolver applies those first).
func (set *Set) Deny(s *Session, m *atlas.Manifest, action, tier string) (*Denial, bool) {
	if b := set.Gate(s, m.AtlasID, action, tier); b != nil {
		if b.Status == StatusBlocked {
			return &Denial{Reason: "checkpoint " + b.Def.CP.CheckpointID + " refused this session's answers (on_invalid block)",
				Checkpoint: b.Def.CP.CheckpointID, Permanent: true}, false
		}
		if s.peek(b.Def.Key).EvalHeld {
			return &Denial{Reason: "checkpoint " + b.Def.CP.CheckpointID + " waits for its evaluator (it failed to answer)",
				Checkpoint: b.Def.CP.CheckpointID, Remediation: "resolve again later: the checkpoint takes no answers while it waits"}, false
		}
		return &Denial{Reason: "checkpoint " + b.Def.CP.CheckpointID + " is pending: answer its questions (carp.respond) first",
			Checkpoint: b.Def.CP.CheckpointID, Remediation: "answer checkpoint " + b.Def.CP.CheckpointID + " with carp.respond, then resolve again"}, false
	}
	for _, c := range m.Capabilities {
		if !capHas(c, action) {
			continue
		}
		if by, locked := set.locked(s, m.AtlasID, c.CapabilityID); locked {
			d := &Denial{Reason: "capability " + c.CapabilityID + " is locked" + by, Checkpoint: c.CapabilityID,
				Remediation: "a checkpoint that unlocks " + c.CapabilityID + " passes first"}
			if g := set.gateOf(m.AtlasID, c.CapabilityID); g != nil {
				d.Checkpoint = g.CP.CheckpointID
				d.Remediation = "name " + action + " in scope.actions (or execute it) to be asked checkpoint " + g.CP.CheckpointID + ", then answer it"
			}
			return d, false
		}
	}
	if s != nil {
		for _, o := range s.Deny {
			if o.AtlasID == m.AtlasID && atlas.Match(o.Pattern, action) {
				return &Denial{Reason: "denied by checkpoint " + o.Checkpoint + " (deny_actions " + o.Pattern + ")", Checkpoint: o.Checkpoint, Permanent: true}, false
			}
		}
		for _, o := range s.Allow {
			if o.AtlasID == m.AtlasID && atlas.Match(o.Pattern, action) {
				return nil, true
			}
		}
	}
	return nil, false
}

// locked reports whether capability cap of atlas id is locked in s: a
// checkpoint locked it last, or one would unlock it and none has yet.
func (set *Set) locked(s *Session, id, cap string) (string, bool) {
	k := Key(id, cap)
	if s != nil {
		switch s.Capabilities[k] {
		case CapUnlocked:
			return "", false
		case CapLocked:
			return " (locked by a checkpoint)", true
		}
	}
	if us := set.unlockers[k]; len(us) > 0 {
		return " until checkpoint " + us[0].CP.CheckpointID + " unlocks it", true
	}
	return "", false
}

// gateOf returns the capability_access checkpoint that unlocks
// capability cap of atlas id, if one does.
func (set *Set) gateOf(id, cap string) *Def {
	for _, d := range set.unlockers[Key(id, cap)] {
		if d.Type == TypeCapabilityGate && slices.Contains(d.CP.Trigger.CapabilityIDs, cap) {
			return d
		}
	}
	return nil
}

// Prompt is a checkpoint waiting for the agent, as a resolution shows it.
type Prompt struct {
	CheckpointID string `json:"checkpoint_id"`
	AtlasRef     string `json:"atlas_ref"`
	Name         string `json:"name,omitempty"`
	Type         string `json:"checkpoint_type"`
	Mode         string `json:"mode"`
	Status       string `json:"status"` // pending or blocked
	Priority     int    `json:"priority"`
	InstanceID   string `json:"instance_id"`
	Gates        string `json:"gates,omitempty"` // what a blocking checkpoint holds back
	// WaitingFor is "evaluator" while a custom checkpoint holds its
	// actions because its evaluator failed: it takes no answers.
	WaitingFor string           `json:"waiting_for,omitempty"`
	Questions  []PromptQuestion `json:"questions"`
}

// PromptQuestion is a question as the agent sees it.
type PromptQuestion struct {
	QuestionID   string            `json:"question_id"`
	Question     string            `json:"question"`
	ResponseType string            `json:"response_type"`
	Required     bool              `json:"required"`
	Hint         string            `json:"hint,omitempty"`
	Options      []string          `json:"options,omitempty"`
	Validation   *atlas.Validation `json:"validation,omitempty"`
}

// Prompts returns s's pending and blocked checkpoints, highest priority
// first.
func (set *Set) Prompts(s *Session) []Prompt {
	if s == nil {
		return nil
	}
	var out []Prompt
	for _, d := range set.defs {
		if st := s.peek(d.Key); st.Status == StatusPending || st.Status == StatusBlocked {
			out = append(out, PromptOf(s, d))
		}
	}
	return out
}

// PromptOf returns checkpoint d as s shows it to the agent.
func PromptOf(s *Session, d *Def) Prompt {
	st := s.peek(d.Key)
	p := Prompt{CheckpointID: d.CP.CheckpointID, AtlasRef: d.AtlasRef, Name: d.CP.Name, Type: d.Type, Mode: d.Mode,
		Status: st.Status, Priority: d.Priority, InstanceID: st.Instance, Questions: []PromptQuestion{}}
	if d.Mode == atlas.ModeBlocking {
		p.Gates = d.GatesWhat()
	}
	if st.EvalHeld {
		p.WaitingFor = "evaluator"
	}
	for _, q := range d.questions {
		p.Questions = append(p.Questions, PromptQuestion{QuestionID: q.QuestionID, Question: q.Question.Question,
			ResponseType: q.ResponseType, Required: q.IsRequired(), Hint: q.Hint, Options: q.Options, Validation: q.Validation})
	}
	return p
}

// GuidanceOut is a guidance block as a resolution carries it.
type GuidanceOut struct {
	CheckpointID string   `json:"checkpoint_id"`
	AtlasRef     string   `json:"atlas_ref"`
	Format       string   `json:"format"`
	Content      string   `json:"content"`
	ContentHash  string   `json:"content_hash"`
	Priority     int      `json:"priority"`
	Labels       []string `json:"labels,omitempty"`
}

// Injection is what a session's checkpoints add to a resolution: the
// guidance in effect (system instructions first, then by priority,
// highest first, then in order of injection) and the context blocks
// injected, within each atlas's max_context_injection_size (bytes of
// guidance and context content; what does not fit is left out, lowest
// priority first, with a warning).
type Injection struct {
	Guidance []GuidanceOut
	Contexts map[string][]string // atlas id -> context ids
	Warnings []string
}

// Inject returns what s's checkpoints add to a resolution over the
// atlases in scope (nil: all).
func (set *Set) Inject(s *Session, inScope func(atlasID string) bool) Injection {
	in := Injection{Contexts: map[string][]string{}}
	if s == nil {
		return in
	}
	gs := slices.Clone(s.Guidance)
	slices.SortStableFunc(gs, func(a, b ActiveGuidance) int {
		as, bs := a.Guidance.Format == atlas.GuidanceSystemInstruction, b.Guidance.Format == atlas.GuidanceSystemInstruction
		if as != bs {
			if as {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(b.Guidance.Priority, a.Guidance.Priority); c != 0 {
			return c
		}
		return cmp.Compare(a.Seq, b.Seq)
	})
	used := map[string]int{}
	fits := func(id string, n int) bool {
		limit := set.Budget(id).MaxContextInjectionSize
		if limit > 0 && used[id]+n > limit {
			return false
		}
		used[id] += n
		return true
	}
	for _, g := range gs {
		if inScope != nil && !inScope(g.AtlasID) {
			continue
		}
		if !fits(g.AtlasID, len(g.Guidance.Content)) {
			in.Warnings = append(in.Warnings, "guidance of checkpoint "+g.Checkpoint+" left out: max_context_injection_size of atlas "+g.AtlasRef)
			continue
		}
		in.Guidance = append(in.Guidance, GuidanceOut{CheckpointID: g.Checkpoint, AtlasRef: g.AtlasRef,
			Format: cmp.Or(g.Guidance.Format, atlas.GuidanceText), Content: g.Guidance.Content, ContentHash: g.Hash,
			Priority: g.Guidance.Priority, Labels: g.Guidance.Labels})
	}
	for _, c := range s.Contexts {
		if inScope != nil && !inScope(c.AtlasID) {
			continue
		}
		m := set.atlases[c.AtlasID]
		if m == nil {
			continue
		}
		i := slices.IndexFunc(m.ContextBlocks, func(b atlas.ContextBlock) bool { return b.ContextID == c.ContextID })
		if i < 0 || slices.Contains(in.Contexts[c.AtlasID], c.ContextID) {
			continue
		}
		if !fits(c.AtlasID, len(m.ContextBlocks[i].Content)) {
			in.Warnings = append(in.Warnings, "context block "+c.ContextID+" of checkpoint "+c.Checkpoint+" left out: max_context_injection_size of atlas "+m.Ref())
			continue
		}
		in.Contexts[c.AtlasID] = append(in.Contexts[c.AtlasID], c.ContextID)
	}
	return in
}
