// Command toolservice is an example tool service of wacpd (CARP/1.0): a
// NATS micro service that performs the actions of the sample atlas
// examples/atlas/acme-support.json on an in-memory ticket store. wacpd
// forwards an execution of action a, after its checks, as a
// carp.ToolRequest on carp.ToolSubject(a) (wacp.v1.tool.<action_id>); the
// service answers a carp.ToolReply. It answers each execution id once and
// repeats that answer when the id comes again. See README.md.
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/wacpd/wacpd/carp"
	"github.com/wacpd/wacpd/internal/strictjson"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() { <-ctx.Done(); stop() }() // a second signal kills the process
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
	case err != nil:
		fmt.Fprintln(os.Stderr, "toolservice:", err)
		os.Exit(1)
	}
}

// config is what the flags say.
type config struct {
	url, token, name string
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("toolservice", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.url, "nats", "", "NATS server URL (default $WACP_NATS_URL, else "+nats.DefaultURL+")")
	fs.StringVar(&c.token, "token", "", "token to connect with (default $WACP_TOOL_TOKEN)")
	fs.StringVar(&c.name, "name", "acme-tools", "micro service name")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if c.url == "" {
		c.url = cmp.Or(os.Getenv("WACP_NATS_URL"), nats.DefaultURL)
	}
	if c.token == "" {
		c.token = os.Getenv("WACP_TOOL_TOKEN")
	}
	return c, nil
}

// run is main without the process: it serves until ctx is done, then
// stops: delayed answers are sent at once, the service's subscriptions
// and the connection drained. It prints "ready <name>" on stdout once the
// service is registered and logs each request on stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	closed := make(chan struct{})
	opts := []nats.Option{nats.Name(cfg.name), nats.ClosedHandler(func(*nats.Conn) { close(closed) })}
	if cfg.token != "" {
		opts = append(opts, nats.Token(cfg.token))
	}
	nc, err := nats.Connect(cfg.url, opts...)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", cfg.url, err)
	}
	defer nc.Close()
	ctx, cancel := context.WithCancel(ctx) // also cancelled when the connection closes first
	defer cancel()
	svc, err := micro.AddService(nc, micro.Config{
		Name: cfg.name, Version: "1.0.0",
		Description: "example tool service of wacpd: the actions of com.acme.support on an in-memory ticket store",
	})
	if err != nil {
		return fmt.Errorf("add service %s: %w", cfg.name, err)
	}
	s := &server{log: log, stop: ctx.Done(), executions: map[string]*execution{}, store: newStore()}
	for _, a := range slices.Sorted(maps.Keys(actions)) {
		err := svc.AddEndpoint(strings.ReplaceAll(a, ".", "_"), micro.HandlerFunc(func(r micro.Request) { s.serve(r, a) }),
			micro.WithEndpointSubject(carp.ToolSubject(a)))
		if err != nil {
			return fmt.Errorf("add endpoint %s: %w", a, err)
		}
	}
	if err := nc.Flush(); err != nil {
		return fmt.Errorf("flush: %w", err)
	}
	fmt.Fprintln(stdout, "ready", cfg.name)

	var lost error
	select {
	case <-ctx.Done():
	case <-closed:
		lost = errors.New("connection closed")
	}
	log.Info("stopping")
	cancel()
	s.close()
	if lost != nil {
		return lost
	}
	if err := svc.Stop(); err != nil {
		return fmt.Errorf("stop service: %w", err)
	}
	if err := nc.Drain(); err != nil {
		return fmt.Errorf("drain: %w", err)
	}
	<-closed
	return nil
}

// maxDelay bounds the parameter delay_ms.
const maxDelay = time.Hour

// execution is the answer to one execution id: done is closed once reply
// holds it.
type execution struct {
	done  chan struct{}
	reply []byte
}

// server answers the requests of every endpoint.
type server struct {
	log  *slog.Logger
	stop <-chan struct{} // closed when the service stops: delays end early

	wg sync.WaitGroup // the goroutines of delayed answers

	mu         sync.Mutex // guards closing, executions and store
	closing    bool       // set by close: no new goroutines
	executions map[string]*execution
	store      *store
}

// serve answers r, a request of action: a request that does not decode
// strictly, or names another action, is refused with INVALID_REQUEST; an
// execution id seen before gets the answer it got (once it has one);
// otherwise the action runs, after delay_ms if that parameter is given.
func (s *server) serve(r micro.Request, action string) {
	req, err := decodeRequest(r.Data(), action)
	if err != nil {
		s.log.Warn("refused", "action", action, "err", err)
		s.respond(r, encode(carp.ToolReply{Status: "failed",
			Error: &carp.ExecutionError{Code: carp.CodeInvalidRequest, Message: err.Error()}}))
		return
	}
	s.mu.Lock()
	ex, seen := s.executions[req.ExecutionID]
	if !seen {
		ex = &execution{done: make(chan struct{})}
		s.executions[req.ExecutionID] = ex
	}
	s.mu.Unlock()
	s.log.Info("request", "execution_id", req.ExecutionID, "action", action, "replay", seen)
	if seen {
		// The same execution again: its answer, once the first has it.
		s.goOrInline(func() {
			<-ex.done
			s.respond(r, ex.reply)
		})
		return
	}
	delay, err := delayOf(req.Parameters)
	if err != nil {
		s.finish(r, ex, func() []byte {
			return encode(carp.ToolReply{Status: "failed", Error: &carp.ExecutionError{Code: carp.CodeInvalidFormat, Message: err.Error()}})
		})
		return
	}
	work := func() []byte { return perform(s.store, action, req.Parameters) }
	if delay == 0 {
		s.finish(r, ex, work)
		return
	}
	s.goOrInline(func() {
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-s.stop:
		}
		s.finish(r, ex, work)
	})
}

// finish computes ex's answer with s.mu held, keeps it and sends it.
func (s *server) finish(r micro.Request, ex *execution, answer func() []byte) {
	s.mu.Lock()
	ex.reply = answer()
	close(ex.done)
	s.mu.Unlock()
	s.respond(r, ex.reply)
}

// goOrInline runs f in a goroutine of s's, or, once s is closing, in the
// caller's.
func (s *server) goOrInline(f func()) {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		f()
		return
	}
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		f()
	}()
}

// close starts no more goroutines and waits for those running; the caller
// has closed s.stop, so delays end at once.
func (s *server) close() {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *server) respond(r micro.Request, reply []byte) {
	if err := r.Respond(reply); err != nil {
		s.log.Error("respond", "subject", r.Subject(), "err", err)
	}
}

// decodeRequest decodes a ToolRequest strictly (unknown, duplicate or
// mistyped fields are refused) and checks it is one of action with an
// execution id.
func decodeRequest(data []byte, action string) (carp.ToolRequest, error) {
	var req carp.ToolRequest
	if err := strictjson.Decode(data, &req); err != nil {
		return req, err
	}
	switch {
	case req.ExecutionID == "":
		return req, errors.New("execution_id is required")
	case req.ActionID != action:
		return req, fmt.Errorf("action_id %q sent to the subject of %s", req.ActionID, action)
	}
	return req, nil
}

// delayOf returns the delay the parameter delay_ms asks for (0 without
// it).
func delayOf(params map[string]any) (time.Duration, error) {
	v, ok := params["delay_ms"]
	if !ok {
		return 0, nil
	}
	ms, ok := v.(float64)
	if !ok || ms < 0 || ms > float64(maxDelay/time.Millisecond) {
		return 0, fmt.Errorf("delay_ms must be a number from 0 to %d", maxDelay/time.Millisecond)
	}
	return time.Duration(ms * float64(time.Millisecond)), nil
}

// perform runs action on st and returns its reply, encoded.
func perform(st *store, action string, params map[string]any) []byte {
	res := actions[action](st, params)
	if res.err != nil {
		return encode(carp.ToolReply{Status: "failed", Error: res.err})
	}
	out, err := json.Marshal(res.output)
	if err != nil {
		return encode(carp.ToolReply{Status: "failed", Error: &carp.ExecutionError{Code: carp.CodeInternalError, Message: err.Error()}})
	}
	return encode(carp.ToolReply{Status: "success", Output: out, OutputType: "application/json", SideEffects: res.effects})
}

func encode(r carp.ToolReply) []byte {
	b, err := json.Marshal(r)
	if err != nil {
		panic(err) // a ToolReply of valid JSON always encodes
	}
	return b
}
