package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/nats-io/nats.go"

	"github.com/wacpd/wacpd/carp"
	"github.com/wacpd/wacpd/internal/strictjson"
	"github.com/wacpd/wacpd/steward"
)

// The NATS evaluators of custom steward checkpoints (issue 17; docs/api.md,
// "Custom checkpoint evaluators"). A custom trigger that names a subject
// (under wacp.v1.tool., which atlas.Validate requires) is asked by a NATS
// request from the daemon's own connection, as an execution is forwarded
// to a tool service: the request body is the steward.EvalContext, the
// reply {"triggered":true|false} or {"error":"text"}. The engine sets the
// deadline (the atlas's max_checkpoint_time_ms, default 500 ms), caches
// the answers, and fails a blocking checkpoint closed when the evaluator
// errs (package steward).

// maxEvalReply bounds an evaluator's reply: an answer is a boolean.
const maxEvalReply = 4 << 10

// maxEvalError bounds the text of an evaluator's error kept (it reaches
// TRACE as trigger_data.evaluator_error).
const maxEvalError = 200

// askEvaluator is the engine's steward.SubjectCaller: it asks the service
// on subject whether its custom trigger fires for ec, within ctx.
func (r *Daemon) askEvaluator(ctx context.Context, subject string, ec steward.EvalContext) (bool, error) {
	if !strings.HasPrefix(subject, carp.ToolPrefix) {
		return false, fmt.Errorf("evaluator subject %s is not under %s", subject, carp.ToolPrefix)
	}
	nc := r.nc
	if nc == nil {
		return false, errors.New("no NATS connection")
	}
	data, err := json.Marshal(ec)
	if err != nil {
		return false, fmt.Errorf("encode the evaluation context: %w", err)
	}
	m, err := nc.RequestWithContext(ctx, subject, data)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return false, fmt.Errorf("no service answers %s", subject)
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout):
		return false, fmt.Errorf("%s did not answer in time", subject)
	case err != nil:
		return false, fmt.Errorf("ask %s: %w", subject, err)
	}
	return evalReply(m)
}

// evalReply reads an evaluator's reply: exactly {"triggered":bool} or
// {"error":"text"}; a micro error (Nats-Service-Error), an error member
// and anything malformed or larger than maxEvalReply are errors.
func evalReply(m *nats.Msg) (bool, error) {
	if e := m.Header.Get("Nats-Service-Error"); e != "" {
		return false, fmt.Errorf("the evaluator failed: %s", clip(e))
	}
	if len(m.Data) > maxEvalReply {
		return false, fmt.Errorf("the evaluator's reply is %d bytes; at most %d are read", len(m.Data), maxEvalReply)
	}
	var rep struct {
		Triggered *bool   `json:"triggered"`
		Error     *string `json:"error"`
	}
	malformed := errors.New(`the evaluator's reply is not {"triggered":true|false} or {"error":"text"}`)
	if err := strictjson.Decode(m.Data, &rep); err != nil {
		return false, malformed
	}
	switch {
	case rep.Error != nil && rep.Triggered == nil:
		return false, fmt.Errorf("the evaluator failed: %s", clip(*rep.Error))
	case rep.Triggered != nil && rep.Error == nil:
		return *rep.Triggered, nil
	}
	return false, malformed
}

// clip returns s cut to maxEvalError bytes at a character boundary.
func clip(s string) string {
	if len(s) <= maxEvalError {
		return s
	}
	i := maxEvalError
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}
