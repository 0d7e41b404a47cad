package client

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/wacpd/wacpd/checkpointchain"
	"github.com/wacpd/wacpd/envelope"
	"github.com/wacpd/wacpd/signal"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/workspace"
)

// FuzzDecodeReply feeds arbitrary replies to what the client decodes of
// the daemon's messages: replyError with any error header, and every reply
// and delivery record type. Nothing may panic; a reply with the error
// header is always an *Error with a code and an exit code of 1 or 2, and
// one without it is never an error.
func FuzzDecodeReply(f *testing.F) {
	f.Add("", []byte(`{"id":"01M8","workspace":"W","type":"artifact","payload":{"files_changed":[],"content":"x","artifacts":[],"k":{}},"intent":"i","parent":null,"status":"final","confidence":"high","resource_usage":null,"timestamp":"t","digest":"blake3:00"}`))
	f.Add("invalid_parent", []byte(`{"error":{"code":"invalid_parent","message":"m","details":{}}}`))
	f.Add("internal", []byte(`{"error":{"code":"","message":1}}`))
	f.Add("no_such_code", []byte(`not json`))
	f.Add("", []byte(`{"entries":[{"id":"e","timestamp":"t","workspace":null,"actor":"a","event_type":"x","body":{},"prev_hash":null,"integrity":{"entry_hash":"h","algorithm":"blake3-256"}}],"next":null}`))
	f.Fuzz(func(t *testing.T, code string, data []byte) {
		m := nats.NewMsg("reply")
		m.Data = data
		if code != "" {
			m.Header.Set(headerError, code)
			m.Header.Set(headerErrorCode, "409")
		}
		err := replyError(m)
		if m.Header.Get(headerError) == "" {
			if err != nil {
				t.Fatalf("replyError(no error header, %q) = %v, want nil", data, err)
			}
		} else {
			var e *Error
			if !errors.As(err, &e) || e.Code == "" {
				t.Fatalf("replyError(%q, %q) = %v, want an *Error with a code", code, data, err)
			}
			if x := ExitCode(err); x != 1 && x != 2 {
				t.Fatalf("ExitCode(%v) = %d, want 1 or 2", err, x)
			}
			_ = e.Error()
		}
		for _, v := range []any{
			new(Info), new(Created), new(IntegrateResult), new(TrailPage), new(checkpointchain.Checkpoint),
			new(workspace.Workspace), new(envelope.Envelope), new(signal.Signal), new(trail.Entry),
			new(trail.VerifyResult), new(trail.TreeHead),
		} {
			_ = json.Unmarshal(data, v)
		}
		// The checkpoint's own decoder: its fast reader's result is the
		// JSON decoder's (checkpointchain.FuzzReadWire).
		cp, err := DecodeCheckpoint(data)
		var want checkpointchain.Checkpoint
		if werr := json.Unmarshal(data, &want); (err == nil) != (werr == nil) || err == nil && !reflect.DeepEqual(cp, want) {
			t.Fatalf("DecodeCheckpoint(%q) = %+v, %v; the JSON decoder %+v, %v", data, cp, err, want, werr)
		}
	})
}
