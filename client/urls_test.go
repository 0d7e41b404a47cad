package client_test

import (
	"net"
	"testing"

	"github.com/wacpd/wacpd/client"
)

// TestDialURLList: Options.URL may list several servers, comma-separated,
// as wacpd -nats-url does for a cluster (and wacpd.json repeats): Dial
// connects through one that answers, whichever order nats.go tries them in,
// with spaces after the commas or without.
func TestDialURLList(t *testing.T) {
	ctx := testCtx(t)
	dir, url := startDaemon(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "nats://" + l.Addr().String() // nothing listens there once closed
	l.Close()
	for _, list := range []string{dead + "," + url, url + ", " + dead} {
		c := dial(t, ctx, client.Options{URL: list, DataDir: dir})
		if c.URL() != list {
			t.Errorf("URL() = %q, want %q", c.URL(), list)
		}
		if _, err := c.Info(ctx); err != nil {
			t.Errorf("Info through %q = %v", list, err)
		}
	}
}
