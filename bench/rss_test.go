package bench

import "testing"

func TestStatusField(t *testing.T) {
	tests := []struct {
		name, status string
		want         int64
	}{
		{"linux", "Name:\tx\nVmPeak:\t  9000 kB\nVmHWM:\t    2020 kB\nVmRSS:\t 1000 kB\n", 2020 << 10},
		{"after another field", "VmRSS:\t 1000 kB\nVmHWM:\t 3 kB\n", 3 << 10},
		{"missing", "Name:\tx\nVmRSS:\t 1000 kB\n", 0},
		{"garbled", "VmHWM:\tlots\n", 0},
		{"empty", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := statusField([]byte(tt.status), "VmHWM:"); got != tt.want {
				t.Errorf("statusField(%q, VmHWM) = %d, want %d", tt.status, got, tt.want)
			}
		})
	}
}

func TestPeakRSS(t *testing.T) {
	if got := peakRSS(); got <= 0 {
		t.Skipf("peakRSS() = %d: no /proc here", got)
	}
}
