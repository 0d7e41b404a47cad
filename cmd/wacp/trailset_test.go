package main

import (
	"context"
	"encoding/json"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wacpd/wacpd/auditor"
	"github.com/wacpd/wacpd/auditor/datadir"
	wacpd "github.com/wacpd/wacpd/daemon"
	"github.com/wacpd/wacpd/internal/daemontest"
	"github.com/wacpd/wacpd/runtime"
	"github.com/wacpd/wacpd/taxonomy"
	"github.com/wacpd/wacpd/taxonomy/taxfile"
)

// sibling runs a daemon of the deployment of root (a daemon of its own,
// with a root of its own, when root is "") with taxonomy tax (nil: the
// base), gives it a worker with two checkpoints (busy), stops it, and
// returns its data dir and its root.
func sibling(t *testing.T, root string, tax *taxonomy.Taxonomy) (dir, gotRoot string) {
	t.Helper()
	for _, v := range []string{"WACP_URL", "WACP_TOKEN", "WACP_WORKSPACE"} {
		t.Setenv(v, "")
	}
	var cfg wacpd.Config
	cfg.Config.RootID = root
	cfg.Config.Taxonomy = tax
	d := daemontest.Start(t, cfg)
	busy(t, d.Dir, d.URL)
	code, out, errs := wacp(t, "-data", d.Dir, "-o", "json", "info")
	var info struct {
		RootWorkspace string `json:"root_workspace"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &info) != nil || info.RootWorkspace == "" {
		t.Fatalf("wacp info = %d, %q, %q; want the root workspace", code, out, errs)
	}
	if root != "" && info.RootWorkspace != root {
		t.Fatalf("daemon started with RootID %s has root %s", root, info.RootWorkspace)
	}
	d.Stop()
	return d.Dir, info.RootWorkspace
}

// copyDir copies a stopped daemon's data dir to a new temp dir, keeping
// each file's mode (the daemon refuses keys others can read).
func copyDir(t *testing.T, dir string) string {
	t.Helper()
	to := filepath.Join(t.TempDir(), filepath.Base(dir))
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), info.Mode().Perm())
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, info.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
	return to
}

// publicKey returns the tree-head key of a data dir (its trail.pub).
func publicKey(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, datadir.PublicKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// createSame creates a worker under the root in each of the stopped
// daemons' data dirs through their engines, opened with the same clock
// and the same entropy: the engines mint the same workspace id, which
// each then creates (a deployment whose daemons share their randomness).
// It returns that id. Those entries come after the last signed tree head:
// the data dir verifies them by their hashes and chains.
func createSame(t *testing.T, dirs ...string) string {
	t.Helper()
	at := time.Now().Add(time.Hour).Truncate(time.Millisecond) // after every entry the daemons wrote
	var id string
	for _, dir := range dirs {
		e, err := runtime.Open(runtime.Config{
			DataDir: filepath.Join(dir, datadir.DatabaseDir),
			Now:     func() time.Time { return at },
			Entropy: rand.NewChaCha8([32]byte{1}),
		})
		if err != nil {
			t.Fatal(err)
		}
		w, err := e.CreateWorkspace(context.Background(), e.Root(), []byte(`{"role":"worker"}`))
		if cerr := e.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
		if id != "" && w.ID != id {
			t.Fatalf("engines with the same clock and entropy minted %s and %s; want the same id", id, w.ID)
		}
		id = w.ID
	}
	return id
}

// TestTrailVerifyDeployment: verify with several --dir checks the data dirs
// of a deployment's stopped daemons, made by the real daemon: each alone,
// then the set. Two daemons sharing one root verify; a daemon with its own
// root, a daemon of the root with another taxonomy, a dir given twice, a
// copy of a dir, a workspace created in both and a damaged entry in one
// each fail with exit 2, naming the dir and the check.
func TestTrailVerifyDeployment(t *testing.T) {
	a, root := sibling(t, "", nil)
	b, _ := sibling(t, root, nil)

	code, out, errs := wacp(t, "trail", "verify", "--dir", a, "--dir", b)
	if code != 0 || !strings.HasPrefix(out, "DIR ") || !strings.Contains(out, "ok: 2 daemons of one deployment, root workspace "+root) {
		t.Fatalf("wacp trail verify --dir A --dir B = %d, %q, %q; want 0 and the set ok", code, out, errs)
	}
	for _, dir := range []string{a, b} {
		if !rowOK(out, dir) {
			t.Errorf("wacp trail verify --dir A --dir B = %q; want a row for %s ending ok", out, dir)
		}
	}
	var set auditor.SetReport
	code, out, _ = wacp(t, "-o", "json", "trail", "verify", "--dir", a, "--dir", b)
	if code != 0 || json.Unmarshal([]byte(out), &set) != nil || !set.OK || set.Root != root || len(set.Members) != 2 {
		t.Fatalf("wacp -o json trail verify --dir A --dir B = %d, %q; want the set ok with root %s", code, out, root)
	}
	for i, m := range set.Members {
		if m.Name != []string{a, b}[i] || !m.Report.OK || uint64(m.Report.Entries) != m.Report.Size || m.Report.Root == "" || m.Genesis.Root != root {
			t.Errorf("member %d = %+v; want %s verified, every entry signed, root %s", i, m, []string{a, b}[i], root)
		}
	}
	if set.Members[0].Genesis.EntryHash == set.Members[1].Genesis.EntryHash {
		t.Errorf("both daemons' entry #1 hashes to %s; want each its own", set.Members[0].Genesis.EntryHash)
	}

	ka, kb := publicKey(t, a), publicKey(t, b)
	if code, out, errs := wacp(t, "trail", "verify", "--dir", a, "--dir", b, "--public-key", ka, "--public-key", kb); code != 0 || !strings.Contains(out, "ok: 2 daemons") {
		t.Errorf("wacp trail verify with each dir's key = %d, %q, %q; want 0", code, out, errs)
	}
	code, out, errs = wacp(t, "trail", "verify", "--dir", a, "--dir", b, "--public-key", kb, "--public-key", ka)
	if code != 2 || !strings.Contains(out, "broken: "+a+": member_broken") || !strings.Contains(out, "signature_invalid") {
		t.Errorf("wacp trail verify with the keys swapped = %d, %q, %q; want 2, %s member_broken", code, out, errs, a)
	}

	c, _ := sibling(t, "", nil) // a daemon of its own
	custom, err := taxfile.Parse("custom.yaml", []byte("taxonomy:\n  id: custom\n  version: 1.0.0\n  protocol_version: \"0.1\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	d, _ := sibling(t, root, custom) // the deployment's root, another taxonomy
	tests := []struct {
		name string
		dirs func(t *testing.T) []string
		want string // in the set's line
	}{
		{"a daemon with its own root", func(*testing.T) []string { return []string{a, b, c} }, "broken: " + c + ": root_differs with " + a + ": root workspace "},
		{"another taxonomy", func(*testing.T) []string { return []string{a, b, d} }, "broken: " + d + ": taxonomy_differs with " + a + ": taxonomy custom "},
		{"a dir given twice", func(*testing.T) []string { return []string{a, b, a} }, "broken: " + a + ": same_daemon with " + a + ": "},
		{"a copy of a dir", func(t *testing.T) []string {
			b2 := copyDir(t, b)
			return []string{a, b, b2}
		}, ": same_daemon with " + b + ": both tree heads verify with public key"},
		{"a workspace in both", func(t *testing.T) []string {
			a2, b2 := copyDir(t, a), copyDir(t, b)
			ws := createSame(t, a2, b2)
			return []string{a2, b2, ws}
		}, ": workspace_in_two with "},
		{"a damaged entry", func(t *testing.T) []string {
			b2 := copyDir(t, b)
			daemontest.DamageTrailEntry(t, b2, 3)
			return []string{a, b2}
		}, ": member_broken: its trail is broken: hash_mismatch at "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dirs := tt.dirs(t)
			var ws string
			if tt.name == "a workspace in both" {
				dirs, ws = dirs[:2], dirs[2]
			}
			args := []string{"trail", "verify"}
			for _, d := range dirs {
				args = append(args, "--dir", d)
			}
			code, out, errs := wacp(t, args...)
			if code != 2 || !strings.Contains(out, tt.want) {
				t.Fatalf("wacp %v = %d, %q, %q; want 2 and %q", args, code, out, errs, tt.want)
			}
			named := dirs[len(dirs)-1] // each case puts the dir at fault last
			if !strings.Contains(out, "broken: "+named+": ") {
				t.Errorf("wacp %v = %q; want the set broken at %s", args, out, named)
			}
			if ws != "" && !strings.Contains(out, "workspace "+ws+" is created in both") {
				t.Errorf("wacp %v = %q; want workspace %s named", args, out, ws)
			}
		})
	}
	// The damaged dir's row says where.
	b2 := copyDir(t, b)
	daemontest.DamageTrailEntry(t, b2, 3)
	code, out, _ = wacp(t, "trail", "verify", "--dir", a, "--dir", b2)
	if code != 2 || !rowOK(out, a) || rowOK(out, b2) || !strings.Contains(out, ": hash_mismatch (") {
		t.Errorf("wacp trail verify --dir A --dir B(damaged) = %d, %q; want A ok, B broken at hash_mismatch", code, out)
	}
	code, out, _ = wacp(t, "-o", "json", "trail", "verify", "--dir", a, "--dir", b2)
	set = auditor.SetReport{}
	if code != 2 || json.Unmarshal([]byte(out), &set) != nil || set.OK || set.Violation != auditor.SetMemberBroken || set.Member != b2 ||
		set.Members[1].Report.Violation != auditor.ViolationHashMismatch {
		t.Errorf("wacp -o json trail verify --dir A --dir B(damaged) = %d, %q; want member_broken at %s, hash_mismatch", code, out, b2)
	}
}

// rowOK reports whether out has the row of dir and it ends "ok".
func rowOK(out, dir string) bool {
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, dir+" ") {
			return strings.HasSuffix(line, "  ok")
		}
	}
	return false
}

// TestTrailVerifyDeploymentUsage: the usage errors of several --dir (exit 1).
func TestTrailVerifyDeploymentUsage(t *testing.T) {
	for _, v := range []string{"WACP_URL", "WACP_TOKEN", "WACP_WORKSPACE"} {
		t.Setenv(v, "")
	}
	d1, d2 := t.TempDir(), t.TempDir()
	tests := []struct {
		name     string
		args     []string
		inStderr string
	}{
		{"keys fewer than dirs", []string{"--dir", d1, "--dir", d2, "--public-key", "k"}, "once per --dir (2)"},
		{"two keys, one dir", []string{"--dir", d1, "--public-key", "k1", "--public-key", "k2"}, "one --public-key for one --bundle or --dir"},
		{"two dirs and a bundle", []string{"--dir", d1, "--dir", d2, "--bundle", "f"}, "not both"},
		{"two dirs and a workspace", []string{"--dir", d1, "--dir", d2, "--workspace", "w"}, "--workspace is for the online check"},
		{"not a data dir", []string{"--dir", d1, "--dir", d2}, d1 + ": read public key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"trail", "verify"}, tt.args...)
			if code, _, errs := wacp(t, args...); code != 1 || !strings.Contains(errs, tt.inStderr) {
				t.Errorf("wacp %v = %d, %q; want 1 and %q", args, code, errs, tt.inStderr)
			}
		})
	}
}
