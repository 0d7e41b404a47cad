package atlas

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// ErrInvalid is matched (errors.Is) by every ValidationError.
var ErrInvalid = errors.New("atlas: invalid manifest")

// Rules a manifest can break, named in ValidationError.Rule.
const (
	RuleStructure = "structure"     // not a manifest: bad JSON/YAML, unknown fields, wrong types
	RuleVersion   = "atlas_version" // atlas_version is not "1.0"
	RuleAtlasID   = "atlas_id"      // atlas_id does not follow AtlasIDPattern
	RuleSemver    = "semver"        // version is not a full semantic version
	RuleRequired  = "required"      // a required field is missing
	RuleDuplicate = "duplicate_id"  // two entries of one kind share an id
	RuleReference = "reference"     // an entry names something the atlas does not define
	RuleEnum      = "enum"          // a value outside its set
	RulePattern   = "action_pattern"
	RuleSchema    = "json_schema" // a parameters_schema (or a json question's schema) is not a valid JSON Schema
	RuleRegex     = "regex"       // a regular expression that does not compile
	RuleRateLimit = "rate_limit"  // a rate limit's requests, window or scope
	RuleRange     = "range"       // a number out of its range
)

// ValidationError says why a manifest was refused: the file, the entry
// ("actions[ticket.get].parameters_schema"; empty for the document), the
// rule and the cause. It prints as
//
//	atlas: acme/atlas.json: actions[ticket.get]: rate_limit: window_seconds must be at least 1
type ValidationError struct {
	File  string
	Entry string
	Rule  string
	Err   error
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	b.WriteString("atlas: ")
	if e.File != "" {
		b.WriteString(e.File + ": ")
	}
	if e.Entry != "" {
		b.WriteString(e.Entry + ": ")
	}
	b.WriteString(e.Rule + ": ")
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *ValidationError) Unwrap() error { return e.Err }

// Is reports whether target is ErrInvalid.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalid }

// AtlasIDPattern is what an atlas_id looks like: lowercase dot-separated
// names, reverse-DNS style (com.acme.support), at most 128 bytes.
var AtlasIDPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*(\.[a-z0-9][a-z0-9_-]*)*$`)

// semverPattern is Semantic Versioning 2.0.0's own regular expression.
var semverPattern = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`)

// validator collects the first error of a manifest's validation.
type validator struct {
	file string
	err  *ValidationError
}

func (v *validator) fail(entry, rule string, format string, args ...any) {
	if v.err == nil {
		v.err = &ValidationError{File: v.file, Entry: entry, Rule: rule, Err: fmt.Errorf(format, args...)}
	}
}

func (v *validator) enum(entry, field, got string, allowed ...string) {
	if got != "" && !slices.Contains(allowed, got) {
		v.fail(entry, RuleEnum, "%s %q is not one of %s", field, got, strings.Join(allowed, ", "))
	}
}

func (v *validator) regex(entry, field, expr string) {
	if _, err := regexp.Compile(expr); err != nil {
		v.fail(entry, RuleRegex, "%s %q: %v", field, expr, err)
	}
}

func (v *validator) patterns(entry, field string, ps []string) {
	for i, p := range ps {
		if _, err := ParsePattern(p); err != nil {
			v.fail(fmt.Sprintf("%s.%s[%d]", entry, field, i), RulePattern, "%v", err)
		}
	}
}

// ids checks that each entry of a kind has an id and no two share one, and
// returns the set.
func ids[T any](v *validator, kind, field string, xs []T, id func(T) string) map[string]bool {
	seen := map[string]bool{}
	for i, x := range xs {
		s := id(x)
		switch {
		case s == "":
			v.fail(fmt.Sprintf("%s[%d]", kind, i), RuleRequired, "%s is required", field)
		case seen[s]:
			v.fail(fmt.Sprintf("%s[%s]", kind, s), RuleDuplicate, "a second %s with %s %q", strings.TrimSuffix(kind, "s"), field, s)
		}
		seen[s] = true
	}
	return seen
}

// Validate checks m as a whole (file names it in errors) and returns nil
// or the first *ValidationError.
func Validate(file string, m *Manifest) error {
	v := &validator{file: file}
	switch {
	case m.AtlasVersion != "1.0":
		v.fail("", RuleVersion, "atlas_version %q is not 1.0", m.AtlasVersion)
	case m.AtlasID == "":
		v.fail("", RuleRequired, "atlas_id is required")
	case len(m.AtlasID) > 128 || !AtlasIDPattern.MatchString(m.AtlasID):
		v.fail("", RuleAtlasID, "atlas_id %q is not lowercase dot-separated names (com.acme.support), at most 128 bytes", m.AtlasID)
	case m.Version == "":
		v.fail("", RuleRequired, "version is required")
	case !semverPattern.MatchString(m.Version):
		v.fail("", RuleSemver, "version %q is not a full semantic version (MAJOR.MINOR.PATCH)", m.Version)
	case m.Name == "":
		v.fail("", RuleRequired, "name is required")
	}
	if m.Steward != nil && m.Steward.ID == "" {
		v.fail("steward", RuleRequired, "id is required")
	}
	actions := ids(v, "actions", "action_id", m.Actions, func(a Action) string { return a.ActionID })
	contexts := ids(v, "context_blocks", "context_id", m.ContextBlocks, func(c ContextBlock) string { return c.ContextID })
	caps := ids(v, "capabilities", "capability_id", m.Capabilities, func(c Capability) string { return c.CapabilityID })
	ids(v, "policies", "policy_id", m.Policies, func(p Policy) string { return p.PolicyID })
	ids(v, "checkpoints", "checkpoint_id", m.Checkpoints, func(c Checkpoint) string { return c.CheckpointID })
	for _, a := range m.Actions {
		v.action(a)
	}
	for _, c := range m.ContextBlocks {
		v.context(c)
	}
	for _, c := range m.Capabilities {
		entry := "capabilities[" + c.CapabilityID + "]"
		if len(c.Actions) == 0 {
			v.fail(entry, RuleRequired, "actions is required")
		}
		v.patterns(entry, "actions", c.Actions)
		v.covers(entry, "actions", c.Actions, m.Actions)
	}
	for _, p := range m.Policies {
		v.policy(p, caps, contexts)
	}
	for _, c := range m.Checkpoints {
		v.checkpoint(c, m, caps, contexts)
	}
	v.checkpointConfig(m.CheckpointConfig, m.CacheConfig, contexts)
	_ = actions
	if a := m.Approvals; a != nil {
		v.approvals(*a, m.Actions)
	}
	if v.err != nil {
		return v.err
	}
	return nil
}

// covers checks that every pattern of field covers at least one action of
// the atlas: a capability of nothing is a typo.
func (v *validator) covers(entry, field string, patterns []string, actions []Action) {
	for i, s := range patterns {
		p, err := ParsePattern(s)
		if err != nil {
			continue // reported by patterns
		}
		if !slices.ContainsFunc(actions, func(a Action) bool { return p.Match(a.ActionID) }) {
			v.fail(fmt.Sprintf("%s.%s[%d]", entry, field, i), RuleReference, "%q names no action of the atlas", s)
		}
	}
}

func (v *validator) action(a Action) {
	entry := "actions[" + a.ActionID + "]"
	if err := CheckActionID(a.ActionID); err != nil && a.ActionID != "" {
		v.fail(entry, RulePattern, "%v", err)
	}
	v.enum(entry, "risk_tier", a.RiskTier, RiskTiers()...)
	if len(a.ParametersSchema) > 0 {
		if _, err := CompileSchema(a.ParametersSchema); err != nil {
			v.fail(entry+".parameters_schema", RuleSchema, "%v", err)
		}
	}
	for i, c := range a.ParameterConstraints {
		ce := fmt.Sprintf("%s.parameter_constraints[%d]", entry, i)
		if c.Parameter == "" {
			v.fail(ce, RuleRequired, "parameter is required")
		}
		v.enum(ce, "constraint_type", c.ConstraintType, "enum", "range", "pattern", "max_length", "required", "forbidden")
		if c.ConstraintType == "" {
			v.fail(ce, RuleRequired, "constraint_type is required")
		}
		if c.ConstraintType == "pattern" {
			var expr string
			if err := jsonString(c.Value, &expr); err != nil {
				v.fail(ce, RuleRegex, "value of a pattern constraint must be a string")
			} else {
				v.regex(ce, "value", expr)
			}
		}
	}
	if a.RateLimit != nil {
		v.rateLimit(entry+".rate_limit", *a.RateLimit)
	}
	if a.TimeoutMS < 0 {
		v.fail(entry, RuleRange, "timeout_ms %d is negative", a.TimeoutMS)
	}
	v.enum(entry, "side_effect_class", a.SideEffectClass, SideEffectClasses()...)
	for i, p := range a.PathParameters {
		if p == "" {
			v.fail(fmt.Sprintf("%s.path_parameters[%d]", entry, i), RuleRequired, "a path parameter needs a name")
		}
	}
}

// approvals checks the approval policy: tiers, patterns, the violation
// response and the numbers.
func (v *validator) approvals(a Approvals, actions []Action) {
	const entry = "approvals"
	v.enum(entry, "baseline_risk_tier", a.BaselineRiskTier, RiskTiers()...)
	v.enum(entry, "high_risk_tier", a.HighRiskTier, RiskTiers()...)
	v.enum(entry, "on_violation", a.OnViolation, OnViolationPerStep, OnViolationInvalidate, OnViolationHalt)
	v.patterns(entry, "checkpoint_actions", a.CheckpointActions)
	v.covers(entry, "checkpoint_actions", a.CheckpointActions, actions)
	for i, p := range a.ApprovedPaths {
		if err := CheckPathPattern(p); err != nil {
			v.fail(fmt.Sprintf("%s.approved_paths[%d]", entry, i), RulePattern, "%v", err)
		}
	}
	for i, c := range a.ProviderClasses {
		if c == "" {
			v.fail(fmt.Sprintf("%s.provider_classes[%d]", entry, i), RuleRequired, "a provider class needs a name")
		}
	}
	switch {
	case a.PermitTTLSeconds < 0:
		v.fail(entry, RuleRange, "permit_ttl_seconds %d is negative", a.PermitTTLSeconds)
	case a.MaxPermitUses < 0:
		v.fail(entry, RuleRange, "max_permit_uses %d is negative", a.MaxPermitUses)
	case a.TimeoutSeconds < 0:
		v.fail(entry, RuleRange, "timeout_seconds %d is negative", a.TimeoutSeconds)
	}
}

func (v *validator) rateLimit(entry string, r RateLimit) {
	switch {
	case r.Requests < 1:
		v.fail(entry, RuleRateLimit, "requests must be at least 1, got %d", r.Requests)
	case r.WindowSeconds < 1:
		v.fail(entry, RuleRateLimit, "window_seconds must be at least 1, got %d", r.WindowSeconds)
	case r.Scope != "" && !slices.Contains([]string{ScopeAction, ScopeSession, ScopeAgent, ScopeGlobal}, r.Scope):
		v.fail(entry, RuleRateLimit, "scope %q is not one of action, session, agent, global", r.Scope)
	}
}

func (v *validator) context(c ContextBlock) {
	entry := "context_blocks[" + c.ContextID + "]"
	v.enum(entry, "inject_mode", c.InjectMode, InjectAlways, InjectOnMatch, InjectOnDemand, InjectRiskBased)
	v.enum(entry, "content_type", c.ContentType, "markdown", "json", "yaml", "text")
	v.enum(entry, "min_risk_tier", c.MinRiskTier, RiskTiers()...)
	if c.InjectMode == InjectRiskBased && c.MinRiskTier == "" {
		v.fail(entry, RuleRequired, "a risk_based block needs min_risk_tier")
	}
	if c.TTLSeconds < 0 {
		v.fail(entry, RuleRange, "ttl_seconds %d is negative", c.TTLSeconds)
	}
	for i, r := range c.Redact {
		v.regex(fmt.Sprintf("%s.redact[%d]", entry, i), "pattern", r)
	}
}

func (v *validator) policy(p Policy, caps, contexts map[string]bool) {
	entry := "policies[" + p.PolicyID + "]"
	v.enum(entry, "type", p.Type, PolicyDeny, PolicyRequiresApproval, PolicyRateLimit, PolicyBudget, PolicyAllow, PolicyRedact)
	if p.Type == "" {
		v.fail(entry, RuleRequired, "type is required")
	}
	v.patterns(entry, "actions", p.Actions)
	for _, t := range p.RiskTiers {
		v.enum(entry, "risk_tiers", t, RiskTiers()...)
	}
	for _, c := range p.Capabilities {
		if !caps[c] {
			v.fail(entry, RuleReference, "capability %q is not defined", c)
		}
	}
	for _, c := range p.Contexts {
		if !contexts[c] {
			v.fail(entry, RuleReference, "context block %q is not defined", c)
		}
	}
	for i, a := range p.Approvers {
		v.enum(fmt.Sprintf("%s.approvers[%d]", entry, i), "type", a.Type, "user", "role", "system")
	}
	switch p.Type {
	case PolicyRateLimit:
		if p.RateLimit == nil {
			v.fail(entry, RuleRequired, "a rate_limit policy needs rate_limit")
		} else {
			v.rateLimit(entry+".rate_limit", *p.RateLimit)
		}
	case PolicyBudget:
		if p.MaxActions < 1 {
			v.fail(entry, RuleRange, "a budget policy needs max_actions of at least 1")
		}
	case PolicyRedact:
		if len(p.Patterns) == 0 {
			v.fail(entry, RuleRequired, "a redact policy needs patterns")
		}
		for i, r := range p.Patterns {
			v.regex(fmt.Sprintf("%s.patterns[%d]", entry, i), "pattern", r)
		}
	case PolicyDeny, PolicyAllow, PolicyRequiresApproval:
		if len(p.Actions) == 0 && len(p.Capabilities) == 0 {
			v.fail(entry, RuleRequired, "a %s policy needs actions or capabilities", p.Type)
		}
	}
	if p.ApprovalTimeoutSeconds < 0 {
		v.fail(entry, RuleRange, "approval_timeout_seconds is negative")
	}
}

// TriggerTypes returns the trigger types of a checkpoint (seeds 000 and
// 001; "keyword" is seed 000's spelling of keyword_match).
func TriggerTypes() []string {
	return []string{"session_start", "session_end", "action_pre", "action_post", "keyword", "keyword_match",
		"risk_threshold", "capability_access", "time_interval", "count_interval", "explicit_request", "error_occurred", "interactive", "custom"}
}

// MatchModes returns a keyword trigger's match modes.
func MatchModes() []string { return []string{"any", "all", "phrase", "regex", "fuzzy"} }

// BuiltinPrefix begins the ids of the built-in checkpoints of
// checkpoint_config; a steward's checkpoint_id may not.
const BuiltinPrefix = "builtin:"

// ToolSubjectPrefix begins the subject of a custom trigger's NATS
// evaluator: a tool service's token may serve it.
const ToolSubjectPrefix = "wacp.v1.tool."

func (v *validator) checkpoint(c Checkpoint, m *Manifest, caps, contexts map[string]bool) {
	entry := "checkpoints[" + c.CheckpointID + "]"
	if strings.HasPrefix(c.CheckpointID, BuiltinPrefix) {
		v.fail(entry, RulePattern, "checkpoint_id may not begin with %q (the built-in checkpoints' ids)", BuiltinPrefix)
	}
	v.enum(entry, "mode", c.Mode, ModeBlocking, ModeAdvisory, ModeObservational)
	t := c.Trigger
	te := entry + ".trigger"
	v.enum(te, "type", t.Type, TriggerTypes()...)
	if t.Type == "" {
		v.fail(te, RuleRequired, "type is required")
	}
	switch t.Type {
	case "action_pre", "action_post", "error_occurred":
		v.patterns(te, "patterns", t.Patterns)
	case "keyword", "keyword_match":
		v.enum(te, "match_mode", t.MatchMode, MatchModes()...)
		if len(t.Patterns) == 0 {
			v.fail(te, RuleRequired, "a keyword trigger needs patterns")
		}
		if t.MatchMode == "regex" {
			for i, p := range t.Patterns {
				v.regex(fmt.Sprintf("%s.patterns[%d]", te, i), "pattern", p)
			}
		}
		if t.Threshold < 0 || t.Threshold > 1 {
			v.fail(te, RuleRange, "threshold %v is outside (0, 1]", t.Threshold)
		}
	case "risk_threshold":
		v.enum(te, "min_tier", t.MinTier, RiskTiers()...)
		if t.MinTier == "" {
			v.fail(te, RuleRequired, "min_tier is required")
		}
	case "capability_access":
		if len(t.CapabilityIDs) == 0 {
			v.fail(te, RuleRequired, "capability_ids is required")
		}
	case "time_interval":
		if t.Seconds < 1 {
			v.fail(te, RuleRange, "seconds must be at least 1")
		}
	case "count_interval":
		if t.Actions < 1 {
			v.fail(te, RuleRange, "actions must be at least 1")
		}
	case "custom":
		if t.TriggerID == "" {
			v.fail(te, RuleRequired, "a custom trigger needs trigger_id")
		}
		if t.Subject != "" {
			v.subject(te, t.Subject, m)
		}
	}
	for _, id := range t.CapabilityIDs {
		if !caps[id] {
			v.fail(te, RuleReference, "capability %q is not defined", id)
		}
	}
	for _, id := range c.InjectContexts {
		if !contexts[id] {
			v.fail(entry, RuleReference, "inject_contexts: context block %q is not defined", id)
		}
	}
	for _, list := range [][]string{c.UnlockCapabilities, c.LockCapabilities} {
		for _, id := range list {
			if !caps[id] {
				v.fail(entry, RuleReference, "capability %q is not defined", id)
			}
		}
	}
	v.patterns(entry, "allow_actions", c.AllowActions)
	v.patterns(entry, "deny_actions", c.DenyActions)
	v.covers(entry, "allow_actions", c.AllowActions, m.Actions)
	v.covers(entry, "deny_actions", c.DenyActions, m.Actions)
	if c.Mode == ModeObservational && (len(c.UnlockCapabilities)+len(c.LockCapabilities)+len(c.AllowActions)+len(c.DenyActions)+
		len(c.InjectContexts)+len(c.Questions) > 0 || c.Guidance != nil) {
		// It would do nothing of it (TRACE only), and a capability it
		// unlocks would stay locked for good.
		v.fail(entry, RuleStructure, "an observational checkpoint records to TRACE only: it has no questions, guidance, contexts, capabilities or action overlays")
	}
	if g := c.Guidance; g != nil {
		ge := entry + ".guidance"
		v.enum(ge, "format", g.Format, GuidanceText, GuidanceMarkdown, GuidanceJSON, GuidanceSystemInstruction)
		if g.Content == "" {
			v.fail(ge, RuleRequired, "content is required")
		}
		if g.Format == GuidanceJSON && !json.Valid([]byte(g.Content)) {
			v.fail(ge, RuleStructure, "a json guidance's content is not JSON")
		}
		if x := g.ExpiresAfter; x != "" {
			typ := strings.ReplaceAll(x, "-", "_")
			if !slices.Contains(TriggerTypes(), typ) && !slices.ContainsFunc(m.Checkpoints, func(o Checkpoint) bool { return o.CheckpointID == x }) {
				v.fail(ge, RuleReference, "expires_after %q names no checkpoint of the atlas and no trigger type", x)
			}
		}
	}
	qids := map[string]bool{}
	for i, q := range c.Questions {
		v.question(fmt.Sprintf("%s.questions[%d]", entry, i), q, qids)
	}
}

// subject checks a custom trigger's evaluator subject: a literal NATS
// subject under ToolSubjectPrefix that is no action's tool subject.
func (v *validator) subject(entry, subj string, m *Manifest) {
	rest, ok := strings.CutPrefix(subj, ToolSubjectPrefix)
	if !ok || rest == "" {
		v.fail(entry, RulePattern, "subject %q does not begin with %s", subj, ToolSubjectPrefix)
		return
	}
	for _, tok := range strings.Split(rest, ".") {
		if tok == "" || tok == "*" || tok == ">" || strings.ContainsFunc(tok, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
			v.fail(entry, RulePattern, "subject %q is not a literal NATS subject", subj)
			return
		}
	}
	if slices.ContainsFunc(m.Actions, func(a Action) bool { return a.ActionID == rest }) {
		v.fail(entry, RulePattern, "subject %q is action %s's tool subject", subj, rest)
	}
}

func (v *validator) question(qe string, q Question, qids map[string]bool) {
	switch {
	case q.QuestionID == "":
		v.fail(qe, RuleRequired, "question_id is required")
	case qids[q.QuestionID]:
		v.fail(qe, RuleDuplicate, "a second question %q", q.QuestionID)
	}
	qids[q.QuestionID] = true
	if q.Question == "" {
		v.fail(qe, RuleRequired, "question is required")
	}
	v.enum(qe, "response_type", q.ResponseType, ResponseText, ResponseBoolean, ResponseAcknowledgment, ResponseChoice, ResponseNumber, ResponseJSON)
	if q.ResponseType == "" {
		v.fail(qe, RuleRequired, "response_type is required")
	}
	if q.ResponseType == ResponseChoice && len(q.Options) == 0 {
		v.fail(qe, RuleRequired, "a choice question needs options")
	}
	v.enum(qe, "on_invalid", q.OnInvalid, OnInvalidRetry, OnInvalidBlock, OnInvalidWarnAndContinue, OnInvalidLogAndContinue)
	if val := q.Validation; val != nil {
		ve := qe + ".validation"
		if val.Pattern != "" {
			v.regex(ve, "pattern", val.Pattern)
		}
		if val.MinLength < 0 || val.MaxLength < 0 {
			v.fail(ve, RuleRange, "a length is negative")
		}
		if val.MaxLength > 0 && val.MinLength > val.MaxLength {
			v.fail(ve, RuleRange, "min_length %d exceeds max_length %d", val.MinLength, val.MaxLength)
		}
		if val.Minimum != nil && val.Maximum != nil && *val.Minimum > *val.Maximum {
			v.fail(ve, RuleRange, "minimum %v exceeds maximum %v", *val.Minimum, *val.Maximum)
		}
		if val.CustomValidator != "" {
			v.fail(ve, RuleStructure, "custom_validator is not supported: wacpd calls no steward service to validate an answer (use validation rules, a json schema, or a custom trigger)")
		}
	}
	if len(q.Schema) > 0 {
		if _, err := CompileSchema(q.Schema); err != nil {
			v.fail(qe+".schema", RuleSchema, "%v", err)
		}
	}
	if len(q.Expected) > 0 {
		var x any
		if err := json.Unmarshal(q.Expected, &x); err != nil {
			v.fail(qe, RuleStructure, "expected is not JSON")
			return
		}
		ok := true
		switch q.ResponseType {
		case ResponseBoolean:
			_, ok = x.(bool)
		case ResponseNumber:
			_, ok = x.(float64)
		case ResponseChoice:
			s, isStr := x.(string)
			ok = isStr && slices.Contains(q.Options, s)
		case ResponseText, ResponseAcknowledgment:
			_, ok = x.(string)
		}
		if !ok {
			v.fail(qe, RuleStructure, "expected %s is not a %s answer", q.Expected, q.ResponseType)
		}
	}
}

// checkpointConfig checks checkpoint_config and cache_config.
func (v *validator) checkpointConfig(cc *CheckpointConfig, cache *CacheConfig, contexts map[string]bool) {
	refs := func(entry string, ids []string) {
		for _, id := range ids {
			if !contexts[id] {
				v.fail(entry, RuleReference, "inject_contexts: context block %q is not defined", id)
			}
		}
	}
	if cc != nil {
		builtins := []struct {
			name string
			b    *BuiltinCheckpoint
		}{{"session_start", cc.SessionStart}, {"risk_threshold", cc.RiskThreshold}, {"time_interval", cc.TimeInterval}, {"count_interval", cc.CountInterval}}
		for _, x := range builtins {
			name, b := x.name, x.b
			if b == nil {
				continue
			}
			entry := "checkpoint_config." + name
			refs(entry, b.InjectContexts)
			switch {
			case name == "risk_threshold":
				v.enum(entry, "min_tier", b.MinTier, RiskTiers()...)
				if b.Enabled && b.MinTier == "" {
					v.fail(entry, RuleRequired, "min_tier is required")
				}
			case name == "time_interval" && b.Enabled && b.Seconds < 1:
				v.fail(entry, RuleRange, "seconds must be at least 1")
			case name == "count_interval" && b.Enabled && b.Actions < 1:
				v.fail(entry, RuleRange, "actions must be at least 1")
			}
		}
		if k := cc.KeywordMatch; k != nil {
			entry := "checkpoint_config.keyword_match"
			v.enum(entry, "match_mode", k.MatchMode, MatchModes()...)
			for _, key := range slices.Sorted(maps.Keys(k.Mappings)) {
				ids := k.Mappings[key]
				if strings.TrimSpace(strings.ReplaceAll(key, "|", "")) == "" {
					v.fail(entry, RuleRequired, "a mapping has no keyword")
				}
				if k.MatchMode == "regex" {
					v.regex(entry+".mappings", "keyword", key)
				}
				refs(entry+".mappings["+key+"]", ids)
			}
		}
		if a := cc.ActionPre; a != nil {
			entry := "checkpoint_config.action_pre"
			for _, key := range slices.Sorted(maps.Keys(a.Mappings)) {
				mp := a.Mappings[key]
				if _, err := ParsePattern(key); err != nil {
					v.fail(entry+".mappings", RulePattern, "%v", err)
				}
				refs(entry+".mappings["+key+"]", mp.InjectContexts)
			}
		}
		if b := cc.Budget; b != nil && (b.MaxCheckpointsPerInput < 0 || b.MaxContextInjectionSize < 0 || b.MaxCheckpointTimeMS < 0) {
			v.fail("checkpoint_config.budget", RuleRange, "a budget is negative")
		}
	}
	if c := cache; c != nil && (c.ContextTTLSeconds < 0 || c.PolicyTTLSeconds < 0 || c.KeywordTTLSeconds < 0) {
		v.fail("cache_config", RuleRange, "a TTL is negative")
	}
}

// CompileSchema compiles a JSON Schema (draft 2020-12 unless it says
// otherwise) that may reference nothing outside itself.
func CompileSchema(raw []byte) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	const url = "urn:wacpd:parameters"
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	return c.Compile(url)
}

// noLoader refuses every external reference: a schema loads nothing from
// the network or the disk.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("a schema may not reference %s", url)
}
