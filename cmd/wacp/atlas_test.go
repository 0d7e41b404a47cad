package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wacpd/wacpd/wire"
)

// acmeVariant writes a copy of the sample atlas changed by edit and
// returns its path.
func acmeVariant(t *testing.T, edit func(m map[string]any)) string {
	t.Helper()
	b, err := os.ReadFile(acmeAtlas)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	if b, err = json.MarshalIndent(m, "", "  "); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "atlas.json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func atlases(t *testing.T, global []string) wire.AtlasList {
	t.Helper()
	code, out, errs := wacp(t, append(global, "-o", "json", "atlas", "list")...)
	var l wire.AtlasList
	if err := json.Unmarshal([]byte(out), &l); code != 0 || err != nil {
		t.Fatalf("wacp atlas list = %d, %q (%v), %q", code, out, err, errs)
	}
	return l
}

// TestAtlasCommands: atlas list shows the atlas loaded at start; the
// coordinator loads a file and a package directory (loaded, then
// unchanged), and unloads; an invalid manifest is refused before it is
// sent, naming its file, entry and rule, and changes nothing; a worker
// lists but may not load.
func TestAtlasCommands(t *testing.T) {
	admin, worker, _ := carpDaemon(t)

	code, out, errs := wacp(t, append(worker, "atlas", "list")...)
	if code != 0 || !strings.HasPrefix(out, "ATLAS ") || !strings.Contains(out, "\ncom.acme.support  1.0.0    ACME Support  support,billing  ticket.get,ticket.list,ticket.comment,ticket.delete,billing.refund  sha256:") {
		t.Fatalf("wacp atlas list = %d, %q, %q; want com.acme.support", code, out, errs)
	}
	before := atlases(t, admin)
	if len(before.Atlases) != 1 || before.Atlases[0].AtlasID != "com.acme.support" {
		t.Fatalf("atlas list -o json = %+v, want com.acme.support", before)
	}

	// The same manifest again: unchanged, the same checksum as -atlas's.
	code, out, errs = wacp(t, append(admin, "-o", "json", "atlas", "load", acmeAtlas)...)
	var ch wire.AtlasChange
	if err := json.Unmarshal([]byte(out), &ch); code != 0 || err != nil || ch.Change != "unchanged" || ch.Checksum != before.Atlases[0].Checksum {
		t.Errorf("wacp atlas load %s = %d, %q (%v), %q; want unchanged, checksum %s", acmeAtlas, code, out, err, errs, before.Atlases[0].Checksum)
	}

	bad := acmeVariant(t, func(m map[string]any) {
		m["policies"].([]any)[2].(map[string]any)["rate_limit"].(map[string]any)["window_seconds"] = 0
	})
	code, out, errs = wacp(t, append(admin, "atlas", "load", bad)...)
	if want := "wacp: invalid_structure: atlas: " + bad + ": policies[comment-rate].rate_limit: rate_limit: window_seconds must be at least 1"; code != 2 || out != "" || !strings.HasPrefix(errs, want) {
		t.Errorf("wacp atlas load (window 0) = %d, %q, %q; want 2 and %q...", code, out, errs, want)
	}
	code, _, errs = wacp(t, append(admin, "-o", "json", "atlas", "load", bad)...)
	var je jsonError
	if err := json.Unmarshal([]byte(errs), &je); err != nil || code != 2 || je.Error.Code != "invalid_structure" ||
		je.Error.Details["rule"] != "rate_limit" || je.Error.Details["entry"] != "policies[comment-rate].rate_limit" || je.Error.Details["file"] != bad {
		t.Errorf("wacp -o json atlas load (window 0) = %d, %q; want 2 and the file, entry and rule in the details", code, errs)
	}
	if after := atlases(t, admin); len(after.Atlases) != 1 || after.Atlases[0].Checksum != before.Atlases[0].Checksum {
		t.Errorf("atlas list after a refused load = %+v, want %+v", after, before)
	}

	// A second atlas, from a package directory: atlas.json and actions/.
	pkg := t.TempDir()
	other := acmeVariant(t, func(m map[string]any) {
		m["atlas_id"] = "com.acme.billing"
		acts := m["actions"].([]any)
		m["actions"] = acts[:len(acts)-1]
		b, err := json.Marshal(acts[len(acts)-1])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(pkg, "actions"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(pkg, "actions", "refund.json"), b, 0o600); err != nil {
			t.Fatal(err)
		}
	})
	b, err := os.ReadFile(other)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pkg, "atlas.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs = wacp(t, append(admin, "atlas", "load", pkg)...)
	if code != 0 || !strings.HasPrefix(out, "atlas_id  com.acme.billing\nversion   1.0.0\nchecksum  sha256:") || !strings.HasSuffix(out, "change    loaded\n") {
		t.Errorf("wacp atlas load DIR = %d, %q, %q; want com.acme.billing loaded", code, out, errs)
	}
	if l := atlases(t, worker); len(l.Atlases) != 2 || l.Atlases[1].AtlasID != "com.acme.billing" || len(l.Atlases[1].Actions) != 5 {
		t.Errorf("atlas list = %+v, want com.acme.billing second with its 5 actions", l)
	}

	if code, out, errs := wacp(t, append(worker, "atlas", "load", acmeAtlas)...); code != 2 || !strings.Contains(errs, "permission_denied") {
		t.Errorf("wacp atlas load as a worker = %d, %q, %q; want 2 and permission_denied", code, out, errs)
	}
	if code, out, errs := wacp(t, append(worker, "atlas", "unload", "com.acme.billing")...); code != 2 || !strings.Contains(errs, "permission_denied") {
		t.Errorf("wacp atlas unload as a worker = %d, %q, %q; want 2 and permission_denied", code, out, errs)
	}
	code, out, errs = wacp(t, append(admin, "atlas", "unload", "com.acme.billing")...)
	if code != 0 || !strings.HasSuffix(out, "change    unloaded\n") {
		t.Errorf("wacp atlas unload = %d, %q, %q; want unloaded", code, out, errs)
	}
	if l := atlases(t, admin); len(l.Atlases) != 1 || l.Atlases[0].AtlasID != "com.acme.support" {
		t.Errorf("atlas list after unload = %+v, want com.acme.support alone", l)
	}

	for _, tt := range []struct {
		name   string
		args   []string
		stderr string
	}{
		{"no file", []string{"atlas", "load", filepath.Join(t.TempDir(), "none.json")}, "read atlas: "},
		{"no argument", []string{"atlas", "load"}, "missing argument"},
		{"unload without id", []string{"atlas", "unload"}, "missing argument"},
		{"list with an argument", []string{"atlas", "list", "x"}, "unexpected argument"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if code, _, errs := wacp(t, append(admin, tt.args...)...); code != 1 || !strings.Contains(errs, tt.stderr) {
				t.Errorf("wacp %v = %d, %q; want 1 and %q", tt.args, code, errs, tt.stderr)
			}
		})
	}
}
