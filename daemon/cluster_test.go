package daemon

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestSeedURLs: -nats-url is one URL or a comma-separated list; each
// element must name a host with a NATS scheme (or none), and spaces around
// the commas go.
func TestSeedURLs(t *testing.T) {
	tests := []struct {
		in, want, wantErr string
	}{
		{in: "nats://127.0.0.1:4222", want: "nats://127.0.0.1:4222"},
		{in: "nats://a:4222, nats://b:4222 ,tls://c:4222", want: "nats://a:4222,nats://b:4222,tls://c:4222"},
		{in: "a:4222,b", want: "a:4222,b"},
		{in: "ws://a:8080,wss://b", want: "ws://a:8080,wss://b"},
		{in: "nats://a:4222,", wantErr: "URL 2 of 2 is empty"},
		{in: " , nats://a", wantErr: "URL 1 of 2 is empty"},
		{in: "http://a:4222", wantErr: `scheme "http"`},
		{in: "nats://:4222", wantErr: "no host"},
		{in: "nats://a:port", wantErr: "invalid port"},
	}
	for _, tt := range tests {
		got, err := seedURLs(tt.in)
		switch {
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("seedURLs(%q) = %q, %v; want an error with %q", tt.in, got, err, tt.wantErr)
		case tt.wantErr == "" && (err != nil || got != tt.want):
			t.Errorf("seedURLs(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

// TestNotYet: making the stream is tried again for what a cluster that has
// just started answers, and not for anything else.
func TestNotYet(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"no peers for placement", &jetstream.APIError{Code: 400, ErrorCode: jsNoPeers, Description: "no suitable peers for placement"}, true},
		{"jetstream unavailable", fmt.Errorf("create stream: %w", &jetstream.APIError{Code: 503, ErrorCode: jsClusterNotAvail}), true},
		{"no answer in time", fmt.Errorf("create stream: %w", context.DeadlineExceeded), true},
		{"nats timeout", nats.ErrTimeout, true},
		{"bad request", &jetstream.APIError{Code: 400, ErrorCode: jetstream.JSErrCodeBadRequest}, false},
		{"jetstream not enabled", &jetstream.APIError{Code: 503, ErrorCode: jetstream.JSErrCodeJetStreamNotEnabled}, false},
		{"other", errors.New("permissions violation"), false},
	}
	for _, tt := range tests {
		if got := notYet(tt.err); got != tt.want {
			t.Errorf("notYet(%s: %v) = %v, want %v", tt.name, tt.err, got, tt.want)
		}
	}
}
