package bench

import (
	"os"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    time.Duration
		wantErr bool
	}{
		{name: "plain", in: "4242 (wacpd) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 75 0 0 20 0 12 0 100 0 0\n", want: 3250 * time.Millisecond},
		{name: "command with spaces and parens", in: "7 (nats (n1) x) R 1 7 7 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 5 0 0", want: 30 * time.Millisecond},
		{name: "no command", in: "7 nats R 1", wantErr: true},
		{name: "short", in: "7 (nats) R 1 7 7", wantErr: true},
		{name: "not a number", in: "7 (nats) R 1 7 7 0 -1 0 0 0 0 0 x 2 0", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStat([]byte(tt.in))
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("parseStat(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestProcessesCPU(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	self := []Process{{Name: "self", PID: os.Getpid()}}
	if _, err := processesCPU(self); err != nil {
		t.Errorf("processesCPU(this process) = %v", err)
	}
	if _, err := processesCPU([]Process{{Name: "gone", PID: 1 << 30}}); err == nil {
		t.Errorf("processesCPU(no such pid) = nil error")
	}
	got := processesUsed(self, []time.Duration{time.Second}, []time.Duration{3 * time.Second}, 4)
	if got[0].CPU != 2*time.Second || got[0].PerCheckpoint != 500*time.Millisecond || got[0].PeakRSS <= 0 {
		t.Errorf("processesUsed = %+v, want 2s, 500ms per checkpoint and a peak RSS", got[0])
	}
}
