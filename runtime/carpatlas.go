package runtime

// The atlases a run governs by and the tool services it forwards to: loaded,
// replaced and unloaded atlases, tool tokens minted and revoked, each
// recorded in the run's TRACE session (carp.go holds their records).

import (
	"context"
	"encoding/json"
	"maps"
	"slices"

	"github.com/wacpd/wacpd/atlas"
	"github.com/wacpd/wacpd/internal/recstore"
	"github.com/wacpd/wacpd/wire"
)

// Atlases returns the loaded atlases, in load order, with their checksums.
func (e *Engine) Atlases() ([]*atlas.Manifest, map[string]string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.carp.atlases), maps.Clone(e.carp.sums)
}

// AtlasChange is the outcome of a load or unload.
type AtlasChange struct {
	AtlasID  string `json:"atlas_id"`
	Version  string `json:"version"`
	Checksum string `json:"checksum"`
	Change   string `json:"change"` // loaded, replaced, unchanged, unloaded
}

// LoadAtlas loads m (validated by the caller, atlas.Validate), replacing
// a loaded atlas of the same id, and records atlas.loaded in the run's
// TRACE session (the root workspace's) with the atlas's id, version and
// checksum. Loading the very atlas that is loaded changes nothing and
// records nothing. by is who loaded it (the coordinator, or "config" for
// -atlas).
func (e *Engine) LoadAtlas(ctx context.Context, m *atlas.Manifest, by string) (AtlasChange, error) {
	sum, err := atlas.Checksum(m)
	if err != nil {
		return AtlasChange{}, err
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return AtlasChange{}, err
	}
	ch := AtlasChange{AtlasID: m.AtlasID, Version: m.Version, Checksum: sum}
	err = e.run(ctx, len(raw), func() error {
		return e.commit(func(t *tx) error {
			list, sums := t.atlases()
			old, loaded := sums[m.AtlasID]
			switch {
			case loaded && old == sum:
				ch.Change = "unchanged"
				return nil
			case loaded:
				ch.Change = "replaced"
			default:
				ch.Change = "loaded"
			}
			l := t.carpOf()
			seq := max(l.seq, t.e.carp.seq) + 1
			if err := t.step("atlas"); err != nil {
				return err
			}
			if err := recstore.Put(t.txn, keyAtlases, m.AtlasID, &storedAtlas{Seq: seq, Checksum: sum, Manifest: raw}); err != nil {
				return err
			}
			next := slices.DeleteFunc(slices.Clone(list), func(x *atlas.Manifest) bool { return x.AtlasID == m.AtlasID })
			next = append(next, m)
			nsums := maps.Clone(sums)
			nsums[m.AtlasID] = sum
			l.atlases, l.sums, l.seq = &next, nsums, seq
			payload := map[string]any{"atlas_id": m.AtlasID, "version": m.Version, "checksum": sum, "by": by,
				"actions": len(m.Actions), "policies": len(m.Policies), "context_blocks": len(m.ContextBlocks)}
			if loaded {
				payload["replaced_checksum"] = old
			}
			_, err := t.traceEmit(t.runSpan(), "atlas.loaded", payload)
			return err
		})
	})
	return ch, err
}

// UnloadAtlas unloads atlas id and records atlas.unloaded; resolutions
// made under it can no longer execute (RESOLUTION_EXPIRED).
func (e *Engine) UnloadAtlas(ctx context.Context, id, by string) (AtlasChange, error) {
	var ch AtlasChange
	err := e.run(ctx, 0, func() error {
		return e.commit(func(t *tx) error {
			list, sums := t.atlases()
			sum, ok := sums[id]
			if !ok {
				return Refuse(wire.CodeNotFound, "atlas %q is not loaded", id)
			}
			i := slices.IndexFunc(list, func(x *atlas.Manifest) bool { return x.AtlasID == id })
			ch = AtlasChange{AtlasID: id, Version: list[i].Version, Checksum: sum, Change: "unloaded"}
			if err := t.step("atlas"); err != nil {
				return err
			}
			if err := t.txn.Delete([]byte(keyAtlases + id)); err != nil {
				return err
			}
			next := slices.Delete(slices.Clone(list), i, i+1)
			nsums := maps.Clone(sums)
			delete(nsums, id)
			l := t.carpOf()
			l.atlases, l.sums, l.seq = &next, nsums, max(l.seq, t.e.carp.seq)
			_, err := t.traceEmit(t.runSpan(), "atlas.unloaded", map[string]any{"atlas_id": id, "version": ch.Version, "checksum": sum, "by": by})
			return err
		})
	})
	return ch, err
}

// Tool token events of the run's TRACE session (a tool service is no
// user: the WACP trail has no event for it).
const (
	TraceToolAuthorized = "tool.authorized"
	TraceToolRevoked    = "tool.revoked"
)

// GrantTool stores a tool service's token (grant, in the same commit) for
// the coordinator (actor, the root workspace) and records
// tool.authorized; RevokeTool deletes n tokens (del) and records
// tool.revoked.
func (e *Engine) GrantTool(ctx context.Context, actor, name string, grant func(Grants) error) error {
	return e.toolToken(ctx, actor, name, TraceToolAuthorized, 1, grant)
}

// RevokeTool: see GrantTool. With n zero nothing is written.
func (e *Engine) RevokeTool(ctx context.Context, actor, name string, n int, del func(Grants) error) error {
	return e.toolToken(ctx, actor, name, TraceToolRevoked, n, del)
}

func (e *Engine) toolToken(ctx context.Context, actor, name, typ string, n int, fn func(Grants) error) error {
	return e.run(ctx, 0, func() error {
		if a := e.get(actor); a == nil || !a.IsRoot() {
			return Refuse(wire.CodePermissionDenied, "only the coordinator mints and revokes tool tokens")
		}
		if n == 0 {
			return nil
		}
		return e.commit(func(t *tx) error {
			if err := t.step("token"); err != nil {
				return err
			}
			if err := fn(Grants{txn: t.txn}); err != nil {
				return err
			}
			_, err := t.traceEmit(t.runSpan(), typ, map[string]any{"tool": name, "tokens": n})
			return err
		})
	})
}
