package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestTrailAggregateCommand: wacp trail aggregate over a real daemon:
// the count and groups of the workspace_created entries (the root and two
// workers), a sum, the table form, and a bad --sum refused with the
// daemon's code (exit 2).
func TestTrailAggregateCommand(t *testing.T) {
	dir, _ := daemon(t)
	admin := []string{"-data", dir}
	for range 2 {
		if code, out, errs := wacp(t, append(admin, "workspace", "create", "--role", "worker")...); code != 0 {
			t.Fatalf("workspace create = %d, %q, %q", code, out, errs)
		}
	}
	code, out, errs := wacp(t, append(admin, "-o", "json", "trail", "aggregate", "--type", "workspace_created", "--group", "body.role", "--sum", "body.budget")...)
	var res struct {
		Count  int64
		Groups []struct {
			Key   string
			Count int64
		}
		Sum struct {
			Total           json.Number
			Values, Skipped int64
		}
	}
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil {
		t.Fatalf("wacp trail aggregate = %d, %q, %q", code, out, errs)
	}
	if res.Count != 3 || len(res.Groups) != 2 || res.Groups[0].Key != "coordinator" || res.Groups[0].Count != 1 ||
		res.Groups[1].Key != "worker" || res.Groups[1].Count != 2 || res.Sum.Total != "0" || res.Sum.Skipped != 3 {
		t.Errorf("wacp trail aggregate = %s; want 3 entries: coordinator 1, worker 2, budgets (null) skipped", out)
	}
	code, out, _ = wacp(t, append(admin, "trail", "aggregate", "--type", "workspace_created", "--group", "body.role")...)
	if code != 0 || !strings.Contains(out, "worker") || !strings.Contains(strings.Join(strings.Fields(out), " "), "(all) 3") {
		t.Errorf("wacp trail aggregate (table) = %d, %q; want the groups and (all) 3", code, out)
	}
	if code, _, errs := wacp(t, append(admin, "trail", "aggregate", "--sum", "actor")...); code != 2 || !strings.Contains(errs, "invalid_structure") {
		t.Errorf("wacp trail aggregate --sum actor = %d, %q; want 2, invalid_structure", code, errs)
	}
}
