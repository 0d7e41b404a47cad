package integration

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/wacpd/wacpd/casstore"
	"github.com/wacpd/wacpd/workspace"
)

// Strategies and modes (WACP Integration spec §3, §7).
const (
	StrategyDirect    = "direct"
	StrategyLayered   = "layered"
	StrategyEvaluated = "evaluated"

	ModeNormal  = "normal"
	ModeSalvage = "salvage"
)

// Results of a completed integration (integration_completed's result).
const (
	ResultSuccess          = "success"
	ResultConflictResolved = "conflict_resolved"
)

// These errors are returned by Verify. Test with errors.Is.
var (
	// ErrBrokenRegister is returned when a register's records do not form
	// one chain: a seq out of order, a prev that is not the digest of the
	// record before, or a digest that does not match the record.
	ErrBrokenRegister = errors.New("integration: broken register")
)

// Record is one integration merged into a target workspace: the target's
// integration register holds them in the order they completed.
type Record struct {
	Target           string             `json:"target"`
	Seq              uint64             `json:"seq"`  // 1 for the target's first integration
	Prev             *string            `json:"prev"` // the previous record's digest; null for the first
	Source           string             `json:"source"`
	Owner            string             `json:"owner"` // the source's owner
	CheckpointRef    string             `json:"checkpoint_ref"`
	CheckpointDigest string             `json:"checkpoint_digest"`
	Strategy         string             `json:"strategy"`
	Mode             string             `json:"mode"`
	Result           string             `json:"result"` // success or conflict_resolved
	Files            []string           `json:"files"`  // payload.files_changed, sorted, without repeats
	Keys             map[string]string  `json:"keys"`   // payload.content's top-level keys → digest of the value
	Assumes          []string           `json:"assumes"`
	Synthesis        json.RawMessage    `json:"synthesis,omitempty"` // evaluated: the coordinator's result
	Conflicts        []ResolvedConflict `json:"conflicts"`
	Timestamp        string             `json:"timestamp"`
	Digest           string             `json:"digest"` // BLAKE3 of the record's JSON with digest ""
}

// ResolvedConflict is a conflict of a completed integration with how it
// was resolved.
type ResolvedConflict struct {
	workspace.Conflict
	ResolutionStrategy string `json:"resolution_strategy"`
	Resolution         string `json:"resolution,omitempty"`
}

// Provenance names the integration that last provided a file or a key.
type Provenance struct {
	Seq        uint64 `json:"seq"`
	Source     string `json:"source"`
	Checkpoint string `json:"checkpoint"`
}

// State is a target's cumulative integrated state: the fold of its
// register.
type State struct {
	Seq   uint64                // the last record's seq; 0 for none
	Head  string                // the last record's digest; "" for none
	Files map[string]Provenance // file → the integration that provided it last
	Keys  map[string]KeyValue   // content key → its value's digest and provenance
}

// KeyValue is a content key's value digest and where it came from.
type KeyValue struct {
	Provenance
	Value string
}

// Fold returns the state records leave, applied in order (incoming wins).
func Fold(records []Record) State {
	st := State{Files: map[string]Provenance{}, Keys: map[string]KeyValue{}}
	for _, r := range records {
		p := Provenance{Seq: r.Seq, Source: r.Source, Checkpoint: r.CheckpointRef}
		for _, f := range r.Files {
			st.Files[f] = p
		}
		for k, v := range r.Keys {
			st.Keys[k] = KeyValue{Provenance: p, Value: v}
		}
		st.Seq, st.Head = r.Seq, r.Digest
	}
	return st
}

// Incoming is what the engine knows of the checkpoint being integrated.
type Incoming struct {
	Source           string
	Owner            string
	Checkpoint       string
	CheckpointDigest string
	Files            []string // payload.files_changed
	Content          string   // payload.content
	// Authority is the source's authority set (its write grants).
	Authority []string
	// Assumes maps each checkpoint of another workspace that
	// payload.artifacts names to that checkpoint's files_changed.
	Assumes map[string][]string
	// PendingDeps are the tasks the source's task depends on that are not
	// integrated.
	PendingDeps []string
}

// Next returns the record of in merged onto st with strategy and mode at
// ts: seq and prev follow st, and the digest is set. synthesis is the
// coordinator's result (evaluated), conflicts those detected and how each
// was resolved.
func Next(st State, target string, in Incoming, strategy, mode, ts string, synthesis json.RawMessage, conflicts []ResolvedConflict) (Record, error) {
	r := Record{
		Target: target, Seq: st.Seq + 1, Source: in.Source, Owner: in.Owner,
		CheckpointRef: in.Checkpoint, CheckpointDigest: in.CheckpointDigest,
		Strategy: strategy, Mode: mode, Result: ResultSuccess,
		Files: normalize(in.Files), Keys: ContentKeys(in.Content), Assumes: sortedKeys(in.Assumes),
		Synthesis: synthesis, Conflicts: conflicts, Timestamp: ts,
	}
	if r.Conflicts == nil {
		r.Conflicts = []ResolvedConflict{}
	}
	if len(conflicts) > 0 {
		r.Result = ResultConflictResolved
	}
	// An evaluated merge's synthesis, when it is a JSON object, is the
	// target's content for its keys: the coordinator's word over the
	// incoming checkpoint's.
	for k, v := range objectKeys(synthesis) {
		r.Keys[k] = v
	}
	if st.Head != "" {
		h := st.Head
		r.Prev = &h
	}
	d, err := r.digest()
	if err != nil {
		return Record{}, err
	}
	r.Digest = d
	return r, nil
}

// digest returns the BLAKE3 address of r's JSON with Digest empty.
func (r Record) digest() (string, error) {
	r.Digest = ""
	b, err := json.Marshal(r)
	if err != nil {
		return "", fmt.Errorf("encode integration record: %w", err)
	}
	return casstore.RefOf(b).String(), nil
}

// Verify checks that records, a target's register in order, form one
// chain: seqs 1, 2, …, each prev the digest of the record before, each
// digest the record's own.
func Verify(records []Record) error {
	prev := ""
	for i, r := range records {
		d, err := r.digest()
		if err != nil {
			return err
		}
		switch {
		case r.Seq != uint64(i+1):
			return fmt.Errorf("%w: record %d has seq %d", ErrBrokenRegister, i+1, r.Seq)
		case d != r.Digest:
			return fmt.Errorf("%w: record %d has digest %s, its content %s", ErrBrokenRegister, r.Seq, r.Digest, d)
		case (r.Prev == nil) != (prev == "") || (r.Prev != nil && *r.Prev != prev):
			return fmt.Errorf("%w: record %d does not link to record %d", ErrBrokenRegister, r.Seq, i)
		}
		prev = r.Digest
	}
	return nil
}

// ContentKeys returns the top-level keys of content when it is a JSON
// object, each with the digest of its value's JSON (as encoding/json
// writes the decoded value: object keys sorted, numbers as float64); an
// empty map otherwise.
func ContentKeys(content string) map[string]string {
	return objectKeys(json.RawMessage(content))
}

func objectKeys(b json.RawMessage) map[string]string {
	out := map[string]string{}
	var m map[string]any
	if len(b) == 0 || json.Unmarshal(b, &m) != nil {
		return out
	}
	for k, v := range m {
		enc, err := json.Marshal(v)
		if err != nil {
			continue
		}
		out[k] = casstore.RefOf(enc).String()
	}
	return out
}

func normalize(files []string) []string {
	out := slices.Clone(files)
	slices.Sort(out)
	out = slices.Compact(out)
	if out == nil {
		out = []string{}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
