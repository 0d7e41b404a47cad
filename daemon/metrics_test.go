package daemon_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wacpd/wacpd/checkpointchain"
	"github.com/wacpd/wacpd/client"
	"github.com/wacpd/wacpd/daemon"
	"github.com/wacpd/wacpd/envelope"
	"github.com/wacpd/wacpd/taxonomy"
	"github.com/wacpd/wacpd/wire"
)

// TestMetrics runs the daemon with a metrics listener, drives a checkpoint
// and a rejection through it over NATS, and reads them back from /metrics.
func TestMetrics(t *testing.T) {
	for _, v := range []string{client.EnvURL, client.EnvToken, client.EnvWorkspace, client.EnvNATSToken} {
		t.Setenv(v, "")
	}
	dir := t.TempDir()
	rt, err := daemon.New(daemon.Config{DataDir: dir, Listen: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", Stdout: io.Discard})
	if err != nil {
		t.Fatalf("runtime.New: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- rt.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
	})
	select {
	case <-rt.Ready():
	case err := <-done:
		t.Fatalf("Run = %v before ready", err)
	}
	url := rt.MetricsURL()
	if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/metrics") {
		t.Fatalf("MetricsURL() = %q, want http://127.0.0.1:<port>/metrics", url)
	}

	coord, err := client.Dial(ctx, client.Options{DataDir: dir})
	if err != nil {
		t.Fatalf("Dial(coordinator) = %v", err)
	}
	defer coord.Close()
	created, err := coord.CreateWorkspace(ctx, client.CreateRequest{Role: taxonomy.RoleWorker})
	if err != nil {
		t.Fatalf("CreateWorkspace = %v", err)
	}
	_, err = coord.SendEnvelope(ctx, client.EnvelopeRequest{
		To: created.Workspace.ID, Type: taxonomy.EnvelopeDirective, Payload: envelope.Payload{Content: "start"},
	})
	if err != nil {
		t.Fatalf("SendEnvelope(directive) = %v", err)
	}
	worker, err := client.Dial(ctx, client.Options{URL: rt.URL(), Token: created.Token, Workspace: created.Workspace.ID})
	if err != nil {
		t.Fatalf("Dial(worker) = %v", err)
	}
	defer worker.Close()
	req := client.CheckpointRequest{
		Type: taxonomy.CheckpointArtifact, Intent: "record progress", Status: checkpointchain.StatusProvisional,
		Confidence: checkpointchain.ConfidenceHigh, Payload: checkpointchain.Payload{Content: "work"},
	}
	if _, err := worker.CreateCheckpoint(ctx, req); err != nil {
		t.Fatalf("CreateCheckpoint = %v", err)
	}
	bogus := "01JBOGUSBOGUSBOGUSBOGUSBOGU"
	req.Parent = &bogus
	var ce *client.Error
	if _, err := worker.CreateCheckpoint(ctx, req); !errors.As(err, &ce) || ce.Code != wire.CodeInvalidParent {
		t.Fatalf("CreateCheckpoint(parent %s) = %v, want invalid_parent", bogus, err)
	}

	// Signals are published after their commit; wait until the outbox is empty.
	var m metricValues
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		m = scrape(t, ctx, url)
		if m["wacpd_signals_published_total"] >= 1 && m["wacpd_outbox_depth"] == 0 {
			break
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("signals_published_total = %v, outbox_depth = %v; want >= 1 and 0",
				m["wacpd_signals_published_total"], m["wacpd_outbox_depth"])
		}
	}
	if got := m["wacpd_commit_duration_seconds_count"]; got < 1 {
		t.Errorf("wacpd_commit_duration_seconds_count = %v, want > 0", got)
	}
	if got, want := m["wacpd_commit_batch_ops_count"], m["wacpd_commit_duration_seconds_count"]; got != want {
		t.Errorf("wacpd_commit_batch_ops_count = %v, want %v (one per commit)", got, want)
	}
	if got := m[`wacpd_rejections_total{reason="invalid_parent"}`]; got != 1 {
		t.Errorf(`wacpd_rejections_total{reason="invalid_parent"} = %v, want 1`, got)
	}
	if got := m[`wacpd_requests_total{code="ok",endpoint="agent_checkpoint"}`]; got != 1 {
		t.Errorf(`wacpd_requests_total{code="ok",endpoint="agent_checkpoint"} = %v, want 1`, got)
	}
	// A CARP request over HTTP is counted as one over NATS is.
	resp, err := http.Post(rt.HTTPURL()+"/carp/v1/resolve", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := scrape(t, ctx, url)[`wacpd_requests_total{code="UNAUTHORIZED",endpoint="agent_carp_resolve"}`]; resp.StatusCode != http.StatusUnauthorized || got != 1 {
		t.Errorf(`an HTTP resolve without a token: %d, wacpd_requests_total{code="UNAUTHORIZED",endpoint="agent_carp_resolve"} = %v; want 401, 1`, resp.StatusCode, got)
	}
	if got := m[`wacpd_requests_total{code="invalid_parent",endpoint="agent_checkpoint"}`]; got != 1 {
		t.Errorf(`wacpd_requests_total{code="invalid_parent",endpoint="agent_checkpoint"} = %v, want 1`, got)
	}
}

// TestMetricsAddrInvalid checks that New refuses a metrics address that is
// not HOST:PORT.
func TestMetricsAddrInvalid(t *testing.T) {
	for _, addr := range []string{"localhost", "127.0.0.1:x", "127.0.0.1:70000"} {
		if _, err := daemon.New(daemon.Config{DataDir: t.TempDir(), MetricsAddr: addr}); err == nil {
			t.Errorf("New(MetricsAddr %q) = nil error, want one", addr)
		}
	}
}

// metricValues maps each exposed series, as written in the text format
// (name{labels}), to its value.
type metricValues map[string]float64

// scrape reads url's text exposition. Its client keeps no connection open,
// so nothing outlives the test.
func scrape(t *testing.T, ctx context.Context, url string) metricValues {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	m := metricValues{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			t.Fatalf("GET %s: malformed line %q", url, line)
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("GET %s: line %q: %v", url, line, err)
		}
		m[line[:i]] = v
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return m
}
