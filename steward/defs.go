package steward

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/wacpd/wacpd/atlas"
)

// Checkpoint types (seed 000, "Built-in Types"), with the priority each
// built-in checkpoint of checkpoint_config has. A steward's checkpoint
// has its own priority (atlas.DefaultCheckpointPriority when it names
// none); its type is its trigger's.
const (
	TypeSessionStart    = "session_start"
	TypeInteractive     = "interactive"
	TypeCapabilityGate  = "capability_gate" // trigger capability_access
	TypeRiskThreshold   = "risk_threshold"
	TypeActionPre       = "action_pre"
	TypeKeywordMatch    = "keyword_match" // trigger keyword or keyword_match
	TypeTimeInterval    = "time_interval"
	TypeCountInterval   = "count_interval"
	TypeExplicitRequest = "explicit_request"
	TypeCustom          = "custom"
	TypeActionPost      = "action_post"
	TypeErrorOccurred   = "error_occurred"
	TypeSessionEnd      = "session_end"
)

// TypePriorities returns the default priority of each checkpoint type
// (seed 000's table; seed 001 has no interactive or capability_gate, and
// splits action_pre into 800 with a policy check and 700 without, which
// the built-in action_pre mappings follow).
func TypePriorities() map[string]int {
	return map[string]int{
		TypeSessionStart: 1000, TypeInteractive: 950, TypeCapabilityGate: 920, TypeRiskThreshold: 900,
		TypeActionPre: 800, TypeKeywordMatch: 600, TypeTimeInterval: 500, TypeCountInterval: 400,
		TypeExplicitRequest: 300, TypeCustom: 200, TypeActionPost: 100, TypeErrorOccurred: 50, TypeSessionEnd: 0,
	}
}

// actionPreContextPriority is a built-in action_pre mapping's priority
// without require_policy_check (seed 001: "action_pre (context)").
const actionPreContextPriority = 700

// TypeOf returns the checkpoint type of trigger type t.
func TypeOf(t string) string {
	switch t {
	case "keyword":
		return TypeKeywordMatch
	case "capability_access":
		return TypeCapabilityGate
	}
	return t
}

// Def is one checkpoint in effect: a steward's, or a built-in one of
// checkpoint_config, compiled.
type Def struct {
	Key      string // atlas_id "/" checkpoint_id
	AtlasID  string
	AtlasRef string
	CP       atlas.Checkpoint
	Type     string // the checkpoint type (TypeOf the trigger's)
	Mode     string // blocking, advisory, observational
	Priority int
	Builtin  bool

	patterns  []atlas.Pattern // action_pre, action_post, error_occurred
	keywords  *Keywords
	questions []*Question
	caps      []atlas.Capability // capability_access: the capabilities named
	m         *atlas.Manifest
}

// Questions returns d's compiled questions.
func (d *Def) Questions() []*Question { return d.questions }

// perAction reports whether d gates each execution anew: an answer to it
// covers one execute of a gated action.
func (d *Def) perAction() bool {
	return d.Type == TypeActionPre || d.Type == TypeRiskThreshold
}

// matchesAction reports whether d's action patterns cover action (no
// patterns: every action of its atlas).
func (d *Def) matchesAction(action string) bool {
	if len(d.patterns) == 0 {
		return true
	}
	return slices.ContainsFunc(d.patterns, func(p atlas.Pattern) bool { return p.Match(action) })
}

// inCapabilities reports whether action is in one of d's capabilities.
func (d *Def) inCapabilities(action string) bool {
	return slices.ContainsFunc(d.caps, func(c atlas.Capability) bool { return capHas(c, action) })
}

func capHas(c atlas.Capability, action string) bool {
	return slices.ContainsFunc(c.Actions, func(s string) bool { return atlas.Match(s, action) })
}

// Gates reports whether d, pending or blocked in blocking mode, holds
// back action (of atlas atlasID, at risk tier tier): a checkpoint gates
// only its own atlas's actions; action_pre those its patterns match,
// risk_threshold those at or above its tier, a capability gate those of
// its capabilities, every other type all of them.
func (d *Def) Gates(atlasID, action, tier string) bool {
	if atlasID != d.AtlasID {
		return false
	}
	switch d.Type {
	case TypeActionPre:
		return d.matchesAction(action)
	case TypeRiskThreshold:
		return atlas.TierAtLeast(tier, d.CP.Trigger.MinTier)
	case TypeCapabilityGate:
		return d.inCapabilities(action)
	}
	return true
}

// GatesWhat describes what d gates, for the agent.
func (d *Def) GatesWhat() string {
	switch d.Type {
	case TypeActionPre:
		if len(d.CP.Trigger.Patterns) > 0 {
			return "actions " + strings.Join(d.CP.Trigger.Patterns, ", ") + " of atlas " + d.AtlasRef
		}
	case TypeRiskThreshold:
		return "actions of risk tier " + d.CP.Trigger.MinTier + " or above of atlas " + d.AtlasRef
	case TypeCapabilityGate:
		return "the actions of capabilities " + strings.Join(d.CP.Trigger.CapabilityIDs, ", ") + " of atlas " + d.AtlasRef
	}
	return "every action of atlas " + d.AtlasRef
}

// Set is the checkpoints of the loaded atlases, in evaluation order:
// priority, highest first, ties in load order then manifest order.
type Set struct {
	defs    []*Def
	byKey   map[string]*Def
	atlases map[string]*atlas.Manifest
	// unlockers: atlas "/" capability -> the checkpoints that unlock it;
	// such a capability is locked in a session until one of them does.
	unlockers map[string][]*Def
	custom    bool
	cache     *cache
	sums      map[string]string // atlas id -> checksum
}

// Defs returns the checkpoints in evaluation order.
func (s *Set) Defs() []*Def { return s.defs }

// Def returns the checkpoint of key (atlas_id "/" checkpoint_id).
func (s *Set) Def(key string) (*Def, bool) {
	d, ok := s.byKey[key]
	return d, ok
}

// HasCustom reports whether a custom trigger is in effect (the engine
// evaluates those before its commit).
func (s *Set) HasCustom() bool { return s.custom }

// Empty reports whether no checkpoint is in effect.
func (s *Set) Empty() bool { return len(s.defs) == 0 }

// Budget returns atlas id's checkpoint budget (zero: unbounded).
func (s *Set) Budget(id string) atlas.CheckpointBudget {
	if m := s.atlases[id]; m != nil && m.CheckpointConfig != nil && m.CheckpointConfig.Budget != nil {
		return *m.CheckpointConfig.Budget
	}
	return atlas.CheckpointBudget{}
}

// Key is a checkpoint's key in a Set and a Session.
func Key(atlasID, checkpointID string) string { return atlasID + "/" + checkpointID }

// Compile compiles the checkpoints of ms (validated manifests, in load
// order): their steward checkpoints and the built-in ones their
// checkpoint_config enables.
func Compile(ms []*atlas.Manifest) (*Set, error) {
	s := &Set{byKey: map[string]*Def{}, atlases: map[string]*atlas.Manifest{}, unlockers: map[string][]*Def{}, cache: newCache(),
		sums: map[string]string{}}
	for _, m := range ms {
		s.atlases[m.AtlasID] = m
		sum, err := atlas.Checksum(m)
		if err != nil {
			return nil, err
		}
		s.sums[m.AtlasID] = sum
		for _, c := range m.Checkpoints {
			priority := atlas.DefaultCheckpointPriority
			if c.Priority != nil {
				priority = *c.Priority
			}
			d, err := compileDef(m, c, false, priority)
			if err != nil {
				return nil, err
			}
			s.add(d)
		}
		for _, d := range builtins(m) {
			if err := d.compile(); err != nil {
				return nil, err
			}
			s.add(d)
		}
	}
	sort.SliceStable(s.defs, func(i, j int) bool { return s.defs[i].Priority > s.defs[j].Priority })
	return s, nil
}

func (s *Set) add(d *Def) {
	s.defs = append(s.defs, d)
	s.byKey[d.Key] = d
	for _, c := range d.CP.UnlockCapabilities {
		k := Key(d.AtlasID, c)
		s.unlockers[k] = append(s.unlockers[k], d)
	}
	if d.Type == TypeCustom {
		s.custom = true
	}
}

func compileDef(m *atlas.Manifest, c atlas.Checkpoint, builtin bool, priority int) (*Def, error) {
	d := &Def{Key: Key(m.AtlasID, c.CheckpointID), AtlasID: m.AtlasID, AtlasRef: m.Ref(), CP: c, Type: TypeOf(c.Trigger.Type),
		Mode: cmp.Or(c.Mode, atlas.ModeAdvisory), Priority: priority, Builtin: builtin, m: m}
	return d, d.compile()
}

func (d *Def) compile() error {
	c := d.CP
	for _, p := range c.Trigger.Patterns {
		if d.Type == TypeKeywordMatch {
			break
		}
		pp, err := atlas.ParsePattern(p)
		if err != nil {
			return fmt.Errorf("checkpoint %s: %w", d.Key, err)
		}
		d.patterns = append(d.patterns, pp)
	}
	if d.Type == TypeKeywordMatch {
		k, err := CompileKeywords(c.Trigger.Patterns, c.Trigger.MatchMode, c.Trigger.CaseSensitive, c.Trigger.Threshold)
		if err != nil {
			return fmt.Errorf("checkpoint %s: %w", d.Key, err)
		}
		d.keywords = k
	}
	for _, id := range c.Trigger.CapabilityIDs {
		if i := slices.IndexFunc(d.m.Capabilities, func(x atlas.Capability) bool { return x.CapabilityID == id }); i >= 0 {
			d.caps = append(d.caps, d.m.Capabilities[i])
		}
	}
	for _, q := range c.Questions {
		cq, err := CompileQuestion(q)
		if err != nil {
			return fmt.Errorf("checkpoint %s: question %s: %w", d.Key, q.QuestionID, err)
		}
		d.questions = append(d.questions, cq)
	}
	return nil
}

// builtins returns m's built-in checkpoints (checkpoint_config), each
// advisory at its type's priority unless a mapping asks for confirmation
// (blocking, one acknowledgment question), with ids BuiltinPrefix and
// the type (and the mapping's key).
func builtins(m *atlas.Manifest) []*Def {
	cc := m.CheckpointConfig
	if cc == nil {
		return nil
	}
	prio := TypePriorities()
	var out []*Def
	add := func(id, typ string, t atlas.Trigger, contexts []string, priority int) *Def {
		c := atlas.Checkpoint{CheckpointID: atlas.BuiltinPrefix + id, Name: "checkpoint_config." + typ, Trigger: t,
			Mode: atlas.ModeAdvisory, InjectContexts: contexts}
		d := &Def{Key: Key(m.AtlasID, c.CheckpointID), AtlasID: m.AtlasID, AtlasRef: m.Ref(), CP: c, Type: typ,
			Mode: atlas.ModeAdvisory, Priority: priority, Builtin: true, m: m}
		out = append(out, d)
		return d
	}
	if b := cc.SessionStart; b != nil && b.Enabled {
		add(TypeSessionStart, TypeSessionStart, atlas.Trigger{Type: TypeSessionStart}, b.InjectContexts, prio[TypeSessionStart])
	}
	if b := cc.RiskThreshold; b != nil && b.Enabled {
		add(TypeRiskThreshold, TypeRiskThreshold, atlas.Trigger{Type: TypeRiskThreshold, MinTier: b.MinTier}, b.InjectContexts, prio[TypeRiskThreshold])
	}
	if b := cc.TimeInterval; b != nil && b.Enabled {
		add(TypeTimeInterval, TypeTimeInterval, atlas.Trigger{Type: TypeTimeInterval, Seconds: b.Seconds}, b.InjectContexts, prio[TypeTimeInterval])
	}
	if b := cc.CountInterval; b != nil && b.Enabled {
		add(TypeCountInterval, TypeCountInterval, atlas.Trigger{Type: TypeCountInterval, Actions: b.Actions}, b.InjectContexts, prio[TypeCountInterval])
	}
	if k := cc.KeywordMatch; k != nil && k.Enabled {
		keys := make([]string, 0, len(k.Mappings))
		for key := range k.Mappings {
			keys = append(keys, key)
		}
		sort.Strings(keys)
		for _, key := range keys {
			words := []string{key}
			if k.MatchMode != "regex" {
				words = slices.DeleteFunc(strings.Split(key, "|"), func(s string) bool { return strings.TrimSpace(s) == "" })
			}
			add(TypeKeywordMatch+"/"+key, TypeKeywordMatch, atlas.Trigger{Type: "keyword_match", Patterns: words,
				MatchMode: k.MatchMode, CaseSensitive: k.CaseSensitive}, k.Mappings[key], prio[TypeKeywordMatch])
		}
	}
	if a := cc.ActionPre; a != nil && a.Enabled {
		keys := make([]string, 0, len(a.Mappings))
		for key := range a.Mappings {
			keys = append(keys, key)
		}
		sort.Strings(keys)
		for _, key := range keys {
			mp := a.Mappings[key]
			p := actionPreContextPriority
			if mp.RequirePolicyCheck {
				p = prio[TypeActionPre]
			}
			d := add(TypeActionPre+"/"+key, TypeActionPre, atlas.Trigger{Type: TypeActionPre, Patterns: []string{key}}, mp.InjectContexts, p)
			if mp.RequireConfirmation {
				d.Mode, d.CP.Mode = atlas.ModeBlocking, atlas.ModeBlocking
				d.CP.Questions = []atlas.Question{{QuestionID: "confirm", ResponseType: atlas.ResponseAcknowledgment,
					Question: "Confirm that you mean to run this " + key + " action (answer \"understood\")."}}
			}
		}
	}
	return out
}
