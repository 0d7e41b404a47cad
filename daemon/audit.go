package daemon

import (
	"context"
	"errors"
	"time"

	"github.com/wacpd/wacpd/clock"
	"github.com/wacpd/wacpd/principal"
	"github.com/wacpd/wacpd/runtime"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/wire"
)

func (r *Daemon) auditSTH(ctx context.Context, c caller, body []byte) (any, error) {
	var req struct{}
	if err := runtime.Decode(body, &req); err != nil {
		return nil, err
	}
	th, err := r.eng.TreeHead()
	if err != nil {
		return nil, err
	}
	return wire.TreeHead{TreeHead: th, PublicKey: r.publicKey}, nil
}

// checkFilters checks the trail filters audit.trail.read and
// audit.trail.aggregate share: the event type is registered, since and
// until are RFC 3339 times (normalized in place).
func checkFilters(typ trail.EventType, since, until *string) error {
	if err := checkEventType(typ); err != nil {
		return err
	}
	var err error
	if *since, err = filterTime("since", *since); err != nil {
		return err
	}
	*until, err = filterTime("until", *until)
	return err
}

// defaultSize returns size, or the latest signed size when it is 0.
func (r *Daemon) defaultSize(size uint64) (uint64, error) {
	if size != 0 {
		return size, nil
	}
	th, err := r.eng.TreeHead()
	return th.Size, err
}

func (r *Daemon) auditInclusion(ctx context.Context, c caller, body []byte) (any, error) {
	var req wire.InclusionRequest
	if err := runtime.Decode(body, &req); err != nil {
		return nil, err
	}
	if (req.Entry == "") == (req.Index == nil) {
		return nil, runtime.Refuse(wire.CodeInvalidStructure, "give exactly one of entry and index")
	}
	size, err := r.defaultSize(req.Size)
	if err != nil {
		return nil, err
	}
	log := r.eng.Trail()
	var index uint64
	if req.Index != nil {
		index = *req.Index
	} else {
		seq, err := log.Seq(req.Entry)
		if err != nil {
			return nil, err
		}
		index = seq - 1
	}
	if index >= size || size > log.Len() {
		return nil, runtime.Refuse(wire.CodeNotFound, "no leaf %d in a tree of %d entries (the trail has %d)", index, size, log.Len())
	}
	e, err := log.At(index + 1)
	if err != nil {
		return nil, err
	}
	leaf, err := trail.LeafData(e)
	if err != nil {
		return nil, err
	}
	p, err := log.InclusionProof(index, size)
	if err != nil {
		return nil, treeErr(err)
	}
	root, err := log.Root(size)
	if err != nil {
		return nil, treeErr(err)
	}
	return wire.InclusionProof{
		Entry: e.ID, Index: index, Size: size, LeafHash: trail.FormatHash(trail.Hasher{}.HashLeaf(leaf)),
		Proof: formatHashes(p), Root: trail.FormatHash(root),
	}, nil
}

func (r *Daemon) auditConsistency(ctx context.Context, c caller, body []byte) (any, error) {
	var req wire.ConsistencyRequest
	if err := runtime.Decode(body, &req); err != nil {
		return nil, err
	}
	to, err := r.defaultSize(req.To)
	if err != nil {
		return nil, err
	}
	log := r.eng.Trail()
	p, err := log.ConsistencyProof(req.From, to)
	if err != nil {
		return nil, treeErr(err)
	}
	fromRoot, err := log.Root(req.From)
	if err != nil {
		return nil, treeErr(err)
	}
	toRoot, err := log.Root(to)
	if err != nil {
		return nil, treeErr(err)
	}
	return wire.ConsistencyProof{
		From: req.From, To: to, Proof: formatHashes(p),
		FromRoot: trail.FormatHash(fromRoot), ToRoot: trail.FormatHash(toRoot),
	}, nil
}

func (r *Daemon) auditCheckpoint(ctx context.Context, c caller, body []byte) (any, error) {
	var req wire.GetRequest
	if err := runtime.Decode(body, &req); err != nil {
		return nil, err
	}
	cp, err := r.eng.GetCheckpoint(ctx, r.eng.Root(), req.ID)
	if err != nil {
		return nil, err
	}
	if c.p.Kind == principal.KindUser {
		// A checkpoint is its workspace's: a user reads the checkpoints
		// of its own workspaces, or any with view_trail_any.
		if _, err := r.eng.UserTrailScope(ctx, c.p.Name, cp.Workspace, true); err != nil {
			return nil, err
		}
	}
	return cp, nil
}

func treeErr(err error) error {
	if errors.Is(err, runtime.ErrTreeSize) {
		return &runtime.Error{Code: wire.CodeNotFound, Message: err.Error(), Err: err}
	}
	return err
}

func formatHashes(hs [][]byte) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = trail.FormatHash(h)
	}
	return out
}

func (r *Daemon) auditRead(ctx context.Context, c caller, body []byte) (any, error) {
	var req wire.TrailQuery
	if err := runtime.Decode(body, &req); err != nil {
		return nil, err
	}
	if err := checkFilters(req.EventType, &req.Since, &req.Until); err != nil {
		return nil, err
	}
	keep, err := r.userScope(ctx, c, req.Workspace, false)
	if err != nil {
		return nil, err
	}
	entries, next, err := r.eng.Trail().Read(ctx, trail.Query{
		After: req.After, Limit: req.Limit, Workspace: req.Workspace, EventType: req.EventType,
		Actor: req.Actor, Since: req.Since, Until: req.Until, Body: req.Body, MaxBytes: r.replyBudget(),
		Keep: keep,
	})
	if errors.Is(err, runtime.ErrNoSuchEntry) {
		return nil, runtime.Refuse(wire.CodeNotFound, "no trail entry %s", req.After)
	}
	if err != nil {
		return nil, err
	}
	return page(entries, next), nil
}

func (r *Daemon) auditVerify(ctx context.Context, c caller, body []byte) (any, error) {
	var req wire.VerifyRequest
	if err := runtime.Decode(body, &req); err != nil {
		return nil, err
	}
	if _, err := r.userScope(ctx, c, req.Workspace, true); err != nil {
		return nil, err
	}
	return r.eng.VerifyTrail(ctx, req.Workspace)
}

// userScope is what a user token may read of the trail
// (runtime.UserTrailScope): nil for everything; for the coordinator and
// auditors always nil. whole is a read that cannot be filtered (a
// verification of the global chain), which a user may make only with
// view_trail_any.
func (r *Daemon) userScope(ctx context.Context, c caller, ws string, whole bool) (func(trail.Entry) bool, error) {
	if c.p.Kind != principal.KindUser {
		return nil, nil
	}
	return r.eng.UserTrailScope(ctx, c.p.Name, ws, whole && ws == "")
}

// filterTime returns a since or until filter in the form of the trail's
// timestamps (clock.Layout), which the trail compares as strings: any RFC
// 3339 timestamp is accepted ("2026-11-22T10:00:00Z", an offset, fewer
// fraction digits) and brought to UTC with nine fraction digits, so that
// "…:00Z" does not sort after "…:00.5Z". Anything else is
// invalid_structure. "" (no filter) stays "".
func filterTime(name, s string) (string, error) {
	if s == "" {
		return "", nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || t.UTC().Year() < 0 || t.UTC().Year() > 9999 {
		return "", runtime.Refuse(wire.CodeInvalidStructure, "%s %q is not an RFC 3339 timestamp such as %s", name, s, clock.Layout)
	}
	return clock.Format(t), nil
}

// checkEventType refuses an event_type filter outside the closed registry,
// which would match nothing.
func checkEventType(t trail.EventType) error {
	if t != "" && !t.Valid() {
		return runtime.Refuse(wire.CodeInvalidStructure, "event_type %q is not one of the %d registered trail event types", t, len(trail.EventTypes()))
	}
	return nil
}
