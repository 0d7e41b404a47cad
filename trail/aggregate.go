package trail

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
)

// Aggregate queries (WACP Trail §5): beyond a timeline, the entries a Query
// selects are counted, partitioned by a field (group) and a numeric body
// field is summed, over all of them or per group.

// Bounds of one aggregate: the entries it may read (of the whole trail, or
// of the workspace it names, whether they match or not) and the groups it
// may return. Past either the aggregate is refused, not truncated.
const (
	MaxAggregateScan   = 500_000
	MaxAggregateGroups = 1000
	// MaxFieldPath bounds a field's text and its body path's depth.
	MaxFieldPath      = 256
	MaxFieldPathDepth = 16
)

// LimitError reports an aggregate that would pass one of its bounds.
type LimitError struct {
	What  string // "entries scanned", "groups"
	Limit int
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("trail: aggregate over more than %d %s", e.Limit, e.What)
}

// Field names what a group or a sum reads of an entry: a header field
// ("event_type", "workspace", "actor") or a path into the body
// ("body.resource_usage.tokens_consumed"). The zero Field is none.
type Field struct {
	header string   // event_type, workspace or actor; "" for a body path
	path   []string // the body path, without "body"
}

// ParseField parses a field's text. A body path is "body." and one or
// more dot-separated member names, none empty.
func ParseField(s string) (Field, error) {
	switch s {
	case "event_type", "workspace", "actor":
		return Field{header: s}, nil
	case "":
		return Field{}, fmt.Errorf("trail: empty field")
	}
	if len(s) > MaxFieldPath {
		return Field{}, fmt.Errorf("trail: field is longer than %d bytes", MaxFieldPath)
	}
	rest, ok := strings.CutPrefix(s, "body.")
	if !ok {
		return Field{}, fmt.Errorf("trail: field %q is not event_type, workspace, actor or body.<path>", s)
	}
	path := strings.Split(rest, ".")
	if len(path) > MaxFieldPathDepth {
		return Field{}, fmt.Errorf("trail: field %q is deeper than %d members", s, MaxFieldPathDepth)
	}
	if slices.Contains(path, "") {
		return Field{}, fmt.Errorf("trail: field %q has an empty member name", s)
	}
	return Field{path: path}, nil
}

// IsZero reports whether f is no field.
func (f Field) IsZero() bool { return f.header == "" && len(f.path) == 0 }

// IsBody reports whether f is a body path.
func (f Field) IsBody() bool { return len(f.path) > 0 }

func (f Field) String() string {
	if f.header != "" {
		return f.header
	}
	if len(f.path) == 0 {
		return ""
	}
	return "body." + strings.Join(f.path, ".")
}

// value returns f's JSON value in e, nil when e has none (a system-level
// entry's workspace, a missing body member, a JSON null).
func (f Field) value(e Entry) json.RawMessage {
	var s string
	switch f.header {
	case "event_type":
		s = string(e.EventType)
	case "workspace":
		s = e.Workspace
	case "actor":
		s = e.Actor
	default:
		v := json.RawMessage(e.Body)
		for _, name := range f.path {
			var m map[string]json.RawMessage
			if json.Unmarshal(v, &m) != nil {
				return nil
			}
			if v = m[name]; v == nil {
				return nil
			}
		}
		v = bytes.TrimSpace(v)
		if string(v) == "null" {
			return nil
		}
		return v
	}
	if s == "" {
		return nil
	}
	b, _ := json.Marshal(s) // a string always marshals
	return b
}

// Aggregation says what an aggregate computes besides the count: the
// field its groups are keyed by and the body field it sums (each zero for
// none).
type Aggregation struct {
	GroupBy Field
	Sum     Field
}

// ParseAggregation parses an aggregate's group_by and sum ("" for none):
// a sum must name a body field, the only numeric ones.
func ParseAggregation(groupBy, sum string) (Aggregation, error) {
	var a Aggregation
	var err error
	if groupBy != "" {
		if a.GroupBy, err = ParseField(groupBy); err != nil {
			return Aggregation{}, fmt.Errorf("group_by: %w", err)
		}
	}
	if sum != "" {
		if a.Sum, err = ParseField(sum); err != nil {
			return Aggregation{}, fmt.Errorf("sum: %w", err)
		}
		if !a.Sum.IsBody() {
			return Aggregation{}, fmt.Errorf("sum: %q is not a body field (body.<path>): only body fields are numeric", sum)
		}
	}
	return a, nil
}

// AggregateResult is what an aggregate computes over the entries it
// matched.
type AggregateResult struct {
	// Count is the number of entries matched.
	Count int64 `json:"count"`
	// GroupBy and SumOf repeat the request's fields.
	GroupBy string `json:"group_by,omitempty"`
	SumOf   string `json:"sum_of,omitempty"`
	// Sum is SumOf over every entry matched.
	Sum *Sum `json:"sum,omitempty"`
	// Groups partition the entries matched by GroupBy's value, ordered by
	// the key's JSON text; absent when there is no GroupBy or no entry.
	Groups []Group `json:"groups,omitempty"`
}

// Group is the entries whose GroupBy field has one value.
type Group struct {
	// Key is the field's JSON value (a string for event_type, workspace
	// and actor); null for the entries without one.
	Key   json.RawMessage `json:"key"`
	Count int64           `json:"count"`
	Sum   *Sum            `json:"sum,omitempty"`
}

// Sum is the total of a numeric body field. Integers are added exactly,
// whatever their size; other numbers in binary floating point of 256
// bits, the total then given as the nearest float64 (or in full when it is
// beyond float64's range).
type Sum struct {
	Total Number `json:"total"`
	// Exact: every value added was an integer, so Total is exact.
	Exact bool `json:"exact"`
	// Values counts the entries whose field is a JSON number, Skipped
	// those where it is missing, null or not a number.
	Values  int64 `json:"values"`
	Skipped int64 `json:"skipped"`
}

// Number is a JSON number's text as written, exact at any size. It
// marshals and unmarshals itself, so that any JSON package keeps its text.
type Number string

// MarshalJSON writes n as a JSON number ("" as 0).
func (n Number) MarshalJSON() ([]byte, error) {
	if n == "" {
		return []byte("0"), nil
	}
	if !json.Valid([]byte(n)) || (n[0] != '-' && (n[0] < '0' || n[0] > '9')) {
		return nil, fmt.Errorf("trail: %q is not a JSON number", string(n))
	}
	return []byte(n), nil
}

// UnmarshalJSON reads a JSON number.
func (n *Number) UnmarshalJSON(b []byte) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var x any
	if err := d.Decode(&x); err != nil {
		return fmt.Errorf("trail: number: %w", err)
	}
	v, ok := x.(json.Number)
	if !ok {
		return fmt.Errorf("trail: %s is not a JSON number", b)
	}
	*n = Number(v)
	return nil
}

// Aggregator folds matched entries into an AggregateResult.
type Aggregator struct {
	a      Aggregation
	count  int64
	total  sumAcc
	groups map[string]*groupAcc
}

type groupAcc struct {
	key   json.RawMessage
	count int64
	sum   sumAcc
}

// sumAcc adds integers exactly and other numbers in 256-bit floating point.
type sumAcc struct {
	ints            big.Int
	frac            *big.Float // nil until a non-integer is added
	values, skipped int64
}

const floatPrec = 256

func (s *sumAcc) add(v json.RawMessage) {
	if len(v) == 0 || (v[0] != '-' && (v[0] < '0' || v[0] > '9')) {
		s.skipped++
		return
	}
	if !bytes.ContainsAny(v, ".eE") {
		var n big.Int
		if _, ok := n.SetString(string(v), 10); !ok {
			s.skipped++
			return
		}
		s.ints.Add(&s.ints, &n)
		s.values++
		return
	}
	f, _, err := big.ParseFloat(string(v), 10, floatPrec, big.ToNearestEven)
	if err != nil || f.IsInf() {
		s.skipped++
		return
	}
	if s.frac == nil {
		s.frac = new(big.Float).SetPrec(floatPrec)
	}
	s.frac.Add(s.frac, f)
	s.values++
}

func (s *sumAcc) result() *Sum {
	out := &Sum{Exact: s.frac == nil, Values: s.values, Skipped: s.skipped}
	if s.frac == nil {
		out.Total = Number(s.ints.String())
		return out
	}
	t := new(big.Float).SetPrec(floatPrec).SetInt(&s.ints)
	t.Add(t, s.frac)
	if f, _ := t.Float64(); !math.IsInf(f, 0) {
		out.Total = Number(strconv.FormatFloat(f, 'g', -1, 64))
	} else {
		out.Total = Number(t.Text('g', 17))
	}
	return out
}

// NewAggregator returns an empty aggregate of a.
func NewAggregator(a Aggregation) *Aggregator {
	g := &Aggregator{a: a}
	if !a.GroupBy.IsZero() {
		g.groups = map[string]*groupAcc{}
	}
	return g
}

// Add folds e, an entry the query matched. It fails with a *LimitError
// when e would make one group more than MaxAggregateGroups.
func (g *Aggregator) Add(e Entry) error {
	var grp *groupAcc
	if g.groups != nil {
		key := g.a.GroupBy.value(e)
		if key == nil {
			key = json.RawMessage("null")
		} else if key[0] == '{' || key[0] == '[' {
			var b bytes.Buffer
			if json.Compact(&b, key) == nil {
				key = b.Bytes()
			}
		}
		grp = g.groups[string(key)]
		if grp == nil {
			if len(g.groups) == MaxAggregateGroups {
				return &LimitError{What: "groups", Limit: MaxAggregateGroups}
			}
			grp = &groupAcc{key: slices.Clone(key)}
			g.groups[string(key)] = grp
		}
		grp.count++
	}
	g.count++
	if g.a.Sum.IsZero() {
		return nil
	}
	v := g.a.Sum.value(e)
	g.total.add(v)
	if grp != nil {
		grp.sum.add(v)
	}
	return nil
}

// Result returns the aggregate of the entries added so far.
func (g *Aggregator) Result() AggregateResult {
	r := AggregateResult{Count: g.count, GroupBy: g.a.GroupBy.String(), SumOf: g.a.Sum.String()}
	if !g.a.Sum.IsZero() {
		r.Sum = g.total.result()
	}
	for _, grp := range g.groups {
		out := Group{Key: grp.key, Count: grp.count}
		if !g.a.Sum.IsZero() {
			out.Sum = grp.sum.result()
		}
		r.Groups = append(r.Groups, out)
	}
	slices.SortFunc(r.Groups, func(a, b Group) int { return bytes.Compare(a.Key, b.Key) })
	return r
}
