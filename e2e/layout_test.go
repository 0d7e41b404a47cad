package e2e

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wacpd/wacpd/auditor/datadir"
	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/workspace"
)

// extract unpacks testdata/<name>, a tar.gz of a directory "data", into a
// new temporary directory and returns the path of "data".
func extract(t *testing.T, name string) string {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(root, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(p, root+string(filepath.Separator)) {
			t.Fatalf("%s: entry %q outside the directory", name, h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(p, 0o700)
		case tar.TypeReg:
			var b []byte
			if b, err = io.ReadAll(tr); err == nil {
				err = os.WriteFile(p, b, os.FileMode(h.Mode)&0o777)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(root, "data")
}

// checkpointIDs lists the ids of every checkpoint of every workspace coord
// sees (up to 100 per workspace), workspace by workspace in chain order.
func checkpointIDs(t *testing.T, ctx context.Context, coord *client.Client) []string {
	t.Helper()
	workers, err := coord.ListWorkspaces(ctx, "", workspace.State(""))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, w := range workers {
		list, err := coord.ListCheckpoints(ctx, w.ID, "", 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, cp := range list {
			ids = append(ids, cp.ID)
		}
	}
	return ids
}

// TestOpensDataDirOfLayout1: a data dir written by the release before the
// trail's layout 2 (testdata/datadir-layout1.tar.gz: wacpd at 4d0fa93, two
// workers of eight checkpoints each, 81 trail entries, stopped with
// SIGTERM) verifies offline as it is; wacpd opens it, logs the upgrade,
// serves its checkpoints, proves them against the signing key it had,
// finds entries by id, goes on writing, and the data dir verifies offline
// again. A second start has nothing to upgrade.
func TestOpensDataDirOfLayout1(t *testing.T) {
	ctx := ctxT(t)
	dir := extract(t, "datadir-layout1.tar.gz")
	if rep, err := datadir.Verify(extract(t, "datadir-layout1.tar.gz")); err != nil || !rep.OK || rep.Entries != 81 {
		t.Fatalf("datadir.Verify(layout 1) = %+v, %v; want OK with 81 entries", rep, err)
	}
	pub, err := os.ReadFile(filepath.Join(dir, "trail.pub"))
	if err != nil {
		t.Fatal(err)
	}
	key := strings.TrimSpace(string(pub))

	d := startDaemon(t, dir)
	if !strings.Contains(d.log.String(), "upgraded the trail's key layout") || !strings.Contains(d.log.String(), "from=1") {
		t.Fatalf("wacpd's log has no upgrade from layout 1:\n%s", d.log.String())
	}
	coord := dial(t, ctx, client.Options{URL: d.url, Token: d.admin})
	if v, err := coord.VerifyTrail(ctx, ""); err != nil || !v.OK || v.Entries < 81 {
		t.Fatalf("VerifyTrail = %+v, %v; want OK with at least 81 entries", v, err)
	}
	cps := checkpointIDs(t, ctx, coord)
	if len(cps) != 16 {
		t.Fatalf("%d checkpoints in the old data dir, want 16", len(cps))
	}
	for _, id := range []string{cps[0], cps[7], cps[15]} {
		p, err := coord.ProveCheckpoint(ctx, id, key, 0)
		if err != nil {
			t.Fatalf("ProveCheckpoint(%s) with the data dir's key: %v", id, err)
		}
		// The entry is found by its id (no id index any more).
		page, err := coord.ReadTrail(ctx, client.TrailQuery{After: p.Entry, Limit: 1})
		if err != nil || len(page.Entries) != 1 || page.Entries[0].ID <= p.Entry {
			t.Fatalf("ReadTrail after %s = %+v, %v; want the next entry", p.Entry, page, err)
		}
	}

	// It goes on: a new worker's checkpoint is proved too.
	w := newWorker(t, ctx, coord, d.url, true, "")
	cp, err := w.CreateCheckpoint(ctx, artifact(nil, "provisional", "after the upgrade"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := coord.ProveCheckpoint(ctx, cp.ID, key, 10*time.Second); err != nil {
		t.Fatalf("ProveCheckpoint(new %s): %v", cp.ID, err)
	}
	w.Close()
	coord.Close()
	d.stop()
	if rep, err := datadir.Verify(dir); err != nil || !rep.OK || rep.Entries <= 81 {
		t.Fatalf("datadir.Verify(upgraded) = %+v, %v", rep, err)
	}
	d = startDaemon(t, dir)
	if strings.Contains(d.log.String(), "upgraded the trail's key layout") {
		t.Errorf("second start upgraded again:\n%s", d.log.String())
	}
	d.stop()
}

// TestOpensDataDirBeforeSegments: a data dir written by the release before
// the segment files (testdata/datadir-layout2.tar.gz: wacpd at 5ae09cf, two
// workers of eight checkpoints each, 65 trail entries, every value in
// Badger, stopped with SIGTERM) verifies offline as it is; wacpd opens it,
// serves and proves its checkpoints and finds its entries by id; what it
// writes next goes to the segment files (db/seg) while the old values stay
// where they are; the mixed data dir verifies offline, and a second start
// serves the old and the new checkpoints alike.
func TestOpensDataDirBeforeSegments(t *testing.T) {
	ctx := ctxT(t)
	dir := extract(t, "datadir-layout2.tar.gz")
	if rep, err := datadir.Verify(extract(t, "datadir-layout2.tar.gz")); err != nil || !rep.OK || rep.Entries != 65 {
		t.Fatalf("datadir.Verify(before segments) = %+v, %v; want OK with 65 entries", rep, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "db", "seg")); !os.IsNotExist(err) {
		t.Fatalf("the old data dir has segments: %v", err)
	}
	pub, err := os.ReadFile(filepath.Join(dir, "trail.pub"))
	if err != nil {
		t.Fatal(err)
	}
	key := strings.TrimSpace(string(pub))
	d := startDaemon(t, dir)
	coord := dial(t, ctx, client.Options{URL: d.url, Token: d.admin})
	if v, err := coord.VerifyTrail(ctx, ""); err != nil || !v.OK || v.Entries < 65 {
		t.Fatalf("VerifyTrail = %+v, %v; want OK with at least 65 entries", v, err)
	}
	old := checkpointIDs(t, ctx, coord)
	if len(old) != 16 {
		t.Fatalf("%d checkpoints in the old data dir, want 16", len(old))
	}
	for _, id := range []string{old[0], old[9], old[15]} {
		p, err := coord.ProveCheckpoint(ctx, id, key, 0)
		if err != nil {
			t.Fatalf("ProveCheckpoint(%s): %v", id, err)
		}
		page, err := coord.ReadTrail(ctx, client.TrailQuery{After: p.Entry, Limit: 1})
		if err != nil || len(page.Entries) != 1 || page.Entries[0].ID <= p.Entry {
			t.Fatalf("ReadTrail after %s = %+v, %v; want the next entry", p.Entry, page, err)
		}
	}
	w := newWorker(t, ctx, coord, d.url, true, "")
	var added []string
	var parent *string
	for i := range 3 {
		cp, err := w.CreateCheckpoint(ctx, artifact(parent, "provisional", fmt.Sprintf("after the old release %d", i)))
		if err != nil {
			t.Fatal(err)
		}
		added = append(added, cp.ID)
		parent = &added[len(added)-1]
	}
	if _, err := coord.ProveCheckpoint(ctx, added[2], key, 10*time.Second); err != nil {
		t.Fatalf("ProveCheckpoint(new %s): %v", added[2], err)
	}
	w.Close()
	coord.Close()
	d.stop()
	segs, err := filepath.Glob(filepath.Join(dir, "db", "seg", "*.seg"))
	if err != nil || len(segs) == 0 {
		t.Fatalf("no segment file after new checkpoints: %v, %v", segs, err)
	}
	if rep, err := datadir.Verify(dir); err != nil || !rep.OK || rep.Entries <= 65 {
		t.Fatalf("datadir.Verify(old and new) = %+v, %v", rep, err)
	}

	d = startDaemon(t, dir)
	coord = dial(t, ctx, client.Options{URL: d.url, Token: d.admin})
	all := checkpointIDs(t, ctx, coord)
	if len(all) != 19 {
		t.Fatalf("%d checkpoints after the restart, want 19", len(all))
	}
	for _, id := range []string{old[0], old[15], added[0], added[2]} {
		cp, err := coord.GetCheckpoint(ctx, id)
		if err != nil || cp.ID != id {
			t.Fatalf("GetCheckpoint(%s) = %s, %v", id, cp.ID, err)
		}
	}
	if v, err := coord.VerifyTrail(ctx, ""); err != nil || !v.OK {
		t.Fatalf("VerifyTrail after the restart = %+v, %v", v, err)
	}
	coord.Close()
	d.stop()
}

// TestOpensDataDirOfLayout2: a data dir written by the release before the
// trail's layout 3 (testdata/datadir-layout2-seg.tar.gz: wacpd at 64c147e,
// segment files, two workers of eight checkpoints each written at once, 65
// trail entries, one local index key per position, stopped with SIGTERM)
// verifies offline as it is; wacpd opens it and logs the upgrade (a mark:
// a key of one position is a group of one), reads and verifies each
// worker's local trail through the old keys, goes on writing (a batch's
// positions of a workspace under one key) from two workers at once, and
// the mixed data dir verifies offline; a second start has nothing to
// upgrade and reads the local trails whole.
func TestOpensDataDirOfLayout2(t *testing.T) {
	ctx := ctxT(t)
	dir := extract(t, "datadir-layout2-seg.tar.gz")
	if rep, err := datadir.Verify(extract(t, "datadir-layout2-seg.tar.gz")); err != nil || !rep.OK || rep.Entries != 65 {
		t.Fatalf("datadir.Verify(layout 2) = %+v, %v; want OK with 65 entries", rep, err)
	}
	d := startDaemon(t, dir)
	if !strings.Contains(d.log.String(), "upgraded the trail's key layout") || !strings.Contains(d.log.String(), "from=2") {
		t.Fatalf("wacpd's log has no upgrade from layout 2:\n%s", d.log.String())
	}
	coord := dial(t, ctx, client.Options{URL: d.url, Token: d.admin})
	workers, err := coord.ListWorkspaces(ctx, "", workspace.State(""))
	if err != nil {
		t.Fatal(err)
	}
	// localTrail reads ws's local trail whole, verifies it, and returns
	// how many entries it has.
	localTrail := func(coord *client.Client, ws string) int {
		t.Helper()
		n := 0
		for e, err := range coord.Entries(ctx, client.TrailQuery{Workspace: ws}) {
			if err != nil {
				t.Fatalf("local trail of %s: %v", ws, err)
			}
			if e.Workspace != ws {
				t.Fatalf("local trail of %s holds an entry of %q", ws, e.Workspace)
			}
			n++
		}
		if v, err := coord.VerifyTrail(ctx, ws); err != nil || !v.OK || v.Entries != uint64(n) {
			t.Fatalf("VerifyTrail(%s) = %+v, %v; want OK with %d entries", ws, v, err, n)
		}
		return n
	}
	before := map[string]int{}
	for _, w := range workers {
		if before[w.ID] = localTrail(coord, w.ID); before[w.ID] == 0 {
			t.Fatalf("workspace %s has no local trail", w.ID)
		}
	}
	if len(checkpointIDs(t, ctx, coord)) != 16 {
		t.Fatal("the old data dir does not hold 16 checkpoints")
	}

	// Two workers write at once: batches give each several positions.
	ws := make([]*client.Client, 2)
	for i := range ws {
		ws[i] = newWorker(t, ctx, coord, d.url, true, "")
	}
	errs := make(chan error, len(ws))
	for _, w := range ws {
		go func() {
			var parent *string
			for i := range 20 {
				cp, err := w.CreateCheckpoint(ctx, artifact(parent, "provisional", fmt.Sprintf("after layout 2, %d", i)))
				if err != nil {
					errs <- err
					return
				}
				parent = &cp.ID
			}
			errs <- nil
		}()
	}
	for range ws {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if v, err := coord.VerifyTrail(ctx, ""); err != nil || !v.OK {
		t.Fatalf("VerifyTrail = %+v, %v", v, err)
	}
	for _, w := range ws {
		w.Close()
	}
	coord.Close()
	d.stop()
	rep, err := datadir.Verify(dir)
	if err != nil || !rep.OK || rep.Entries <= 65 {
		t.Fatalf("datadir.Verify(layouts 2 and 3) = %+v, %v", rep, err)
	}

	d = startDaemon(t, dir)
	defer d.stop()
	if strings.Contains(d.log.String(), "upgraded the trail's key layout") {
		t.Errorf("second start upgraded again:\n%s", d.log.String())
	}
	coord = dial(t, ctx, client.Options{URL: d.url, Token: d.admin})
	defer coord.Close()
	all, err := coord.ListWorkspaces(ctx, "", workspace.State(""))
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, w := range all {
		n := localTrail(coord, w.ID)
		// The old workers wrote nothing since (the root, their parent,
		// was told of the new workers' checkpoints).
		if b, ok := before[w.ID]; ok && w.Parent != nil && n != b {
			t.Errorf("workspace %s: %d local entries after the restart, %d before new writes", w.ID, n, b)
		}
		total += n
	}
	if total < sumCounts(before)+2*20*2 {
		t.Errorf("%d local entries in all, want at least %d", total, sumCounts(before)+2*20*2)
	}
}

// sumCounts sums the counts of m.
func sumCounts(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// TestOpensDataDirOfLayout3: a data dir written by the release before the
// trail's layout 4 (testdata/datadir-layout3.tar.gz: wacpd at d93df25, two
// workers of seven checkpoints each written at once, the fourth final,
// their tokens in tokens.txt, stopped with SIGTERM), whose chain registers
// and local trail heads were rewritten with every batch, verifies offline
// as it is; wacpd opens it and logs the upgrade (a mark); each old worker
// goes on with its chain (a checkpoint on its last, a final, one more),
// which only a head derived right allows; the data dir verifies offline;
// after a second start, which upgrades nothing, both go on again from the
// heads this build derives from what it wrote itself.
func TestOpensDataDirOfLayout3(t *testing.T) {
	ctx := ctxT(t)
	dir := extract(t, "datadir-layout3.tar.gz")
	if rep, err := datadir.Verify(extract(t, "datadir-layout3.tar.gz")); err != nil || !rep.OK {
		t.Fatalf("datadir.Verify(layout 3) = %+v, %v; want OK", rep, err)
	}
	toks, err := os.ReadFile(filepath.Join(filepath.Dir(dir), "tokens.txt"))
	if err != nil {
		t.Fatal(err)
	}
	type worker struct{ ws, token string }
	var workers []worker
	for line := range strings.Lines(string(toks)) {
		ws, tok, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok {
			t.Fatalf("tokens.txt: %q", line)
		}
		workers = append(workers, worker{ws, tok})
	}
	if len(workers) != 2 {
		t.Fatalf("tokens.txt names %d workers, want 2", len(workers))
	}
	// goOn adds three checkpoints to each old worker's chain, which must
	// hold want before them, the second final.
	goOn := func(d *daemon, want int) {
		t.Helper()
		coord := dial(t, ctx, client.Options{URL: d.url, Token: d.admin})
		defer coord.Close()
		for _, w := range workers {
			list, err := coord.ListCheckpoints(ctx, w.ws, "", 100)
			if err != nil || len(list) != want {
				t.Fatalf("ListCheckpoints(%s) = %d, %v; want %d", w.ws, len(list), err, want)
			}
			c := dial(t, ctx, client.Options{URL: d.url, Token: w.token, Workspace: w.ws})
			parent := list[len(list)-1].ID
			for i, st := range []string{"provisional", "final", "provisional"} {
				cp, err := c.CreateCheckpoint(ctx, artifact(&parent, st, fmt.Sprintf("after layout 3, %d", i)))
				if err != nil {
					t.Fatalf("worker %s, checkpoint %d on %s: %v", w.ws, want+i+1, parent, err)
				}
				parent = cp.ID
			}
			c.Close()
			if v, err := coord.VerifyTrail(ctx, w.ws); err != nil || !v.OK {
				t.Fatalf("VerifyTrail(%s) = %+v, %v", w.ws, v, err)
			}
		}
		if v, err := coord.VerifyTrail(ctx, ""); err != nil || !v.OK {
			t.Fatalf("VerifyTrail = %+v, %v", v, err)
		}
	}
	d := startDaemon(t, dir)
	if !strings.Contains(d.log.String(), "upgraded the trail's key layout") || !strings.Contains(d.log.String(), "from=3") {
		t.Fatalf("wacpd's log has no upgrade from layout 3:\n%s", d.log.String())
	}
	goOn(d, 7)
	d.stop()
	if rep, err := datadir.Verify(dir); err != nil || !rep.OK {
		t.Fatalf("datadir.Verify(layouts 3 and 4) = %+v, %v", rep, err)
	}
	d = startDaemon(t, dir)
	if strings.Contains(d.log.String(), "upgraded the trail's key layout") {
		t.Errorf("second start upgraded again:\n%s", d.log.String())
	}
	goOn(d, 10)
	d.stop()
	if rep, err := datadir.Verify(dir); err != nil || !rep.OK {
		t.Fatalf("datadir.Verify after the second start = %+v, %v", rep, err)
	}
}
