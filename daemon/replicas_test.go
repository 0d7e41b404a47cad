package daemon_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/wacpd/wacpd/daemon"
	"github.com/wacpd/wacpd/internal/daemontest"
)

// startNATSCluster runs a 3-node NATS cluster with JetStream in the test
// process, clustered with routes on 127.0.0.1, and waits until its
// JetStream has a meta leader. It returns the client URLs, comma-separated.
func startNATSCluster(t *testing.T, token string) string {
	t.Helper()
	var routes []string
	var ports []int
	for range 3 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
		routes = append(routes, fmt.Sprintf("nats-route://%s", l.Addr()))
		l.Close()
	}
	var urls []string
	var servers []*natsserver.Server
	for i, port := range ports {
		ns := daemon.RunNATSServer(t, &natsserver.Options{
			ServerName: fmt.Sprintf("n%d", i+1), Host: "127.0.0.1", Port: natsserver.RANDOM_PORT,
			NoSigs: true, NoLog: true, Authorization: token,
			JetStream: true, StoreDir: t.TempDir(), DisableJetStreamBanner: true,
			Cluster: natsserver.ClusterOpts{Name: "wacp", Host: "127.0.0.1", Port: port},
			Routes:  natsserver.RoutesFromStr(strings.Join(routes, ",")),
		})
		servers = append(servers, ns)
		urls = append(urls, ns.ClientURL())
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		leader, current := false, true
		for _, ns := range servers {
			leader = leader || ns.JetStreamIsLeader()
			current = current && ns.JetStreamIsCurrent()
		}
		if leader && current {
			return strings.Join(urls, ",")
		}
		if time.Now().After(deadline) {
			t.Fatal("the cluster's JetStream has no meta leader after 30s")
		}
		time.Sleep(20 * time.Millisecond) // polling the servers' state
	}
}

// TestReplicasFollowTheCluster: on a NATS cluster the signal stream gets
// the configured replica count, 3 when none is configured, and a restart
// with another count moves the existing stream to it, both ways.
func TestReplicasFollowTheCluster(t *testing.T) {
	const token = "cluster-t0ken"
	urls := startNATSCluster(t, token)
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
