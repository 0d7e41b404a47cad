package runtime

import (
	"strings"
	"testing"
)

func TestBounded(t *testing.T) {
	if got := bounded("artifact"); got != "artifact" {
		t.Errorf("bounded(artifact) = %q", got)
	}
	s := strings.Repeat("é", 1_000_000) // two bytes each
	got := bounded(s)
	if len(got) > 200 || !strings.Contains(got, "(2000000 bytes, blake3:") || !strings.HasPrefix(got, "éé") {
		t.Errorf("bounded(2 MB) = %q", got)
	}
}
