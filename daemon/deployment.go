package daemon

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/wacpd/wacpd/clock"
	"github.com/wacpd/wacpd/internal/atomicfile"
	"github.com/wacpd/wacpd/placement"
	"github.com/wacpd/wacpd/runtime"
	"github.com/wacpd/wacpd/wire"
)

// Several daemons on one NATS cluster (issue 20; docs/design.md "Several
// daemons", docs/scale-out.md §2). The workspaces are spread over a fixed
// number of partitions; the cluster's subject mapping sends an agent
// request to wacp.v1.p.<partition>.agent.<ws>.<op>, and each daemon serves
// the partitions it owns, holding a fenced lease on each. Every daemon of a
// deployment has the same root workspace (its own copy), the coordinator's
// token works on all of them, and the coordinator's requests about a
// workspace of another daemon's partition are relayed there by the daemon
// of the root's partition (forward.go).

// Deployment makes the daemon one of several sharing the NATS cluster at
// Config.NATSURL. The zero value (Partitions 0) is the single daemon.
type Deployment struct {
	// Partitions is the deployment's partition count, 1 to
	// placement.MaxPartitions, the same on every daemon and in the
	// cluster's subject mapping ({{partition(Partitions,1)}}).
	Partitions int
	// Own lists the partitions this daemon serves; it is fixed for the
	// data dir's life: the workspaces of a partition live in the data dir
	// of the daemon that owns it (no other copy exists).
	Own []int
	// DaemonID names the daemon: its leases' holder, and the subjects
	// wacp.v1.d.<DaemonID>.<op> of its audit and system endpoints. A
	// subject token: letters, digits, '-' and '_'.
	DaemonID string
	// LeaseTTL is how long a partition lease lasts without renewal
	// (placement.Config.TTL); default 30 s. A daemon that was killed takes
	// its partitions again this long after its last renewal at most.
	LeaseTTL time.Duration
}

// on reports whether d describes a daemon of a deployment.
func (d Deployment) on() bool { return d.Partitions > 0 }

// owns reports whether partition p is one of the daemon's.
func (d Deployment) owns(p int) bool { return slices.Contains(d.Own, p) }

// defaultLeaseTTL is Deployment.LeaseTTL's default: long enough that a
// lease outlives the election of the bucket's leader after the loss of a
// NATS node (4.5–8.3 s measured for a stream, docs/scale-out.md §1.4)
// with room to renew twice.
const defaultLeaseTTL = 30 * time.Second

// Buckets of a deployment, replicated as the signal stream is.
const (
	deploymentBucket = "wacp_deployment"
	deploymentKey    = "deployment"
	leaseBucket      = "wacp_leases"
)

// DeploymentFile is the data dir's record of the deployment it belongs to
// (deploymentRecord's root and partitions, and the daemon's id and
// partitions), written at the first start and checked at every later one.
const DeploymentFile = "deployment.json"

// check validates d; nats is Config.NATSURL.
func (d *Deployment) check(nats string) error {
	if !d.on() {
		if len(d.Own) > 0 || d.DaemonID != "" {
			return errors.New("partitions to own or a daemon id without a partition count (-partitions)")
		}
		return nil
	}
	if err := placement.CheckPartitions(d.Partitions); err != nil {
		return fmt.Errorf("partitions: %w", err)
	}
	switch {
	case nats == "":
		return errors.New("several daemons (-partitions) share a NATS cluster: -nats-url is required")
	case len(d.Own) == 0:
		return errors.New("-partitions needs the partitions this daemon owns (-own)")
	case !subjectToken(d.DaemonID):
		return fmt.Errorf("daemon id %q: want 1 to 64 letters, digits, '-' or '_' (-daemon-id)", d.DaemonID)
	case d.LeaseTTL < 0 || (d.LeaseTTL > 0 && d.LeaseTTL < 3*time.Second):
		return fmt.Errorf("lease ttl %v: want at least 3s", d.LeaseTTL)
	}
	if d.LeaseTTL == 0 {
		d.LeaseTTL = defaultLeaseTTL
	}
	own := slices.Clone(d.Own)
	slices.Sort(own)
	for i, p := range own {
		switch {
		case p < 0 || p >= d.Partitions:
			return fmt.Errorf("own partition %d: want 0 to %d", p, d.Partitions-1)
		case i > 0 && own[i-1] == p:
			return fmt.Errorf("own partition %d twice", p)
		}
	}
	d.Own = own
	return nil
}

// subjectToken reports whether s may be a token of every subject the daemon
// builds from it.
func subjectToken(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range s {
		ok := c == '-' || c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
		if !ok {
			return false
		}
	}
	return true
}

// ParsePartitions reads a list of partitions such as "0-3,6" (ranges
// inclusive), each in 0..n-1 when n > 0.
func ParsePartitions(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil, fmt.Errorf("partition %q: not a number or a range A-B", part)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("partition range %q: want A-B with A ≤ B", part)
			}
		}
		if b-a >= placement.MaxPartitions {
			return nil, fmt.Errorf("partition range %q: more than %d partitions", part, placement.MaxPartitions)
		}
		for p := a; p <= b; p++ {
			out = append(out, p)
		}
	}
	return out, nil
}

// deploymentRecord is the deployment's one shared fact, kept in the
// replicated bucket wacp_deployment: the root every daemon has, the
// partition count, and the hash of the coordinator's token. The first
// daemon to start writes it (a compare-and-set: create only).
type deploymentRecord struct {
	Root        string `json:"root"`
	Partitions  int    `json:"partitions"`
	Coordinator string `json:"coordinator"` // hex SHA-256 of the coordinator's token
	Created     string `json:"created"`
}

// joined is what a daemon learns when it joins its deployment.
type joined struct {
	rec deploymentRecord
}

// dirRecord is DeploymentFile's content.
type dirRecord struct {
	Root       string `json:"root"`
	Partitions int    `json:"partitions"`
	Own        []int  `json:"own"`
	DaemonID   string `json:"daemon_id"`
}

// joinDeployment reads the deployment record, or writes it when this is
// the deployment's first daemon: a root id minted into the first of its
// partitions and the hash of a new coordinator token, which is written to
// DIR/admin.token only once the record is stored. A later daemon takes the
// record's root; the data dir's admin.token, when it has one, must be the
// record's coordinator token; without one the daemon accepts the
// coordinator's token by its hash and writes no admin.token (the
// coordinator's token is the first daemon's). The data dir's
// DeploymentFile must agree with the record and the configuration.
func (r *Daemon) joinDeployment(ctx context.Context, dir string) (joined, error) {
	d := r.cfg.Deployment
	kv, err := r.kvBucket(ctx, deploymentBucket, "the wacpd deployment: its root, partition count and coordinator")
	if err != nil {
		return joined{}, err
	}
	local, err := readAdminToken(dir)
	if err != nil {
		return joined{}, err
	}
	var j joined
	entry, err := kv.Get(ctx, deploymentKey)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		// The first daemon makes the deployment's root, on an empty data
		// dir; or a daemon of a deployment whose cluster lost the record
		// writes it again from its data dir, if it has the coordinator's
		// token.
		prev, err := readDirRecord(dir)
		if err != nil {
			return joined{}, err
		}
		_, statErr := os.Stat(filepath.Join(dir, "db"))
		switch {
		case prev == nil && statErr == nil:
			return joined{}, fmt.Errorf("the cluster has no deployment yet and %s already holds a store: a deployment's first daemon starts on an empty data dir", dir)
		case prev != nil && local == "":
			return joined{}, fmt.Errorf("the cluster has no record of the deployment of root %s (bucket %s): start first the daemon whose data dir has the coordinator's %s, which writes it again", prev.Root, deploymentBucket, AdminTokenFile)
		}
		tok := local
		if tok == "" {
			if tok, err = newToken(); err != nil {
				return joined{}, err
			}
		}
		var root string
		if prev != nil {
			root = prev.Root
			r.cfg.Logger.Warn("the cluster has no deployment record; writing it again from the data dir", "root", root)
		} else {
			ids := clock.NewIDs(nil)
			if root, err = placement.MintInPartition(func() string { return ids.New(time.Now()) }, d.Own[0], d.Partitions); err != nil {
				return joined{}, err
			}
		}
		rec := deploymentRecord{Root: root, Partitions: d.Partitions, Coordinator: tokenHashHex(tok), Created: time.Now().UTC().Format(time.RFC3339Nano)}
		b, _ := json.Marshal(rec)
		if _, err = kv.Create(ctx, deploymentKey, b); err == nil {
			if local == "" {
				if err := atomicfile.WriteFile(filepath.Join(dir, AdminTokenFile), []byte(tok+"\n"), 0o600); err != nil {
					return joined{}, fmt.Errorf("write %s: %w", AdminTokenFile, err)
				}
			}
			r.cfg.Logger.Info("created the deployment", "root", root, "partitions", d.Partitions)
			j = joined{rec: rec}
			break
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return joined{}, fmt.Errorf("write the deployment record: %w", err)
		}
		// Another daemon was first: join its deployment.
		if entry, err = kv.Get(ctx, deploymentKey); err != nil {
			return joined{}, fmt.Errorf("read the deployment record: %w", err)
		}
		fallthrough
	case err == nil:
		if err := json.Unmarshal(entry.Value(), &j.rec); err != nil || j.rec.Root == "" || len(j.rec.Coordinator) != 64 {
			return joined{}, fmt.Errorf("the deployment record in %s is not one wacpd wrote (%q); delete the bucket only with the deployment", deploymentBucket, entry.Value())
		}
		switch {
		case j.rec.Partitions != d.Partitions:
			return joined{}, fmt.Errorf("the deployment has %d partitions, -partitions says %d", j.rec.Partitions, d.Partitions)
		case local != "" && tokenHashHex(local) != j.rec.Coordinator:
			return joined{}, fmt.Errorf("%s in %s is not the deployment's coordinator token: copy the first daemon's, or remove it", AdminTokenFile, dir)
		}
	default:
		return joined{}, fmt.Errorf("read the deployment record: %w", err)
	}
	want := dirRecord{Root: j.rec.Root, Partitions: d.Partitions, Own: d.Own, DaemonID: d.DaemonID}
	if err := checkDirRecord(dir, want); err != nil {
		return joined{}, err
	}
	return j, nil
}

// readDirRecord returns DIR/DeploymentFile's record, nil when there is none.
func readDirRecord(dir string) (*dirRecord, error) {
	path := filepath.Join(dir, DeploymentFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var rec dirRecord
	if err := json.Unmarshal(b, &rec); err != nil || rec.Root == "" {
		return nil, fmt.Errorf("%s is not a deployment record (%v); restore it from a backup", path, err)
	}
	return &rec, nil
}

// checkDirRecord writes DIR/DeploymentFile at the first start and compares
// it with want at the later ones: a data dir holds the workspaces of the
// partitions it was started with, under one root.
func checkDirRecord(dir string, want dirRecord) error {
	path := filepath.Join(dir, DeploymentFile)
	prev, err := readDirRecord(dir)
	if err != nil {
		return err
	}
	if prev == nil {
		nb, _ := json.MarshalIndent(want, "", "  ")
		return atomicfile.WriteFile(path, append(nb, '\n'), 0o600)
	}
	got := *prev
	switch {
	case got.Root != want.Root:
		return fmt.Errorf("%s: the data dir belongs to the deployment of root %s, the cluster's is %s", path, got.Root, want.Root)
	case got.Partitions != want.Partitions || !slices.Equal(got.Own, want.Own):
		return fmt.Errorf("%s: the data dir holds partitions %v of %d; the flags say %v of %d (a partition's workspaces live only in its data dir)", path, got.Own, got.Partitions, want.Own, want.Partitions)
	case got.DaemonID != want.DaemonID:
		return fmt.Errorf("%s: the data dir is daemon %q's, -daemon-id says %q", path, got.DaemonID, want.DaemonID)
	}
	return nil
}

// readAdminToken returns DIR/admin.token's token, or "" when there is none.
func readAdminToken(dir string) (string, error) {
	if _, err := os.Stat(filepath.Join(dir, AdminTokenFile)); errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	return adminToken(dir)
}

// tokenHashHex is the hex of hashToken(tok).
func tokenHashHex(tok string) string {
	h := hashToken(tok)
	return hex.EncodeToString(h[:])
}

// coordinatorHash decodes a deployment record's coordinator hash.
func coordinatorHash(s string) ([32]byte, error) {
	var h [32]byte
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(h) {
		return h, fmt.Errorf("coordinator hash %q: want 64 hex digits", s)
	}
	copy(h[:], b)
	return h, nil
}

// kvBucket creates or opens a replicated bucket of the deployment, waiting
// for a cluster that cannot place it yet as ensureStream does.
func (r *Daemon) kvBucket(ctx context.Context, name, what string) (jetstream.KeyValue, error) {
	var kv jetstream.KeyValue
	err := r.whilePlacing(ctx, "bucket "+name, func() (err error) {
		kv, err = r.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket: name, Description: what, History: 1, Storage: jetstream.FileStorage, Replicas: r.replicas,
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("bucket %s: %w", name, err)
	}
	return kv, nil
}

// partitions holds the daemon's leases, one per owned partition, and the
// round robin that places the root's children.
type partitions struct {
	d      Deployment
	root   string
	home   int                                      // the root's partition
	leases map[int]*atomic.Pointer[placement.Lease] // the current lease of each owned partition (keepLease)
	next   atomic.Uint64                            // the round robin over all partitions
}

// acquireLeases takes the lease of every owned partition. A lease another
// holder still has (a daemon of the same id killed less than LeaseTTL ago,
// or a misconfigured second owner) is waited for, up to twice the TTL.
// The leases live until ctx ends.
func (r *Daemon) acquireLeases(ctx context.Context) (*placement.Leases, map[int]*placement.Lease, error) {
	d := r.cfg.Deployment
	// A cluster that has just lost a node may not answer for a few seconds
	// (its meta leader's or the bucket's election).
	var ls *placement.Leases
	err := r.whilePlacing(ctx, "bucket "+leaseBucket, func() (err error) {
		ls, err = placement.OpenLeases(ctx, r.js, placement.Config{Bucket: leaseBucket, Replicas: r.replicas, TTL: d.LeaseTTL})
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	out := map[int]*placement.Lease{}
	deadline := time.Now().Add(2 * d.LeaseTTL)
	for _, p := range d.Own {
		for warned := false; ; {
			l, err := ls.Acquire(ctx, d.DaemonID, p)
			if err == nil {
				out[p] = l
				break
			}
			// Held: wait for it to expire. No answer in time: the
			// bucket is electing a leader. Anything else stops the start.
			if (!errors.Is(err, placement.ErrHeld) && !notYet(err)) || time.Now().After(deadline) {
				return nil, nil, fmt.Errorf("partition %d: %w", p, err)
			}
			if !warned {
				r.cfg.Logger.Warn("a partition's lease is held or its bucket does not answer; waiting", "partition", p, "err", err)
				warned = true
			}
			select {
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			case <-time.After(500 * time.Millisecond):
			}
		}
	}
	return ls, out, nil
}

// keepLease owns partition p's lease slot while the daemon runs. When the
// lease is lost (a renewal not written before its validity ran out, while
// the cluster could not answer; or taken by another holder), the
// partition's requests are refused (serving) and keepLease takes the lease
// again as soon as the bucket lets it: after the recorded expiry, if no
// other holder took it first. It returns when ctx ends or the lease is
// released (a clean stop).
func (r *Daemon) keepLease(ctx context.Context, ls *placement.Leases, p int, slot *atomic.Pointer[placement.Lease]) {
	holder := r.cfg.Deployment.DaemonID
	for {
		l := slot.Load()
		select {
		case <-ctx.Done():
			return
		case <-l.Lost():
		}
		if ctx.Err() != nil || errors.Is(l.Err(), placement.ErrReleased) {
			return
		}
		r.cfg.Logger.Error("lost a partition's lease; its requests are refused until it is taken again", "partition", p, "err", l.Err())
		for {
			nl, err := ls.Acquire(ctx, holder, p)
			if err == nil {
				slot.Store(nl)
				r.cfg.Logger.Warn("took a partition's lease again", "partition", p, "token", nl.Token())
				break
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
		}
	}
}

// servedAt is one subscription of an endpoint: its micro name and subject.
type servedAt struct{ name, subject string }

// servedAt returns where ep is served: its subject of the wire contract on
// a single daemon. On a deployment an agent endpoint is served on each
// owned partition's subject, and the other endpoints on the daemon's own
// subjects (wacp.v1.d.<id>.<op>) and, on the home daemon only, on the
// contract's: system.info, the audit and highway endpoints answer for the
// home daemon there (docs/scale-out.md §2).
func (r *Daemon) servedAt(ep endpoint) []servedAt {
	pt := r.parts
	if pt == nil {
		return []servedAt{{ep.name, ep.subject}}
	}
	var out []servedAt
	if ep.aud == agents {
		for _, p := range pt.d.Own {
			out = append(out, servedAt{ep.name + "_p" + strconv.Itoa(p), partitionSubject(p, "*", ep.op)})
		}
		return out
	}
	out = append(out, servedAt{ep.name + "_d", DaemonPrefix + pt.d.DaemonID + "." + strings.TrimPrefix(ep.subject, wire.Prefix)})
	if pt.d.owns(pt.home) {
		out = append(out, servedAt{ep.name, ep.subject})
	}
	return out
}

// serving refuses a request that reached partition part (-1: a subject
// without one) while the daemon's lease of it is not valid: between a
// renewal that failed and the daemon's stop, the partition may already be
// another holder's.
func (pt *partitions) serving(part int) error {
	if part < 0 {
		return nil
	}
	slot := pt.leases[part]
	if slot == nil || !slot.Load().Valid(time.Now()) {
		return runtime.Refuse(wire.CodeUnavailable, "daemon %s does not hold partition %d's lease now", pt.d.DaemonID, part)
	}
	return nil
}

// joinCluster opens JetStream on the daemon's connection and joins the
// deployment (joinDeployment).
func (r *Daemon) joinCluster(ctx context.Context, dir string) (joined, error) {
	var err error
	if r.js, err = jetstream.New(r.nc); err != nil {
		return joined{}, fmt.Errorf("jetstream: %w", err)
	}
	r.replicas = r.streamReplicas()
	return r.joinDeployment(ctx, dir)
}

// holdPartitions takes the leases of the owned partitions, makes the
// daemon serve them, and keeps the leases (keepLease). The returned stop
// releases them, so that the daemon's next start need not wait for them
// to expire. The end of ctx (the daemon's stop) ends the wait for the
// leases; once taken, they live until stop.
func (r *Daemon) holdPartitions(ctx context.Context, dep joined) (stop func(), err error) {
	lctx, cancel := context.WithCancel(context.Background())
	unhook := context.AfterFunc(ctx, cancel)
	ls, first, err := r.acquireLeases(lctx)
	unhook()
	if err != nil {
		cancel()
		return nil, err
	}
	d := r.cfg.Deployment
	pt := &partitions{d: d, root: dep.rec.Root, home: placement.Partition(dep.rec.Root, d.Partitions), leases: map[int]*atomic.Pointer[placement.Lease]{}}
	var wg sync.WaitGroup
	for p, l := range first {
		slot := &atomic.Pointer[placement.Lease]{}
		slot.Store(l)
		pt.leases[p] = slot
		wg.Add(1)
		go func() { defer wg.Done(); r.keepLease(lctx, ls, p, slot) }()
	}
	r.parts = pt
	r.cfg.Logger.Info("serving partitions", "daemon", d.DaemonID, "partitions", d.Own, "of", d.Partitions, "home", d.owns(pt.home))
	return func() {
		rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer rcancel()
		for p, slot := range pt.leases {
			if err := slot.Load().Release(rctx); err != nil {
				r.cfg.Logger.Warn("release a partition's lease; it expires on its own", "partition", p, "err", err)
			}
		}
		cancel()
		wg.Wait()
	}, nil
}
