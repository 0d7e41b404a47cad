package trace

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/wacpd/wacpd/internal/strictjson"
)

// MaxLine bounds one exported event's line.
const MaxLine = 1 << 20

// ErrFormat is wrapped by every error ReadJSONL returns for bad input.
var ErrFormat = errors.New("trace: malformed export")

// ReadJSONL reads an export: one event per line, in order (wacp trace
// export). Blank lines are skipped. A line that is not an event (unknown
// or duplicate fields, wrong types, a line longer than MaxLine) is an
// error naming its line; the events are not verified here (Verify).
func ReadJSONL(r io.Reader) ([]Event, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLine)
	var out []Event
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var e Event
		if err := strictjson.Decode(line, &e); err != nil {
			return nil, fmt.Errorf("%w: line %d: %v", ErrFormat, n, err)
		}
		if len(e.Payload) == 0 || e.Payload[0] != '{' {
			return nil, fmt.Errorf("%w: line %d: payload is not a JSON object", ErrFormat, n)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	return out, nil
}

// WriteJSONL writes events one per line.
func WriteJSONL(w io.Writer, events []Event) error {
	bw := bufio.NewWriter(w)
	for _, e := range events {
		b, err := marshalLine(e)
		if err != nil {
			return err
		}
		bw.Write(b)
	}
	return bw.Flush()
}
