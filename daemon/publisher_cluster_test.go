package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// serverLog keeps the lines a NATS server logs at notice level and above.
type serverLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *serverLog) add(level, format string, v ...any) {
	l.mu.Lock()
	l.lines = append(l.lines, level+" "+fmt.Sprintf(format, v...))
	l.mu.Unlock()
}

func (l *serverLog) Noticef(format string, v ...any) { l.add("[INF]", format, v...) }
func (l *serverLog) Warnf(format string, v ...any)   { l.add("[WRN]", format, v...) }
func (l *serverLog) Fatalf(format string, v ...any)  { l.add("[FTL]", format, v...) }
func (l *serverLog) Errorf(format string, v ...any)  { l.add("[ERR]", format, v...) }
func (l *serverLog) Debugf(string, ...any)           {}
func (l *serverLog) Tracef(string, ...any)           {}

// matching returns the lines that contain any of subs.
func (l *serverLog) matching(subs ...string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range l.lines {
		for _, s := range subs {
			if strings.Contains(line, s) {
				out = append(out, line)
				break
			}
		}
	}
	return out
}

// runNATSCluster runs a 3-node NATS cluster with JetStream in the test
// process, clustered with routes on 127.0.0.1, clients authenticated by
// token (none when empty), each server logging into log (nil: no log),
// and waits until its JetStream has a meta leader with every follower
// current. It returns the client URLs, comma-separated.
func runNATSCluster(t *testing.T, token string, log natsserver.Logger) string {
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
		ns := runNATSServer(t, &natsserver.Options{
			ServerName: fmt.Sprintf("n%d", i+1), Host: "127.0.0.1", Port: natsserver.RANDOM_PORT,
			NoSigs: true, NoLog: log == nil, Authorization: token,
			JetStream: true, StoreDir: t.TempDir(), DisableJetStreamBanner: true,
			Cluster: natsserver.ClusterOpts{Name: "wacp", Host: "127.0.0.1", Port: port},
			Routes:  natsserver.RoutesFromStr(strings.Join(routes, ",")),
		}, log)
		servers = append(servers, ns)
		urls = append(urls, ns.ClientURL())
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
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

// createPlacedStream creates the stream cfg. A cluster whose meta leader
// has current followers may not yet count every peer online for placement
// ("no suitable peers for placement, peer offline"): the daemon waits for
// that (ensureStream), and so does the test, up to 30 s.
func createPlacedStream(t *testing.T, ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig) jetstream.Stream {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; {
		st, err := js.CreateStream(ctx, cfg)
		if err == nil {
			return st
		}
		if !notYet(err) || time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond) // polling the cluster's placement
	}
}

// waitReplicasCurrent waits until st has a leader and n-1 current
// followers with nothing to catch up.
func waitReplicasCurrent(t *testing.T, ctx context.Context, st jetstream.Stream, n int) *jetstream.StreamInfo {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; {
		info, err := st.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		current := 0
		for _, p := range info.Cluster.Replicas {
			if p.Current && p.Lag == 0 {
				current++
			}
		}
		if info.Cluster.Leader != "" && len(info.Cluster.Replicas) == n-1 && current == n-1 {
			return info
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stream's cluster is %+v after 30s, want a leader and %d current followers", info.Cluster, n-1)
		}
		time.Sleep(20 * time.Millisecond) // polling the stream's state
	}
}

// brokenStream are the lines nats-server logs when a replicated stream
// fails a write or resets its state.
var brokenStream = []string{"critical write error", "Resetting stream", "Error applying stream entries", "resetting"}

// TestExpectedSubjectSequenceOnReplicatedStream: on a 3-node cluster with
// an R3 stream, a publish whose Nats-Expected-Last-Subject-Sequence (with
// -Subject, a wildcard filter) does not match is only refused (10071, with
// the filter's last sequence), every replica stays current, nothing logs a
// failed write or a reset, and the stream takes the next publish.
// (Nats-Expected-Last-Msg-Id mismatched there fails the stream on every
// replica: see publisher.push.) A wildcard filter reads the last message
// of one workspace's signals too.
func TestExpectedSubjectSequenceOnReplicatedStream(t *testing.T) {
	log := &serverLog{}
	urls := runNATSCluster(t, "", log)
	nc, err := nats.Connect(urls)
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
	st := createPlacedStream(t, ctx, js, jetstream.StreamConfig{
		Name: signalStream, Subjects: []string{"wacp.v1.sig.>"}, Storage: jetstream.FileStorage,
		Duplicates: signalsDedupeWindow, Replicas: 3,
	})
	waitReplicasCurrent(t, ctx, st, 3)

	publish := func(id, to, from string, expect uint64) (*jetstream.PubAck, error) {
		msg := nats.NewMsg("wacp.v1.sig." + to + "." + from + ".checkpoint")
		msg.Data = []byte(`{}`)
		msg.Header.Set(jetstream.MsgIDHeader, id)
		msg.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(expect, 10))
		msg.Header.Set(jetstream.ExpectedLastSubjSeqSubjHeader, "wacp.v1.sig.*."+from+".*")
		return js.PublishMsg(ctx, msg)
	}
	stored := func(id, to, from string, expect, want uint64) {
		t.Helper()
		ack, err := publish(id, to, from, expect)
		if err != nil || ack.Sequence != want || ack.Duplicate {
			t.Fatalf("publish %s expecting %d = %+v, %v; want stored at %d", id, expect, ack, err, want)
		}
	}
	refused := func(id, to, from string, expect, last uint64) {
		t.Helper()
		ack, err := publish(id, to, from, expect)
		var apiErr *jetstream.APIError
		if !errors.As(err, &apiErr) || apiErr.ErrorCode != jetstream.JSErrCodeStreamWrongLastSequence ||
			apiErr.Description != fmt.Sprintf("wrong last sequence: %d", last) {
			t.Fatalf("publish %s expecting %d = %+v, %v; want refused with %d, wrong last sequence: %d",
				id, expect, ack, err, jetstream.JSErrCodeStreamWrongLastSequence, last)
		}
	}
	stored("a1", "p", "a", 0, 1)
	stored("b1", "q", "b", 0, 2)
	stored("a2", "q", "a", 1, 3) // another recipient, the same sender
	refused("a3", "p", "a", 1, 3)
	refused("a3", "p", "a", 7, 3)
	refused("a3", "p", "a", 0, 3)
	refused("c1", "p", "c", 2, 0)
	stored("a3", "p", "a", 3, 4)
	stored("c1", "p", "c", 0, 5)
	refused("b2", "p", "b", 4, 2)
	stored("b2", "p", "b", 2, 6)

	for _, tt := range []struct {
		from, wantID string
		wantSeq      uint64
	}{{"a", "a3", 4}, {"b", "b2", 6}, {"c", "c1", 5}} {
		m, err := st.GetLastMsgForSubject(ctx, "wacp.v1.sig.*."+tt.from+".*")
		if err != nil || m.Sequence != tt.wantSeq || m.Header.Get(jetstream.MsgIDHeader) != tt.wantID {
			t.Errorf("GetLastMsgForSubject(wacp.v1.sig.*.%s.*) = %+v, %v; want %s at %d", tt.from, m, err, tt.wantID, tt.wantSeq)
		}
	}
	if _, err := st.GetLastMsgForSubject(ctx, "wacp.v1.sig.*.none.*"); !errors.Is(err, jetstream.ErrMsgNotFound) {
		t.Errorf("GetLastMsgForSubject(wacp.v1.sig.*.none.*) = %v, want %v", err, jetstream.ErrMsgNotFound)
	}
	info := waitReplicasCurrent(t, ctx, st, 3)
	if info.State.Msgs != 6 || info.State.LastSeq != 6 {
		t.Errorf("the stream holds %d messages, last %d; want 6, 6", info.State.Msgs, info.State.LastSeq)
	}
	if len(log.matching("JetStream")) == 0 {
		t.Fatal("the servers logged nothing about JetStream: their logs are not seen")
	}
	if bad := log.matching(brokenStream...); len(bad) > 0 {
		t.Errorf("the servers logged a broken stream:\n%s", strings.Join(bad, "\n"))
	}
}
