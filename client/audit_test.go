package client_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/wacpd/wacpd/auditor"
	"github.com/wacpd/wacpd/casstore"
	"github.com/wacpd/wacpd/checkpointchain"
	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/trail"
)

// signedHead waits for a signed tree head covering the whole trail (the
// daemon signs within about a second of a commit) and returns it.
func signedHead(t *testing.T, ctx context.Context, c *client.Client) client.TreeHead {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		n := 0
		for _, err := range c.Entries(ctx, client.TrailQuery{}) {
			if err != nil {
				t.Fatalf("Entries = %v", err)
			}
			n++
		}
		th, err := c.TreeHead(ctx)
		if err == nil && th.Size == uint64(n) {
			return th
		}
		if err != nil && !errors.Is(err, client.ErrRefused) {
			t.Fatalf("TreeHead = %v", err)
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("no signed tree head of the trail's %d entries: last %+v, %v", n, th, err)
		}
	}
}

// TestAudit runs the audit endpoints with an auditor's token: the signed
// tree head and the published key, a checkpoint's entry, inclusion and
// consistency proofs checked with package auditor, and an export that
// verifies offline.
func TestAudit(t *testing.T) {
	dir, url := startDaemon(t)
	ctx := testCtx(t)
	coord := dial(t, ctx, client.Options{DataDir: dir})
	worker := newWorker(t, ctx, coord, url, true)
	cp1, err := worker.CreateCheckpoint(ctx, artifact(nil, checkpointchain.StatusProvisional))
	if err != nil {
		t.Fatal(err)
	}
	cp2, err := worker.CreateCheckpoint(ctx, artifact(&cp1.ID, checkpointchain.StatusFinal))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := coord.CreateToken(ctx, "auditor", "alice")
	if err != nil {
		t.Fatal(err)
	}
	aud := dial(t, ctx, client.Options{URL: url, Token: tok})

	info, err := aud.AuditInfo(ctx)
	if err != nil || info.PublicKey == "" || info.Origin == "" {
		t.Fatalf("AuditInfo = %+v, %v; want a public key and an origin", info, err)
	}
	th := signedHead(t, ctx, aud)
	signed, err := trail.OpenTreeHead(th.Note, info.PublicKey)
	if err != nil {
		t.Fatalf("OpenTreeHead(tree head, system.info's key) = %v", err)
	}
	if signed.Size != th.Size || signed.Root != th.Root || signed.Origin != info.Origin || th.PublicKey != info.PublicKey {
		t.Errorf("tree head %+v (key %s) does not match its signed note %+v / system.info %+v", th.TreeHead, th.PublicKey, signed, info)
	}

	t.Run("checkpoint entry and inclusion", func(t *testing.T) {
		e, err := aud.FindCheckpointEntry(ctx, cp2.ID)
		if err != nil {
			t.Fatalf("FindCheckpointEntry(%s) = %v", cp2.ID, err)
		}
		if e.EventType != trail.EventCheckpointCreated || !bytes.Contains(e.Body, []byte(cp2.ID)) || !bytes.Contains(e.Body, []byte(cp2.Digest.String())) {
			t.Fatalf("FindCheckpointEntry(%s) = %+v, want its checkpoint_created entry", cp2.ID, e)
		}
		p, err := aud.InclusionProof(ctx, client.InclusionRequest{Entry: e.ID, Size: th.Size})
		if err != nil {
			t.Fatalf("InclusionProof(%s) = %v", e.ID, err)
		}
		if err := auditor.VerifyInclusion(e.Integrity.EntryHash, p.Index, th.Size, p.Proof, signed.Root); err != nil {
			t.Errorf("VerifyInclusion(%s) = %v", e.ID, err)
		}
		if leaf, _ := auditor.LeafHash(e.Integrity.EntryHash); trail.FormatHash(leaf) != p.LeafHash || p.Root != signed.Root || p.Entry != e.ID {
			t.Errorf("InclusionProof = %+v, want leaf %x, root %s", p, leaf, signed.Root)
		}
		byIndex, err := aud.InclusionProof(ctx, client.InclusionRequest{Index: &p.Index})
		if err != nil || byIndex.Entry != e.ID || auditor.VerifyInclusion(e.Integrity.EntryHash, byIndex.Index, byIndex.Size, byIndex.Proof, byIndex.Root) != nil {
			t.Errorf("InclusionProof(index %d) = %+v, %v; want a verifying proof of %s", p.Index, byIndex, err, e.ID)
		}
		if err := auditor.VerifyInclusion(e.Integrity.EntryHash, p.Index+1, th.Size, p.Proof, signed.Root); err == nil {
			t.Errorf("VerifyInclusion(wrong index) = nil, want an error")
		}
		if _, err := aud.FindCheckpointEntry(ctx, "01JNOSUCHCHECKPOINTXXXXXXX"); !errors.Is(err, client.ErrRefused) {
			t.Errorf("FindCheckpointEntry(unknown) = %v, want not_found", err)
		}
	})

	t.Run("consistency", func(t *testing.T) {
		page, err := aud.ReadTrail(ctx, client.TrailQuery{Limit: 1})
		if err != nil || len(page.Entries) != 1 {
			t.Fatalf("ReadTrail(limit 1) = %v", err)
		}
		p, err := aud.ConsistencyProof(ctx, 1, th.Size)
		if err != nil {
			t.Fatalf("ConsistencyProof(1, %d) = %v", th.Size, err)
		}
		root1, _ := auditor.Root([]string{page.Entries[0].Integrity.EntryHash})
		if p.FromRoot != root1 || p.ToRoot != signed.Root || p.From != 1 || p.To != th.Size {
			t.Errorf("ConsistencyProof = %+v, want from root %s, to root %s", p, root1, signed.Root)
		}
		if err := auditor.VerifyConsistency(1, th.Size, p.Proof, root1, signed.Root); err != nil {
			t.Errorf("VerifyConsistency(1, %d) = %v", th.Size, err)
		}
	})

	t.Run("checkpoint object", func(t *testing.T) {
		cp, err := aud.AuditCheckpoint(ctx, cp1.ID)
		if err != nil {
			t.Fatalf("AuditCheckpoint(%s) = %v", cp1.ID, err)
		}
		data, err := checkpointchain.Encode(cp)
		if err != nil || cp.Digest != cp1.Digest || casstore.RefOf(data) != cp1.Digest {
			t.Errorf("AuditCheckpoint(%s) = digest %s (content %s), %v; want %s", cp1.ID, cp.Digest, casstore.RefOf(data), err, cp1.Digest)
		}
	})

	t.Run("export", func(t *testing.T) {
		var buf bytes.Buffer
		got, err := aud.Export(ctx, &buf)
		if err != nil {
			t.Fatalf("Export = %v", err)
		}
		rep, err := auditor.VerifyWithKey(bytes.NewReader(buf.Bytes()), info.PublicKey)
		if err != nil || !rep.OK || uint64(rep.Entries) != got.Size || rep.Objects != 2 || rep.Workspaces != 2 {
			t.Errorf("Verify(export) = %+v, %v; want ok with %d entries, 2 objects, 2 workspaces", rep, err, got.Size)
		}
	})

	t.Run("replay", func(t *testing.T) {
		st, diffs, err := coord.ReplayDiff(ctx, 0)
		if err != nil || len(diffs) != 0 {
			t.Fatalf("ReplayDiff = %v, %v; want no differences", diffs, err)
		}
		if len(st.Workspaces) != 2 || st.Chains[worker.Workspace()].Head != cp2.ID || st.Chains[worker.Workspace()].LastFinal != cp2.ID {
			t.Errorf("replayed %+v, want 2 workspaces and %s's chain at %s", st, worker.Workspace(), cp2.ID)
		}
	})
}
