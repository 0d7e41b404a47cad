package runtime

import (
	"context"
	"fmt"
	"time"

	"github.com/wacpd/wacpd/clock"
	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

// Placement: several daemons share one NATS cluster (issue 20). They share
// the root workspace's id (Config.RootID), and each serves some of the
// deployment's partitions. A workspace's partition is a function of its id
// alone (Config.Partition), so the engine draws ids until one lands where
// the workspace belongs: in its parent's partition, so that a subtree stays
// with one daemon, or, for a child of the root, in the partition the
// request names (WithPartition). A checkpoint's id lands in its
// workspace's partition. Every other id is minted as before.

// maxPartitions is the largest Config.Partitions (placement.MaxPartitions).
const maxPartitions = 1024

// checkPlacement refuses a RootID that is not a canonical ULID and a
// partition count out of range or without its function.
func (c Config) checkPlacement() error {
	switch {
	case c.RootID != "" && !clock.ValidID(c.RootID):
		return fmt.Errorf("runtime: config: RootID %q is not a ULID (26 upper-case Crockford base32 characters)", c.RootID)
	case c.Partitions < 0 || c.Partitions > maxPartitions:
		return fmt.Errorf("runtime: config: Partitions %d: want 0 or 1 (off), or up to %d", c.Partitions, maxPartitions)
	case c.Partitions > 1 && c.Partition == nil:
		return fmt.Errorf("runtime: config: Partitions %d needs a Partition function", c.Partitions)
	}
	return nil
}

// partitionKey is the context key of WithPartition.
type partitionKey struct{}

// WithPartition returns a copy of ctx that places a new child of the root,
// created with it (CreateWorkspace, UserCreateWorkspace), in partition p
// when the engine partitions its ids (Config.Partitions more than 1).
// Without it such a child goes into the root's partition. A workspace
// under any other parent goes into its parent's partition whatever ctx
// says. A p outside 0..Partitions-1 is refused (invalid_structure) and
// nothing is created; with partitioning off, p is ignored.
func WithPartition(ctx context.Context, p int) context.Context {
	return context.WithValue(ctx, partitionKey{}, p)
}

// partitioned reports whether the engine draws ids into partitions.
func (e *Engine) partitioned() bool { return e.cfg.Partitions > 1 }

// partitionOf returns the partition of id; 0 when ids are not partitioned.
func (e *Engine) partitionOf(id string) int {
	if !e.partitioned() {
		return 0
	}
	return e.cfg.Partition(id, e.cfg.Partitions)
}

// childPartition returns the partition of a new workspace under parent,
// created with ctx: the one ctx names (WithPartition) for a child of the
// root, its parent's otherwise. A partition ctx names out of range is
// refused.
func (e *Engine) childPartition(ctx context.Context, parent *workspace.Workspace) (int, error) {
	if !e.partitioned() {
		return 0, nil
	}
	p, ok := ctx.Value(partitionKey{}).(int)
	if n := e.cfg.Partitions; ok && (p < 0 || p >= n) {
		return 0, Refuse(wire.CodeInvalidStructure, "partition %d is not one of the deployment's %d (0 to %d)", p, n, n-1)
	}
	if ok && parent.IsRoot() {
		return p, nil
	}
	return e.partitionOf(parent.ID), nil
}

// mintIn returns a fresh id for an event at ts whose partition is p (e.ids.New
// when ids are not partitioned). It draws from e.ids until an id lands in
// p, at most 64 times the partition count: with ids that hash uniformly,
// all of them miss with a probability of about e⁻⁶⁴, so running out means
// Partition does not spread ids (an internal error). The ids that miss are
// dropped; those returned still increase strictly.
func (e *Engine) mintIn(ts time.Time, p int) (string, error) {
	if !e.partitioned() {
		return e.ids.New(ts), nil
	}
	n := e.cfg.Partitions
	draws := 64 * n
	for range draws {
		if id := e.ids.New(ts); e.cfg.Partition(id, n) == p {
			return id, nil
		}
	}
	return "", fmt.Errorf("runtime: mint an id in partition %d of %d: none of %d draws landed there", p, n, draws)
}
