package daemon_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/wacpd/wacpd/daemon"
	"github.com/wacpd/wacpd/internal/daemontest"
)

// TestReplicasFollowTheCluster: on a NATS cluster the signal stream gets
// the configured replica count, 3 when none is configured, and a restart
// with another count moves the existing stream to it, both ways.
func TestReplicasFollowTheCluster(t *testing.T) {
	const token = "cluster-t0ken"
	urls := daemon.RunNATSCluster(t, token, nil)
	nc, err := nats.Connect(urls, nats.Token(token))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	for _, tt := range []struct{ replicas, want int }{{1, 1}, {0, 3}, {1, 1}} {
		d := daemontest.Start(t, daemon.Config{DataDir: dir, NATSURL: urls, NATSToken: token, Replicas: tt.replicas})
		st, err := js.Stream(ctx, "WACP_SIGNALS")
		if err != nil {
			t.Fatal(err)
		}
		if got := st.CachedInfo().Config.Replicas; got != tt.want {
			t.Errorf("with Replicas %d the stream has %d replicas, want %d", tt.replicas, got, tt.want)
		}
		// The cluster places them: a leader and want-1 current followers.
		for deadline := time.Now().Add(30 * time.Second); ; {
			info, err := st.Info(ctx)
			if err != nil {
				t.Fatal(err)
			}
			current := 0
			for _, p := range info.Cluster.Replicas {
				if p.Current {
					current++
				}
			}
			if info.Cluster.Leader != "" && len(info.Cluster.Replicas) == tt.want-1 && current == tt.want-1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("with Replicas %d the stream's cluster is %+v after 30s, want a leader and %d current followers", tt.replicas, info.Cluster, tt.want-1)
			}
			time.Sleep(20 * time.Millisecond) // polling the stream's state
		}
		d.Stop()
	}
}
