package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunRefusesBadLimits: the budget, admission and NATS flags reach the
// Config, which refuses values no run can use: wacpd stops at start with an
// error naming the setting, and creates no database.
func TestRunRefusesBadLimits(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"-budget-warn-percent", "100"}, "BudgetWarnPercent 100: want 1 to 99"},
		{[]string{"-budget-warn-percent", "-5"}, "BudgetWarnPercent -5: want 1 to 99"},
		{[]string{"-workspace-memory-mb", "-1"}, "Capacity.MemoryPerWorkspace -1048576"},
		{[]string{"-workspace-disk-mb", "-2"}, "Capacity.StoragePerWorkspace -2097152"},
		{[]string{"-max-live-workspaces", "many"}, `invalid value "many" for flag -max-live-workspaces`},
		{[]string{"-replicas", "-1"}, "replicas -1: want 0 (automatic) or 1 to 5"},
		{[]string{"-replicas", "6", "-nats-url", "nats://127.0.0.1:1"}, "replicas 6: want 0 (automatic) or 1 to 5"},
		{[]string{"-replicas", "3"}, "replicas 3 needs a NATS cluster (-nats-url)"},
		{[]string{"-nats-url", "nats://127.0.0.1:1,,nats://127.0.0.1:2"}, "URL 2 of 3 is empty"},
		{[]string{"-nats-url", "http://127.0.0.1:1"}, `scheme "http", want nats, tls, ws or wss`},
		{[]string{"-partitions", "8", "-own", "0-3", "-daemon-id", "d1"}, "-nats-url is required"},
		{[]string{"-partitions", "8", "-daemon-id", "d1", "-nats-url", "nats://127.0.0.1:1"}, "needs the partitions this daemon owns (-own)"},
		{[]string{"-partitions", "8", "-own", "6-9", "-daemon-id", "d1", "-nats-url", "nats://127.0.0.1:1"}, "own partition 8: want 0 to 7"},
		{[]string{"-partitions", "8", "-own", "0-x", "-daemon-id", "d1"}, `invalid value "0-x" for flag -own`},
		{[]string{"-partitions", "8", "-own", "1", "-daemon-id", "a.b", "-nats-url", "nats://127.0.0.1:1"}, `daemon id "a.b"`},
		{[]string{"-own", "1"}, "without a partition count (-partitions)"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			args := append([]string{"-data", dir, "-listen", "127.0.0.1:0"}, tt.args...)
			var stdout, stderr bytes.Buffer
			// Cancelled: a daemon that started after all returns at once.
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			err := run(ctx, args, &stdout, &stderr)
			if err == nil || !strings.Contains(err.Error()+stderr.String(), tt.want) {
				t.Fatalf("run(%q) = %v (stderr %q), want an error with %q", tt.args, err, stderr.String(), tt.want)
			}
			if _, err := os.Stat(filepath.Join(dir, "db")); err == nil {
				t.Errorf("run(%q) created the database", tt.args)
			}
		})
	}
}
