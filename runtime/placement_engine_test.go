package runtime

import (
	"errors"
	"hash/fnv"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wacpd/wacpd/clock"
	"github.com/wacpd/wacpd/highway"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/user"
	"github.com/wacpd/wacpd/wire"
	"github.com/wacpd/wacpd/workspace"
)

// Engine tests of placement (placement.go): the deployment's shared root id
// and the ids drawn into partitions.

// fnvPartition is placement.Partition (which runtime must not import): the
// 32-bit FNV-1a hash of id, modulo n.
func fnvPartition(id string, n int) int {
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32() % uint32(n))
}

func withRootID(id string) func(*Config) { return func(c *Config) { c.RootID = id } }

func withPartitions(n int) func(*Config) {
	return func(c *Config) { c.Partitions, c.Partition = n, fnvPartition }
}

// TestRootID: a new database's root gets Config.RootID and the ids that
// follow are greater, even when the shared root's time is ahead of this
// engine's clock; the data dir then opens with that RootID or none, and
// refuses another (ErrRootMismatch).
func TestRootID(t *testing.T) {
	dir := t.TempDir()
	rootID := clock.NewIDs(nil).New(time.Now().Add(time.Hour))
	e := openEngineAt(t, dir, withRootID(rootID))
	if got := e.Root(); got != rootID {
		t.Fatalf("Root() = %s, want RootID %s", got, rootID)
	}
	first := globalTrail(t, e)[0]
	if first.EventType != trail.EventWorkspaceCreated || first.Workspace != rootID || entryBody(t, first)["workspace_id"] != rootID {
		t.Fatalf("trail entry #1 = %s of %s (%s), want the root %s's workspace_created", first.EventType, first.Workspace, first.Body, rootID)
	}
	if first.ID <= rootID {
		t.Errorf("trail entry #1's id %s is not above the root's %s", first.ID, rootID)
	}
	w := idleWorker(t, e, rootID)
	if w.ID <= rootID || w.ParentID() != rootID {
		t.Errorf("CreateWorkspace = %s under %s, want an id above the root %s, under it", w.ID, w.ParentID(), rootID)
	}
	verify(t, e)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}

	for _, id := range []string{rootID, ""} {
		e := openEngineAt(t, dir, withRootID(id))
		if got := e.Root(); got != rootID {
			t.Errorf("reopened with RootID %q: Root() = %s, want %s", id, got, rootID)
		}
		if w2 := idleWorker(t, e, rootID); w2.ID <= w.ID {
			t.Errorf("reopened with RootID %q: CreateWorkspace = %s, want an id above %s", id, w2.ID, w.ID)
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
	}

	other := clock.NewIDs(nil).New(time.Now())
	e2, err := Open(Config{DataDir: dir, RootID: other})
	if err == nil {
		e2.Close()
	}
	if !errors.Is(err, ErrRootMismatch) || !strings.Contains(err.Error(), rootID) || !strings.Contains(err.Error(), other) {
		t.Fatalf("Open(RootID %s) of root %s's data dir = %v, want ErrRootMismatch naming both", other, rootID, err)
	}
	// The refusal changed nothing: the data dir still opens.
	e = openEngineAt(t, dir, withRootID(rootID))
	verify(t, e)
}

// TestRootID_Invalid: a RootID that is not a canonical ULID is refused
// before anything is written.
func TestRootID_Invalid(t *testing.T) {
	id := clock.NewIDs(nil).New(time.Now())
	for _, bad := range []string{"root", strings.ToLower(id), id + "0", id[1:], "8ZZZZZZZZZZZZZZZZZZZZZZZZZ"} {
		dir := filepath.Join(t.TempDir(), "db")
		e, err := Open(Config{DataDir: dir, RootID: bad})
		if err == nil {
			e.Close()
			t.Errorf("Open(RootID %q) = nil error, want a refusal", bad)
			continue
		}
		if !strings.Contains(err.Error(), "RootID") {
			t.Errorf("Open(RootID %q) = %v, want an error naming RootID", bad, err)
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("Open(RootID %q) created the data dir (%v)", bad, err)
		}
	}
}

// TestPartitions_Config: Partitions above 1 needs Partition and is at most
// 1024; 0 and 1 are off and need nothing.
func TestPartitions_Config(t *testing.T) {
	tests := []struct {
		name       string
		partitions int
		partition  func(string, int) int
		wantErr    bool
	}{
		{"off", 0, nil, false},
		{"one", 1, nil, false},
		{"no function", 8, nil, true},
		{"negative", -1, fnvPartition, true},
		{"too many", maxPartitions + 1, fnvPartition, true},
		{"most", maxPartitions, fnvPartition, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := Open(Config{InMemory: true, Partitions: tt.partitions, Partition: tt.partition})
			if err == nil {
				e.Close()
			}
			if (err != nil) != tt.wantErr {
				t.Errorf("Open(Partitions %d, Partition set %v) = %v, want error %v", tt.partitions, tt.partition != nil, err, tt.wantErr)
			}
		})
	}
}

// TestPartitions_IDs: with 8 partitions, a child of the root lands in the
// partition its context names, or without one in the root's; every
// workspace below it and every checkpoint of them lands in its partition,
// whoever creates it and whatever its context says.
func TestPartitions_IDs(t *testing.T) {
	const n = 8
	e := openVerified(t, withPartitions(n))
	root := e.Root()
	home := fnvPartition(root, n)
	p := (home + 5) % n // a partition other than the root's
	in := func(what, id string, want int) {
		t.Helper()
		if got := fnvPartition(id, n); got != want {
			t.Errorf("%s %s is in partition %d, want %d", what, id, got, want)
		}
	}

	d, err := e.CreateWorkspace(WithPartition(ctx, p), root, []byte(`{"role":"worker","delegate":true}`))
	if err != nil {
		t.Fatal(err)
	}
	in("the root's child created WithPartition", d.ID, p)
	directive(t, e, root, d.ID)
	var below []*workspace.Workspace
	for i := range 3 {
		// A delegate's child, with a context naming another partition
		// (ignored: not a child of the root).
		b, err := e.CreateWorkspace(WithPartition(ctx, home), d.ID, []byte(`{"role":"worker"}`))
		if err != nil {
			t.Fatal(err)
		}
		in("the delegate's child", b.ID, p)
		directive(t, e, d.ID, b.ID)
		below = append(below, b)
		// The coordinator's, under the delegate.
		c, err := e.CreateWorkspace(ctx, root, mustJSON(map[string]any{"role": "worker", "parent": d.ID}))
		if err != nil {
			t.Fatal(err)
		}
		in("the coordinator's workspace under the delegate", c.ID, p)
		// A grandchild.
		g, err := e.CreateWorkspace(ctx, d.ID, mustJSON(map[string]any{"role": "worker", "parent": b.ID}))
		if err != nil {
			t.Fatalf("create #%d under %s: %v", i, b.ID, err)
		}
		in("a grandchild of the delegate", g.ID, p)
	}
	for _, w := range append([]*workspace.Workspace{d}, below...) {
		var parent *string
		for range 3 {
			cp := checkpoint(t, e, w.ID, parent, "provisional")
			in("a checkpoint of "+w.ID, cp.ID, p)
			parent = &cp.ID
		}
	}
	for range 4 {
		w := idleWorker(t, e, root)
		in("the root's child created without a partition", w.ID, home)
	}
}

// TestPartitions_PersonAndGate: the highway's creation (a person's) follows
// WithPartition, and a creation held at a workspace_create gate keeps the
// id drawn into its partition when a person approves it.
func TestPartitions_PersonAndGate(t *testing.T) {
	const n = 8
	cfg := highway.Default()
	cfg.Gates[highway.WorkspaceCreate] = true
	cfg.Gates[highway.TaskApproval] = false
	e := openVerified(t, withPartitions(n), withHighway(cfg))
	mkUser(t, e, "alice", user.CreateWorkspace, user.CreateWorkspaceAny)
	p := (fnvPartition(e.Root(), n) + 3) % n
	for range 3 {
		w, err := e.UserCreateWorkspace(WithPartition(ctx, p), "alice", []byte(`{"role":"worker"}`), nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := fnvPartition(w.ID, n); got != p {
			t.Errorf("UserCreateWorkspace(WithPartition %d) = %s in partition %d", p, w.ID, got)
		}
		_, err = e.CreateWorkspace(WithPartition(ctx, p), e.Root(), []byte(`{"role":"worker"}`))
		gate := heldAt(t, "gated create", err, highway.WorkspaceCreate)
		id, _ := Details(err)["workspace_id"].(string)
		if got := fnvPartition(id, n); got != p {
			t.Errorf("held CreateWorkspace(WithPartition %d) = %s in partition %d", p, id, got)
		}
		if _, err := resolve(t, e, "alice", gate, "approve"); err != nil {
			t.Fatal(err)
		}
		if got := wsState(t, e, id); got != workspace.Idle {
			t.Errorf("approved workspace %s is %s, want idle", id, got)
		}
	}
}

// TestPartitions_Refused: a partition out of range is invalid_structure and
// nothing is created, by the coordinator or a person.
func TestPartitions_Refused(t *testing.T) {
	const n = 8
	e := openVerified(t, withPartitions(n))
	mkUser(t, e, "alice", user.CreateWorkspace)
	before := e.Trail().Len()
	for _, p := range []int{n, -1, 1000} {
		_, err := e.CreateWorkspace(WithPartition(ctx, p), e.Root(), []byte(`{"role":"worker"}`))
		wantCode(t, "CreateWorkspace(WithPartition out of range)", err, wire.CodeInvalidStructure)
		_, err = e.UserCreateWorkspace(WithPartition(ctx, p), "alice", []byte(`{"role":"worker"}`), nil)
		wantCode(t, "UserCreateWorkspace(WithPartition out of range)", err, wire.CodeInvalidStructure)
	}
	if got := e.Trail().Len(); got != before {
		t.Errorf("trail length after refused creations = %d, want %d", got, before)
	}
	if ws, err := e.ListWorkspaces(ctx, e.Root(), "", ""); err != nil || len(ws) != 1 {
		t.Errorf("ListWorkspaces = %d workspaces, %v; want the root only", len(ws), err)
	}
	// With partitioning off, the context is ignored.
	off := openVerified(t)
	if _, err := off.CreateWorkspace(WithPartition(ctx, n), off.Root(), []byte(`{"role":"worker"}`)); err != nil {
		t.Errorf("CreateWorkspace(WithPartition %d) with partitioning off = %v, want success", n, err)
	}
}
