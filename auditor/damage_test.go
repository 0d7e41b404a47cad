package auditor_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/auditor"
	"github.com/wacpd/wacpd/auditor/datadir"
	"github.com/wacpd/wacpd/checkpointchain"
	"github.com/wacpd/wacpd/internal/trailtest"
	"github.com/wacpd/wacpd/runtime"
	"github.com/wacpd/wacpd/trail"
)

// Tests of damage in a stopped daemon's data dir (issue 11 §4): each fault
// must be reported, with where it is, by every caller of the one verifier
// (integrity.Check): the offline auditor (datadir.Verify), the recovery
// check with -full-check (runtime.Open with FullCheck) and the daemon's
// verification (Engine.VerifyTrail); never a panic.

// richDataDir is a stopped daemon's data dir with three workers (one of
// them closed), checkpoints, envelopes between them, and a signed tree head
// over every entry.
func richDataDir(t *testing.T) dataDir {
	t.Helper()
	dir := t.TempDir()
	e, err := runtime.Open(runtime.Config{DataDir: filepath.Join(dir, datadir.DatabaseDir)})
	if err != nil {
		t.Fatal(err)
	}
	objects := 0
	var ws []string
	for range 3 {
		w := worker(t, e, e.Root(), true)
		ws = append(ws, w)
		c := checkpoint(t, e, w, nil, checkpointchain.StatusProvisional)
		c = checkpoint(t, e, w, &c.ID, checkpointchain.StatusProvisional)
		checkpoint(t, e, w, &c.ID, checkpointchain.StatusFinal)
		objects += 3
	}
	send(t, e, ws[0], e.Root(), "query")
	send(t, e, e.Root(), ws[1], "feedback")
	entries := readAll(t, e.Trail())
	origin := "wacpd/" + e.Root()
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	k := newKey(t, "wacpd-test")
	sth := signHead(t, k, origin, entries, nil)
	update(t, dir, func(txn *badger.Txn) error {
		b, err := json.Marshal(sth)
		if err != nil {
			return err
		}
		return txn.Set([]byte("m/sth"), b)
	})
	if err := os.WriteFile(filepath.Join(dir, datadir.PublicKeyFile), []byte(k.vkey+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dataDir{dir: dir, entries: entries, key: k, objects: objects}
}

// copyDir copies the data dir src, with its files' modes, to a new
// temporary directory.
func copyDir(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		// The modes too: the engine refuses a key file others may read.
		return os.WriteFile(target, b, info.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// callers runs the verifier's callers on copies of the damaged data dir
// dir and returns what each said; a panic in any of them fails the test.
type verdicts struct {
	offline   auditor.Report
	offlineEr error
	fullCheck error              // runtime.Open with FullCheck
	online    trail.VerifyResult // Engine.VerifyTrail after a default start
	onlineEr  error              // the default start or the verification
}

func callers(t *testing.T, dir string) verdicts {
	t.Helper()
	var v verdicts
	noPanic(t, "datadir.Verify", func() { v.offline, v.offlineEr = datadir.Verify(copyDir(t, dir)) })
	noPanic(t, "Open with FullCheck", func() {
		e, err := runtime.Open(runtime.Config{DataDir: filepath.Join(copyDir(t, dir), datadir.DatabaseDir), FullCheck: true})
		if err == nil {
			e.Close()
		}
		v.fullCheck = err
	})
	noPanic(t, "Open, then VerifyTrail", func() {
		e, err := runtime.Open(runtime.Config{DataDir: filepath.Join(copyDir(t, dir), datadir.DatabaseDir)})
		if err != nil {
			v.onlineEr = err
			return
		}
		defer e.Close()
		v.online, v.onlineEr = e.VerifyTrail(ctx, "")
	})
	return v
}

func noPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			t.Errorf("%s panicked: %v", what, p)
		}
	}()
	f()
}

// TestDamage_ChangedLocalPrevHash changes one hex digit of the stored
// local_prev_hash of a workspace entry (it is not part of any hash: the
// local view is rebuilt from it). The offline auditor used to say ok while
// the daemon's verification said chain_broken.
func TestDamage_ChangedLocalPrevHash(t *testing.T) {
	d := richDataDir(t)
	var seq uint64
	var id string
	update(t, d.dir, func(txn *badger.Txn) error {
		for i, e := range d.entries {
			if e.Workspace == "" || i == 0 {
				continue
			}
			v, err := trailtest.StoredValue(filepath.Join(d.dir, datadir.DatabaseDir), txn, uint64(i+1))
			if err != nil {
				return err
			}
			j := bytes.Index(v, []byte(`"local_prev_hash":"blake3:`))
			if j < 0 {
				continue // the workspace's first entry
			}
			j += len(`"local_prev_hash":"blake3:`)
			if v[j] == '0' { // one hex digit: still a well-formed hash, another one
				v[j] = '1'
			} else {
				v[j] = '0'
			}
			seq, id = uint64(i+1), e.ID
			return trailtest.SetEntry(txn, seq, v)
		}
		return errors.New("no workspace entry with a local_prev_hash")
	})
	v := callers(t, d.dir)
	if v.offlineEr != nil || v.offline.OK || v.offline.Violation != auditor.ViolationChainBroken || v.offline.FirstBad != id {
		t.Errorf("datadir.Verify = %+v, %v; want chain_broken at entry #%d %s", v.offline, v.offlineEr, seq, id)
	}
	if !errors.Is(v.fullCheck, runtime.ErrTrailCorrupt) {
		t.Errorf("Open with FullCheck = %v, want ErrTrailCorrupt", v.fullCheck)
	}
	if v.onlineEr == nil && (v.online.OK || v.online.Violation != trail.ViolationChainBroken) {
		t.Errorf("VerifyTrail = %+v, want chain_broken", v.online)
	}
}

// TestDamage_MerkleNodeBlock flips a byte of a Merkle node's hash inside
// the Badger table file that holds it. The offline auditor used to say ok
// (it never read the nodes), and the daemon served proofs from the damaged
// block. Now the offline auditor and -full-check name the table, and no
// proof is served that does not verify against the signed root.
func TestDamage_MerkleNodeBlock(t *testing.T) {
	d := richDataDir(t)
	// The node hashes are 32 random bytes, stored verbatim in the table.
	var node []byte
	var file string
	var off int
	// Nodes are stored from level 4 (16 entries) up.
	for idx := uint64(0); file == "" && idx < uint64(len(d.entries))/16; idx++ {
		update(t, d.dir, func(txn *badger.Txn) error {
			item, err := txn.Get(binary.BigEndian.AppendUint64([]byte("t/m/\x04"), idx))
			if err != nil {
				return err
			}
			node, err = item.ValueCopy(nil)
			return err
		})
		ssts, _ := filepath.Glob(filepath.Join(d.dir, datadir.DatabaseDir, "*.sst"))
		for _, f := range ssts {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if i := bytes.Index(b, node); i >= 0 {
				file, off = f, i+7
				b[off] ^= 0x20
				if err := os.WriteFile(f, b, 0o644); err != nil {
					t.Fatal(err)
				}
				break
			}
		}
	}
	if file == "" {
		t.Fatal("no Merkle node hash found in the table files")
	}
	v := callers(t, d.dir)
	if v.offlineEr != nil || v.offline.OK || v.offline.Violation != auditor.ViolationUnreadable || v.offline.FirstBad != filepath.Base(file) {
		t.Errorf("datadir.Verify = %+v, %v; want unreadable at %s", v.offline, v.offlineEr, filepath.Base(file))
	}
	if !errors.Is(v.fullCheck, runtime.ErrTrailCorrupt) || !strings.Contains(v.fullCheck.Error(), filepath.Base(file)) {
		t.Errorf("Open with FullCheck = %v, want ErrTrailCorrupt naming %s", v.fullCheck, filepath.Base(file))
	}
	// A default start does not read the tables whole: it may start. Then
	// every inclusion proof it serves verifies, or it answers an error.
	noPanic(t, "inclusion proofs", func() {
		e, err := runtime.Open(runtime.Config{DataDir: filepath.Join(copyDir(t, d.dir), datadir.DatabaseDir)})
		if err != nil {
			return // refused: fine
		}
		defer e.Close()
		n := uint64(len(d.entries))
		sth := signHead(t, d.key, "wacpd/"+e.Root(), d.entries, nil)
		for i := range n {
			p, err := e.Trail().InclusionProof(i, n)
			if err != nil {
				continue
			}
			hashes := make([]string, len(p))
			for j, h := range p {
				hashes[j] = trail.FormatHash(h)
			}
			if err := auditor.VerifyInclusion(d.entries[i].Integrity.EntryHash, i, n, hashes, sth.Root); err != nil {
				t.Errorf("InclusionProof(%d, %d) served a proof that does not verify: %v", i, n, err)
			}
		}
	})
}

// TestDamage_ChangedCheckpointIndexKey changes one character of a
// checkpoint's index key (k/c/<id>): the daemon then answers not_found for
// an acknowledged checkpoint. Offline verify, -full-check and the daemon's
// verification all used to say ok.
func TestDamage_ChangedCheckpointIndexKey(t *testing.T) {
	d := richDataDir(t)
	var id string
	for _, e := range d.entries {
		if e.EventType == trail.EventCheckpointCreated {
			var body struct {
				CheckpointID string `json:"checkpoint_id"`
			}
			if err := json.Unmarshal(e.Body, &body); err != nil {
				t.Fatal(err)
			}
			id = body.CheckpointID
		}
	}
	update(t, d.dir, func(txn *badger.Txn) error {
		k := []byte("k/c/" + id)
		item, err := txn.Get(k)
		if err != nil {
			return err
		}
		v, err := item.ValueCopy(nil)
		if err != nil {
			return err
		}
		other := bytes.Clone(k)
		other[len(other)-1] ^= 0x01
		if err := txn.Delete(k); err != nil {
			return err
		}
		return txn.Set(other, v)
	})
	v := callers(t, d.dir)
	if v.offlineEr != nil || v.offline.OK || v.offline.Violation != auditor.ViolationIndexMismatch || !strings.HasPrefix(v.offline.FirstBad, "k/c/") {
		t.Errorf("datadir.Verify = %+v, %v; want index_mismatch at k/c/…", v.offline, v.offlineEr)
	}
	if !errors.Is(v.fullCheck, runtime.ErrTrailCorrupt) || !strings.Contains(v.fullCheck.Error(), "k/c/") {
		t.Errorf("Open with FullCheck = %v, want ErrTrailCorrupt naming k/c/…", v.fullCheck)
	}
	if v.onlineEr != nil || v.online.OK || v.online.Violation != trail.ViolationIndexMismatch {
		t.Errorf("VerifyTrail = %+v, %v; want index_mismatch", v.online, v.onlineEr)
	}
}
