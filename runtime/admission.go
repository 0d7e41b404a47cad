package runtime

import (
	"github.com/wacpd/wacpd/internal/diskspace"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/wire"
)

// Admission control (WACP Workspace §10): before a workspace is created
// the runtime checks its capacity in the four physical dimensions. What
// capacity means for wacpd:
//
//   - compute and network: the workspaces that are not closed or failed
//     (each is served by the one committer and holds an agent account, its
//     subjects and its inbox), at most Capacity.MaxLiveWorkspaces;
//   - memory: the live workspaces' records, chains and inbox indexes are
//     kept in memory, reckoned at Capacity.MemoryPerWorkspace each, within
//     Config.MemoryLimit when one is set;
//   - storage: the data dir's disk keeps Capacity.StoragePerWorkspace
//     free above the engine's reserve (Config.MinFreeBytes), when the disk
//     guard is on.
//
// Short in any: workspace_rejected {reason: capacity_exhausted,
// capacity_details} is written to the global trail in a commit of its
// own, and the request is refused with capacity_exhausted; the workspace
// never exists (no id, no record). Priority plays no part (priority-based
// admission is Full level and optional).

// Capacity is the admission thresholds. The zero value means the
// defaults.
type Capacity struct {
	// MaxLiveWorkspaces bounds the workspaces not closed or failed, the
	// root included; zero means 10000, negative no bound.
	MaxLiveWorkspaces int
	// MemoryPerWorkspace is the memory one live workspace is reckoned to
	// hold, checked against Config.MemoryLimit when that is positive;
	// zero means 1 MiB.
	MemoryPerWorkspace int64
	// StoragePerWorkspace is the free disk a new workspace needs above
	// the engine's reserve; zero means 16 MiB.
	StoragePerWorkspace int64
}

// Admission defaults.
const (
	defaultMaxLive        = 10000
	defaultMemoryPerWS    = 1 << 20
	defaultStoragePerWS   = 16 << 20
	reasonCapacityExhaust = "capacity_exhausted"
)

// admit checks that one more workspace fits the run's capacity. When it
// does not, it records workspace_rejected and returns the refusal
// (capacity_exhausted, with the capacity details). Runs on the committer.
func (e *Engine) admit() error {
	details := e.capacityShort()
	if details == nil {
		return nil
	}
	err := e.commit(func(t *tx) error {
		_, err := t.append("", trail.ActorProtocol, trail.EventWorkspaceRejected, map[string]any{
			"reason": reasonCapacityExhaust, "capacity_details": details,
		})
		return err
	})
	if err != nil {
		return err
	}
	r := Refuse(wire.CodeCapacityExhausted, "the runtime has no capacity for another workspace (%s); retry later or dispatch fewer at once", details["dimension"])
	r.Details = map[string]any{"reason": reasonCapacityExhaust, "capacity_details": details}
	return r
}

// capacityShort returns the capacity details of the first dimension short
// of room for one more workspace, nil when all have room. Caller holds
// e.mu.
func (e *Engine) capacityShort() map[string]any {
	c := e.cfg.Capacity
	live := 0
	for _, w := range e.ws {
		if !w.State.Terminal() {
			live++
		}
	}
	maxLive := c.MaxLiveWorkspaces
	if maxLive == 0 {
		maxLive = defaultMaxLive
	}
	if maxLive > 0 && live+1 > maxLive {
		return map[string]any{"dimension": "compute", "live_workspaces": live, "max_live_workspaces": maxLive}
	}
	per := c.MemoryPerWorkspace
	if per <= 0 {
		per = defaultMemoryPerWS
	}
	if limit := e.cfg.MemoryLimit; limit > 0 && int64(live+1)*per > limit {
		return map[string]any{"dimension": "memory", "live_workspaces": live, "memory_per_workspace": per, "memory_limit": limit}
	}
	need := c.StoragePerWorkspace
	if need <= 0 {
		need = defaultStoragePerWS
	}
	if free, reserve, ok := e.diskFree(); ok && free < reserve+uint64(need) {
		return map[string]any{"dimension": "storage", "free_bytes": free, "reserve_bytes": reserve, "storage_per_workspace": need}
	}
	return nil
}

// diskFree returns the data dir's free bytes and the engine's reserve, and
// ok=false when the disk guard is off (in memory, or MinFreeBytes
// negative) or the free space cannot be read (the guard reports that).
func (e *Engine) diskFree() (free, reserve uint64, ok bool) {
	if e.cfg.InMemory || e.cfg.MinFreeBytes < 0 {
		return 0, 0, false
	}
	reserve = uint64(e.cfg.MinFreeBytes)
	if reserve == 0 {
		reserve = defaultMinFree
	}
	read := e.cfg.freeSpace
	if read == nil {
		dir := e.cfg.DataDir
		read = func() (uint64, error) { return diskspace.Free(dir) }
	}
	free, err := read()
	return free, reserve, err == nil
}
