package integration

import (
	"cmp"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/wacpd/wacpd/workspace"
)

// Resource prefixes of conflicts that are not files.
const (
	ContentKeyPrefix = "content:" // a top-level key of payload.content
	TaskPrefix       = "task:"    // a task the source's task depends on
)

// Detects reports whether strategy detects conflicts of type typ (WACP
// Integration §5's table): direct none, layered content_overlap, evaluated
// all four.
func Detects(strategy, typ string) bool {
	switch strategy {
	case StrategyLayered:
		return typ == workspace.ConflictContentOverlap
	case StrategyEvaluated:
		return true
	}
	return false
}

// Detect returns the conflicts strategy detects when in is merged onto st,
// in a fixed order: content_overlap, semantic_contradiction,
// dependency_violation, constraint_breach; within a type by the earlier
// integration's seq (or the checkpoint's id). Nothing for direct.
func Detect(strategy string, st State, in Incoming) []workspace.Conflict {
	var out []workspace.Conflict
	if Detects(strategy, workspace.ConflictContentOverlap) {
		out = append(out, overlaps(st, in)...)
	}
	if Detects(strategy, workspace.ConflictSemanticContradiction) {
		out = append(out, contradictions(st, in)...)
	}
	if Detects(strategy, workspace.ConflictDependencyViolation) {
		out = append(out, violations(st, in)...)
	}
	if Detects(strategy, workspace.ConflictConstraintBreach) {
		out = append(out, breaches(in)...)
	}
	return out
}

// bySource groups resources by the earlier integration that provided them.
type bySource struct {
	order []Provenance
	res   map[uint64][]string
}

func (b *bySource) add(p Provenance, r string) {
	if b.res == nil {
		b.res = map[uint64][]string{}
	}
	if _, ok := b.res[p.Seq]; !ok {
		b.order = append(b.order, p)
	}
	b.res[p.Seq] = append(b.res[p.Seq], r)
}

func (b *bySource) conflicts(typ, what string) []workspace.Conflict {
	slices.SortFunc(b.order, func(x, y Provenance) int { return cmp.Compare(x.Seq, y.Seq) })
	var out []workspace.Conflict
	for _, p := range b.order {
		res := normalize(b.res[p.Seq])
		out = append(out, workspace.Conflict{ConflictType: typ, Resources: res,
			Description: fmt.Sprintf("%s %s by integration %d of workspace %s (checkpoint %s)",
				strings.Join(res, ", "), what, p.Seq, p.Source, p.Checkpoint)})
	}
	return out
}

// overlaps: files in changed that an earlier integration of another
// workspace provided.
func overlaps(st State, in Incoming) []workspace.Conflict {
	var b bySource
	for _, f := range normalize(in.Files) {
		if p, ok := st.Files[f]; ok && p.Source != in.Source {
			b.add(p, f)
		}
	}
	return b.conflicts(workspace.ConflictContentOverlap, "also changed")
}

// contradictions: content keys an earlier integration of another
// workspace gave another value.
func contradictions(st State, in Incoming) []workspace.Conflict {
	var b bySource
	keys := ContentKeys(in.Content)
	for _, k := range sortedKeys(keys) {
		if kv, ok := st.Keys[k]; ok && kv.Source != in.Source && kv.Value != keys[k] {
			b.add(kv.Provenance, ContentKeyPrefix+k)
		}
	}
	return b.conflicts(workspace.ConflictSemanticContradiction, "concluded otherwise")
}

// violations: dependencies not integrated, and checkpoints built on whose
// files the target now holds from another checkpoint.
func violations(st State, in Incoming) []workspace.Conflict {
	var out []workspace.Conflict
	if len(in.PendingDeps) > 0 {
		deps := normalize(in.PendingDeps)
		res := make([]string, len(deps))
		for i, d := range deps {
			res[i] = TaskPrefix + d
		}
		out = append(out, workspace.Conflict{ConflictType: workspace.ConflictDependencyViolation, Resources: res,
			Description: fmt.Sprintf("the source's task depends on %s, not integrated yet", strings.Join(deps, ", "))})
	}
	for _, cp := range sortedKeys(in.Assumes) {
		var res, by []string
		for _, f := range normalize(in.Assumes[cp]) {
			if p, ok := st.Files[f]; ok && p.Checkpoint != cp && p.Source != in.Source {
				res = append(res, f)
				by = append(by, fmt.Sprintf("%s from integration %d of workspace %s (checkpoint %s)", f, p.Seq, p.Source, p.Checkpoint))
			}
		}
		if len(res) > 0 {
			out = append(out, workspace.Conflict{ConflictType: workspace.ConflictDependencyViolation, Resources: res,
				Description: fmt.Sprintf("built on checkpoint %s, but the target now holds %s", cp, strings.Join(by, "; "))})
		}
	}
	return out
}

// breaches: files outside the source's declared authority set.
func breaches(in Incoming) []workspace.Conflict {
	if len(in.Authority) == 0 {
		return nil
	}
	var res []string
	for _, f := range normalize(in.Files) {
		if !Covers(in.Authority, f) {
			res = append(res, f)
		}
	}
	if len(res) == 0 {
		return nil
	}
	return []workspace.Conflict{{ConflictType: workspace.ConflictConstraintBreach, Resources: res,
		Description: fmt.Sprintf("%s outside the source's authority set %v", strings.Join(res, ", "), in.Authority)}}
}

// Covers reports whether authority grants writing file: an entry "*", the
// file itself, a directory ending in "/" that holds it, or a path.Match
// pattern that matches it.
func Covers(authority []string, file string) bool {
	for _, a := range authority {
		if a == workspace.All || a == file || (strings.HasSuffix(a, "/") && strings.HasPrefix(file, a)) {
			return true
		}
		if ok, err := path.Match(a, file); err == nil && ok {
			return true
		}
	}
	return false
}

// Merge returns detected followed by each reported conflict that is not
// already among them (the same type and resources).
func Merge(detected, reported []workspace.Conflict) []workspace.Conflict {
	out := slices.Clone(detected)
	for _, r := range reported {
		if !slices.ContainsFunc(out, func(c workspace.Conflict) bool { return same(c, r) }) {
			out = append(out, r)
		}
	}
	return out
}

func same(a, b workspace.Conflict) bool {
	return a.ConflictType == b.ConflictType && slices.Equal(normalize(a.Resources), normalize(b.Resources))
}
