package main

import (
	"io"
	"reflect"
	"testing"

	"github.com/wacpd/wacpd/bench"
)

func TestParseFlags(t *testing.T) {
	t.Setenv("WACP_NATS_TOKEN", "from-env")
	tests := []struct {
		name      string
		args      []string
		url       string
		natsToken string
		procs     []bench.Process
		wantErr   bool
	}{
		{name: "in-process", natsToken: "from-env"},
		{name: "cluster", args: []string{"-url", "nats://127.0.0.1:1,nats://127.0.0.1:2", "-token", "a", "-nats-token", "t"},
			url: "nats://127.0.0.1:1,nats://127.0.0.1:2", natsToken: "t"},
		{name: "pids", args: []string{"-pid", "wacpd=12", "-pid", "nats n1=34", "-pid", "56"}, natsToken: "from-env",
			procs: []bench.Process{{Name: "wacpd", PID: 12}, {Name: "nats n1", PID: 34}, {Name: "56", PID: 56}}},
		{name: "pid not a number", args: []string{"-pid", "wacpd=x"}, wantErr: true},
		{name: "pid zero", args: []string{"-pid", "wacpd=0"}, wantErr: true},
		{name: "pid no name", args: []string{"-pid", "=12"}, wantErr: true},
		{name: "arguments", args: []string{"extra"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, _, err := parseFlags(tt.args, io.Discard)
			if (err != nil) != tt.wantErr {
				t.Fatalf("parseFlags(%q) error = %v, want error %v", tt.args, err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if cfg.URL != tt.url || cfg.NATSToken != tt.natsToken || !reflect.DeepEqual(cfg.Processes, tt.procs) {
				t.Errorf("parseFlags(%q) = url %q, nats token %q, processes %v; want %q, %q, %v",
					tt.args, cfg.URL, cfg.NATSToken, cfg.Processes, tt.url, tt.natsToken, tt.procs)
			}
		})
	}
}
