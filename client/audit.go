package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"time"

	"github.com/wacpd/wacpd/auditor"
	"github.com/wacpd/wacpd/casstore"
	"github.com/wacpd/wacpd/checkpointchain"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/wire"
)

// TreeHead returns the latest signed tree head (audit.sth).
func (c *Client) TreeHead(ctx context.Context) (TreeHead, error) {
	var th TreeHead
	err := c.call(ctx, wire.Subject("audit.sth"), nil, &th, 0)
	return th, err
}

// AuditInfo is what system.info says about the trail's signing.
type AuditInfo struct {
	Origin    string `json:"origin"`     // the tree heads' origin line
	PublicKey string `json:"public_key"` // note verifier key signing the tree heads
}

// AuditInfo returns the origin and public key system.info publishes.
func (c *Client) AuditInfo(ctx context.Context) (AuditInfo, error) {
	var ai AuditInfo
	err := c.call(ctx, wire.Subject("system.info"), nil, &ai, 0)
	return ai, err
}

// InclusionProof returns an inclusion proof (audit.proof.inclusion).
func (c *Client) InclusionProof(ctx context.Context, req InclusionRequest) (InclusionProof, error) {
	var p InclusionProof
	err := c.call(ctx, wire.Subject("audit.proof.inclusion"), req, &p, 0)
	return p, err
}

// ConsistencyProof returns the proof that the tree of size from is a
// prefix of the tree of size to (0: the latest signed size).
func (c *Client) ConsistencyProof(ctx context.Context, from, to uint64) (ConsistencyProof, error) {
	req := wire.ConsistencyRequest{From: from, To: to}
	var p ConsistencyProof
	err := c.call(ctx, wire.Subject("audit.proof.consistency"), req, &p, 0)
	return p, err
}

// AuditCheckpoint returns checkpoint id with its digest
// (audit.checkpoint.get), whatever workspace it belongs to.
func (c *Client) AuditCheckpoint(ctx context.Context, id string) (checkpointchain.Checkpoint, error) {
	var cp checkpointchain.Checkpoint
	err := c.call(ctx, wire.Subject("audit.checkpoint.get"), wire.GetRequest{ID: id}, &cp, 0)
	return cp, err
}

// FindCheckpointEntry returns the checkpoint_created entry of checkpoint
// checkpointID (global view). No such entry is an *Error with code
// not_found.
func (c *Client) FindCheckpointEntry(ctx context.Context, checkpointID string) (trail.Entry, error) {
	q := TrailQuery{
		EventType: trail.EventCheckpointCreated, Limit: trail.MaxLimit,
		Body: map[string]string{"checkpoint_id": checkpointID},
	}
	for {
		var page TrailPage
		if err := c.call(ctx, wire.Subject("audit.trail.read"), q, &page, 0); err != nil {
			return trail.Entry{}, err
		}
		// The body filter is checked here too: a daemon that ignores it
		// returns every checkpoint_created entry.
		for _, e := range page.Entries {
			var body struct {
				CheckpointID string `json:"checkpoint_id"`
			}
			if e.EventType == trail.EventCheckpointCreated && json.Unmarshal(e.Body, &body) == nil && body.CheckpointID == checkpointID {
				return e, nil
			}
		}
		if page.Next == nil || *page.Next == "" {
			return trail.Entry{}, &Error{Code: "not_found", Status: wire.LookupCode("not_found").Status,
				Message: fmt.Sprintf("no checkpoint_created entry for checkpoint %s in the trail", checkpointID)}
		}
		q.After = *page.Next
	}
}

// Entries yields the global trail's entries matching q in global order,
// reading audit.trail.read page by page (q.Limit is the page size, default
// the daemon's maximum), and stops at the first error, which it yields.
func (c *Client) Entries(ctx context.Context, q TrailQuery) iter.Seq2[trail.Entry, error] {
	return func(yield func(trail.Entry, error) bool) {
		if q.Limit == 0 {
			q.Limit = trail.MaxLimit
		}
		for {
			page, err := c.ReadTrail(ctx, q)
			if err != nil {
				yield(trail.Entry{}, err)
				return
			}
			for _, e := range page.Entries {
				if !yield(e, nil) {
					return
				}
			}
			if page.Next == nil || *page.Next == "" {
				return
			}
			q.After = *page.Next
		}
	}
}

// Export writes a bundle (auditor package, format wacp-trail-bundle/1) of
// the trail to w: the latest signed tree head, exactly its size entries,
// and the checkpoint objects they reference. It returns the tree head the
// bundle is complete for. It copies what the daemon serves and checks only
// that each object matches its digest; auditor.Verify checks the rest.
func (c *Client) Export(ctx context.Context, w io.Writer) (TreeHead, error) {
	th, err := c.TreeHead(ctx)
	if err != nil {
		return TreeHead{}, err
	}
	bw := auditor.NewBundleWriter(w)
	if err := bw.Header(auditor.Header{Origin: th.Origin, PublicKey: th.PublicKey, STH: th.TreeHead}); err != nil {
		return TreeHead{}, err
	}
	n := uint64(0)
	if th.Size > 0 {
		for e, err := range c.Entries(ctx, TrailQuery{}) {
			if err != nil {
				return TreeHead{}, fmt.Errorf("export: read the trail after %d entries: %w", n, err)
			}
			if err := bw.Entry(e); err != nil {
				return TreeHead{}, fmt.Errorf("export: %w", err)
			}
			if n++; n == th.Size {
				break
			}
		}
	}
	if n != th.Size {
		return TreeHead{}, fmt.Errorf("export: the trail has %d entries, the tree head signs %d", n, th.Size)
	}
	for _, ref := range bw.Referenced() {
		cp, err := c.AuditCheckpoint(ctx, ref.Checkpoint)
		if err != nil {
			return TreeHead{}, fmt.Errorf("export: checkpoint %s: %w", ref.Checkpoint, err)
		}
		data, err := checkpointchain.Encode(cp)
		if err != nil {
			return TreeHead{}, fmt.Errorf("export: %w", err)
		}
		if got := casstore.RefOf(data); got != ref.Digest {
			return TreeHead{}, fmt.Errorf("export: checkpoint %s encodes to %s, entry %s pins %s: %w",
				ref.Checkpoint, got, ref.Entry, ref.Digest, casstore.ErrCorrupt)
		}
		if err := bw.Object(ref.Digest, data); err != nil {
			return TreeHead{}, fmt.Errorf("export: %w", err)
		}
	}
	if err := bw.Close(); err != nil {
		return TreeHead{}, fmt.Errorf("export: %w", err)
	}
	return th, nil
}

// LiveState returns the daemon's live state in the form auditor.Replay
// gives (coordinator): every workspace's role, parent and state, and every
// chain's head and last final checkpoint. Chain counts are not read
// (Count -1).
func (c *Client) LiveState(ctx context.Context) (auditor.State, error) {
	ws, err := c.ListWorkspaces(ctx, "", "")
	if err != nil {
		return auditor.State{}, err
	}
	st := auditor.State{Workspaces: map[string]auditor.WorkspaceState{}, Chains: map[string]auditor.Chain{}}
	for _, w := range ws {
		st.Workspaces[w.ID] = auditor.WorkspaceState{Role: w.Role, Parent: w.ParentID(), State: string(w.State)}
		head, err := c.Head(ctx, w.ID, false)
		if isCode(err, "not_found") {
			continue
		}
		if err != nil {
			return auditor.State{}, fmt.Errorf("checkpoint head of %s: %w", w.ID, err)
		}
		ch := auditor.Chain{Head: head.ID, Count: -1}
		final, err := c.Head(ctx, w.ID, true)
		switch {
		case err == nil:
			ch.LastFinal = final.ID
		case !isCode(err, "no_final_checkpoint"):
			return auditor.State{}, fmt.Errorf("final checkpoint of %s: %w", w.ID, err)
		}
		st.Chains[w.ID] = ch
	}
	return st, nil
}

func isCode(err error, code string) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// ReplayDiff replays the whole trail (audit.trail.read) and compares the
// result with the live state (coordinator). While the daemon is busy the
// two can differ by what committed in between: it reads the live state,
// then the trail to its end, and tries again up to attempts times (0: 3)
// until they agree. It returns the replayed state and the differences that
// remained.
func (c *Client) ReplayDiff(ctx context.Context, attempts int) (auditor.State, []auditor.Difference, error) {
	if attempts <= 0 {
		attempts = 3
	}
	r := auditor.NewReplayer()
	var diffs []auditor.Difference
	for range attempts {
		live, err := c.LiveState(ctx)
		if err != nil {
			return auditor.State{}, nil, err
		}
		for e, err := range c.Entries(ctx, TrailQuery{After: r.Last()}) {
			if err != nil {
				return auditor.State{}, nil, err
			}
			if err := r.Apply(e); err != nil {
				return auditor.State{}, nil, err
			}
		}
		if diffs = auditor.Diff(r.State(), live); len(diffs) == 0 {
			break
		}
	}
	return r.State(), diffs, nil
}

// ProveCheckpoint proves that checkpoint id is in the signed trail: it
// gathers the evidence (the checkpoint_created entry, a signed tree head
// covering it, waiting up to wait for one, an inclusion proof and the
// checkpoint) and checks it with auditor.ProveCheckpoint against
// publicKey, the tree-head key the caller trusts ("" takes the one
// system.info publishes: compare CheckpointProof.PublicKey with the key you
// trust). A check that fails is an *auditor.NotProvedError (errors.Is
// auditor.ErrProof); any other error means the evidence could not be had.
func (c *Client) ProveCheckpoint(ctx context.Context, id, publicKey string, wait time.Duration) (auditor.CheckpointProof, error) {
	e, err := c.FindCheckpointEntry(ctx, id)
	if err != nil {
		return auditor.CheckpointProof{}, err
	}
	if publicKey == "" {
		ai, err := c.AuditInfo(ctx)
		if err != nil {
			return auditor.CheckpointProof{}, err
		}
		if publicKey = ai.PublicKey; publicKey == "" {
			return auditor.CheckpointProof{}, errors.New("prove checkpoint: the daemon publishes no public key in system.info")
		}
	}
	// A tree head covering the entry is signed within about a second of
	// its commit: until then the proof request is refused.
	deadline := time.Now().Add(wait)
	var (
		th TreeHead
		p  InclusionProof
	)
	for {
		if th, err = c.TreeHead(ctx); err != nil {
			return auditor.CheckpointProof{}, err
		}
		p, err = c.InclusionProof(ctx, InclusionRequest{Entry: e.ID, Size: th.Size})
		if err == nil {
			break
		}
		if !errors.Is(err, ErrRefused) || time.Now().After(deadline) {
			return auditor.CheckpointProof{}, err
		}
		t := time.NewTimer(250 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return auditor.CheckpointProof{}, ctx.Err()
		case <-t.C:
		}
	}
	cp, err := c.AuditCheckpoint(ctx, id)
	if err != nil {
		return auditor.CheckpointProof{}, err
	}
	return auditor.ProveCheckpoint(id, auditor.CheckpointEvidence{
		Entry: e, TreeHead: th.TreeHead, ProofEntry: p.Entry, ProofSize: p.Size, Index: p.Index, Proof: p.Proof, Checkpoint: cp,
	}, publicKey)
}
