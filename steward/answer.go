package steward

// Answer validation (seed 000, "Question Types", "Answer Validation",
// "Invalid Answer Actions"): CompileQuestion compiles a checkpoint
// question once; Check decides one answer of the agent's against it, and
// Outcome combines a checkpoint's results into what the checkpoint does.
// An answer's text never appears in a result: results reach TRACE, and
// answers reach TRACE and the logs only as hashes.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/wacpd/wacpd/atlas"
)

// maxAnswerBytes bounds an answer: a larger one is invalid (ReasonType)
// without being decoded.
const maxAnswerBytes = 64 << 10

// Question is a question compiled for checking answers. It is immutable
// and safe for concurrent use.
type Question struct {
	atlas.Question
	pattern *regexp.Regexp     // Validation.Pattern; nil when none
	schema  *jsonschema.Schema // Schema of a json question; nil when none
}

// CompileQuestion compiles q's validation pattern and, for a json
// question, its schema. It fails only if one of them does not compile,
// which atlas validation refuses when it loads the manifest. The
// returned Question shares q's slices; q must not be modified after.
func CompileQuestion(q atlas.Question) (*Question, error) {
	cq := &Question{Question: q}
	if v := q.Validation; v != nil && v.Pattern != "" {
		re, err := regexp.Compile(v.Pattern)
		if err != nil {
			return nil, fmt.Errorf("compile validation.pattern: %w", err)
		}
		cq.pattern = re
	}
	if q.ResponseType == atlas.ResponseJSON && len(q.Schema) > 0 {
		s, err := atlas.CompileSchema(q.Schema)
		if err != nil {
			return nil, fmt.Errorf("compile schema: %w", err)
		}
		cq.schema = s
	}
	return cq, nil
}

// IsRequired reports whether the question must be answered: Required
// defaults to true.
func (q *Question) IsRequired() bool { return q.Required == nil || *q.Required }

// AnswerResult is the verdict on one answer. It never holds the answer's
// text.
type AnswerResult struct {
	QuestionID string `json:"question_id"`
	Answered   bool   `json:"answered"`
	Valid      bool   `json:"valid"`
	Reason     string `json:"reason,omitempty"`     // one of the Reason* codes when !Valid
	Message    string `json:"message,omitempty"`    // for the agent; never quotes or contains the answer's text
	OnInvalid  string `json:"on_invalid,omitempty"` // when !Valid: the question's on_invalid, default "retry"
}

// Reasons an answer is invalid (AnswerResult.Reason).
const (
	ReasonRequired       = "required"         // a required question has no answer
	ReasonType           = "type"             // the answer is not of the question's response type, or too large
	ReasonMinLength      = "min_length"       // fewer characters than validation.min_length
	ReasonMaxLength      = "max_length"       // more characters than validation.max_length
	ReasonMustContain    = "must_contain"     // a validation.must_contain term is missing
	ReasonMustNotContain = "must_not_contain" // a validation.must_not_contain term occurs
	ReasonPattern        = "pattern"          // validation.pattern does not match
	ReasonOption         = "option"           // a choice answer names no option (or more than one)
	ReasonExpected       = "expected"         // not the expected answer, or an acknowledgment that does not acknowledge
	ReasonMinimum        = "minimum"          // a number below validation.minimum
	ReasonMaximum        = "maximum"          // a number above validation.maximum
	ReasonSchema         = "schema"           // a json answer its schema refuses
)

// Check checks one answer; present is false when the agent gave none. A
// JSON null (or an empty RawMessage) counts as absent. Text validation
// (lengths, must_contain, must_not_contain, pattern) applies to text
// answers and to acknowledgments given as a string; minimum and maximum
// to number answers.
func (q *Question) Check(answer json.RawMessage, present bool) AnswerResult {
	if present {
		t := bytes.TrimSpace(answer)
		present = len(t) > 0 && !bytes.Equal(t, []byte("null"))
	}
	if !present {
		if q.IsRequired() {
			return q.invalid(false, ReasonRequired, "the question is required and has no answer")
		}
		return AnswerResult{QuestionID: q.QuestionID, Valid: true}
	}
	if len(answer) > maxAnswerBytes {
		return q.invalid(true, ReasonType, "the answer is too large: %d bytes; at most %d are accepted", len(answer), maxAnswerBytes)
	}
	if !json.Valid(answer) {
		return q.invalid(true, ReasonType, "the answer is not a JSON value")
	}
	var reason, msg string
	switch q.ResponseType {
	case atlas.ResponseText:
		reason, msg = q.checkText(answer)
	case atlas.ResponseAcknowledgment:
		reason, msg = q.checkAcknowledgment(answer)
	case atlas.ResponseBoolean:
		reason, msg = q.checkBoolean(answer)
	case atlas.ResponseChoice:
		reason, msg = q.checkChoice(answer)
	case atlas.ResponseNumber:
		reason, msg = q.checkNumber(answer)
	case atlas.ResponseJSON:
		reason, msg = q.checkJSON(answer)
	default:
		// Atlas validation refuses an unknown response type; should one
		// get here, no answer satisfies it.
		reason, msg = ReasonType, "the question's response_type is not one wacpd knows"
	}
	if reason != "" {
		return q.invalid(true, reason, "%s", msg)
	}
	return AnswerResult{QuestionID: q.QuestionID, Answered: true, Valid: true}
}

// invalid returns an invalid result. The message must not contain the
// answer's text: callers pass counts and configured values only.
func (q *Question) invalid(answered bool, reason, format string, args ...any) AnswerResult {
	onInvalid := q.OnInvalid
	if onInvalid == "" {
		onInvalid = atlas.OnInvalidRetry
	}
	return AnswerResult{QuestionID: q.QuestionID, Answered: answered, Reason: reason,
		Message: fmt.Sprintf(format, args...), OnInvalid: onInvalid}
}

// decodeString decodes a JSON string answer; ok is false for any other
// JSON value.
func decodeString(answer json.RawMessage) (s string, ok bool) {
	t := bytes.TrimSpace(answer)
	if len(t) == 0 || t[0] != '"' {
		return "", false
	}
	return s, json.Unmarshal(t, &s) == nil
}

// expectedString decodes the question's expected value as a string; ok
// is false when there is none.
func (q *Question) expectedString() (s string, ok bool) {
	if len(q.Expected) == 0 {
		return "", false
	}
	if json.Unmarshal(q.Expected, &s) != nil {
		// Atlas validation refuses a non-string expected for this type;
		// an unmatchable value refuses every answer.
		return "\x00unmatchable expected", true
	}
	return s, true
}

func (q *Question) checkText(answer json.RawMessage) (reason, msg string) {
	s, ok := decodeString(answer)
	if !ok {
		return ReasonType, "a text question needs a JSON string answer"
	}
	if reason, msg := q.validateText(s); reason != "" {
		return reason, msg
	}
	if e, ok := q.expectedString(); ok && s != e {
		return ReasonExpected, "the answer is not the text the question expects"
	}
	return "", ""
}

// validateText applies the question's text validation to s.
func (q *Question) validateText(s string) (reason, msg string) {
	v := q.Validation
	if v == nil {
		return "", ""
	}
	n := utf8.RuneCountInString(s)
	if v.MinLength > 0 && n < v.MinLength {
		return ReasonMinLength, fmt.Sprintf("the answer has %d characters; at least %d are needed", n, v.MinLength)
	}
	if v.MaxLength > 0 && n > v.MaxLength {
		return ReasonMaxLength, fmt.Sprintf("the answer has %d characters; at most %d are allowed", n, v.MaxLength)
	}
	lower := strings.ToLower(s)
	for i, term := range v.MustContain {
		if !strings.Contains(lower, strings.ToLower(term)) {
			return ReasonMustContain, fmt.Sprintf("the answer must contain %q, in any case (must_contain #%d)", term, i+1)
		}
	}
	for i, term := range v.MustNotContain {
		// An empty term would refuse every answer: it is ignored.
		if term != "" && strings.Contains(lower, strings.ToLower(term)) {
			return ReasonMustNotContain, fmt.Sprintf("the answer contains a forbidden term (must_not_contain #%d)", i+1)
		}
	}
	if q.pattern != nil && !q.pattern.MatchString(s) {
		return ReasonPattern, fmt.Sprintf("the answer does not match the pattern %q", v.Pattern)
	}
	return "", ""
}

// acknowledgments are the phrases an acknowledgment accepts, after
// trimming, lowercasing and removing one trailing '.' or '!'.
var acknowledgments = []string{"understood", "acknowledged", "i understand", "i acknowledge", "i agree", "agreed", "yes", "ok", "confirmed"}

// normalizeAcknowledgment trims and lowercases s and removes one trailing
// '.' or '!'.
func normalizeAcknowledgment(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	if strings.HasSuffix(s, ".") || strings.HasSuffix(s, "!") {
		s = s[:len(s)-1]
	}
	return s
}

func (q *Question) checkAcknowledgment(answer json.RawMessage) (reason, msg string) {
	const say = `an acknowledgment says it understood: answer "understood" (or "i understand", "acknowledged", "i agree", "confirmed", "ok", "yes", or true)`
	if bytes.Equal(bytes.TrimSpace(answer), []byte("true")) {
		if len(q.Expected) > 0 {
			return ReasonExpected, "the question expects a particular acknowledgment phrase, not true"
		}
		return "", ""
	}
	s, ok := decodeString(answer)
	if !ok {
		return ReasonExpected, say
	}
	norm := normalizeAcknowledgment(s)
	if !slices.Contains(acknowledgments, norm) {
		return ReasonExpected, say
	}
	if reason, msg := q.validateText(s); reason != "" {
		return reason, msg
	}
	if e, ok := q.expectedString(); ok && norm != normalizeAcknowledgment(e) {
		return ReasonExpected, "the answer is not the acknowledgment phrase the question expects"
	}
	return "", ""
}

func (q *Question) checkBoolean(answer json.RawMessage) (reason, msg string) {
	var b bool
	switch t := bytes.TrimSpace(answer); {
	case bytes.Equal(t, []byte("true")):
		b = true
	case bytes.Equal(t, []byte("false")):
		b = false
	default:
		s, ok := decodeString(answer)
		if !ok {
			return ReasonType, "a boolean question needs true or false (or the string \"yes\" or \"no\")"
		}
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "true", "yes":
			b = true
		case "false", "no":
			b = false
		default:
			return ReasonType, "a boolean question needs true or false (or the string \"yes\" or \"no\")"
		}
	}
	if len(q.Expected) > 0 {
		var e bool
		if json.Unmarshal(q.Expected, &e) != nil {
			return ReasonExpected, "the question expects an answer no boolean gives"
		}
		if b != e {
			return ReasonExpected, fmt.Sprintf("the question expects %t", e)
		}
	}
	return "", ""
}

func (q *Question) checkChoice(answer json.RawMessage) (reason, msg string) {
	s, ok := decodeString(answer)
	if !ok {
		return ReasonType, "a choice question needs a JSON string naming one option: " + q.optionList()
	}
	option, ok := q.matchOption(s)
	if !ok {
		return ReasonOption, "the answer is not one of the options: " + q.optionList()
	}
	if e, ok := q.expectedString(); ok && option != e {
		return ReasonExpected, fmt.Sprintf("the question expects the option %q", e)
	}
	return "", ""
}

// matchOption returns the option s names: an option equal to s; else, with
// s unquoted once if it is itself a JSON string literal, an option equal
// to it, or the only option equal to it trimmed and ignoring case.
func (q *Question) matchOption(s string) (string, bool) {
	if slices.Contains(q.Options, s) {
		return s, true
	}
	s = strings.TrimSpace(s)
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		var u string
		if json.Unmarshal([]byte(s), &u) == nil {
			s = u
			if slices.Contains(q.Options, s) {
				return s, true
			}
			s = strings.TrimSpace(s)
		}
	}
	found, n := "", 0
	for _, o := range q.Options {
		if strings.EqualFold(s, strings.TrimSpace(o)) {
			found, n = o, n+1
		}
	}
	return found, n == 1
}

// optionList lists the options for a message.
func (q *Question) optionList() string {
	quoted := make([]string, len(q.Options))
	for i, o := range q.Options {
		quoted[i] = strconv.Quote(o)
	}
	return strings.Join(quoted, ", ")
}

func (q *Question) checkNumber(answer json.RawMessage) (reason, msg string) {
	const needs = "a number question needs a finite number (a JSON number, or a string of one)"
	t := bytes.TrimSpace(answer)
	var text string
	switch {
	case len(t) > 0 && (t[0] == '-' || t[0] >= '0' && t[0] <= '9'):
		text = string(t)
	default:
		s, ok := decodeString(answer)
		if !ok {
			return ReasonType, needs
		}
		text = strings.TrimSpace(s)
	}
	x, err := strconv.ParseFloat(text, 64)
	// ErrRange with a finite x is an underflow to (nearly) zero: accepted.
	if err != nil && !errors.Is(err, strconv.ErrRange) || math.IsInf(x, 0) || math.IsNaN(x) {
		return ReasonType, needs
	}
	if v := q.Validation; v != nil {
		if v.Minimum != nil && x < *v.Minimum {
			return ReasonMinimum, fmt.Sprintf("the answer is below the minimum %v", *v.Minimum)
		}
		if v.Maximum != nil && x > *v.Maximum {
			return ReasonMaximum, fmt.Sprintf("the answer is above the maximum %v", *v.Maximum)
		}
	}
	if len(q.Expected) > 0 {
		var e float64
		if json.Unmarshal(q.Expected, &e) != nil {
			return ReasonExpected, "the question expects an answer no number gives"
		}
		if x != e {
			return ReasonExpected, fmt.Sprintf("the question expects %v", e)
		}
	}
	return "", ""
}

// checkJSON checks a json answer: the value itself or, when the value is a
// string holding JSON, the value it holds, must satisfy the schema and
// equal the expected value.
func (q *Question) checkJSON(answer json.RawMessage) (reason, msg string) {
	candidates := []json.RawMessage{answer}
	if s, ok := decodeString(answer); ok && json.Valid([]byte(s)) {
		candidates = append(candidates, json.RawMessage(s))
	}
	reason, msg = ReasonSchema, "the answer does not match the question's schema"
	for _, c := range candidates {
		if q.schema != nil {
			v, err := jsonschema.UnmarshalJSON(bytes.NewReader(c))
			if err != nil {
				continue
			}
			if err := q.schema.Validate(v); err != nil {
				if reason == ReasonSchema {
					msg = schemaMessage(err)
				}
				continue
			}
		}
		if len(q.Expected) > 0 {
			var got, want any
			if json.Unmarshal(c, &got) != nil || json.Unmarshal(q.Expected, &want) != nil || !reflect.DeepEqual(got, want) {
				reason, msg = ReasonExpected, "the answer is not the JSON value the question expects"
				continue
			}
		}
		return "", ""
	}
	return reason, msg
}

// schemaMessage describes a schema error by the schema keyword that
// failed: a location in the steward's schema, never the instance's
// location or values (property names and values are the answer's).
func schemaMessage(err error) string {
	const generic = "the answer does not match the question's schema"
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return generic
	}
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	loc := ""
	if _, frag, ok := strings.Cut(ve.SchemaURL, "#"); ok {
		loc = frag
	}
	if ve.ErrorKind != nil {
		for _, k := range ve.ErrorKind.KeywordPath() {
			loc += "/" + k
		}
	}
	if loc == "" {
		return generic
	}
	return fmt.Sprintf("%s (schema keyword %s)", generic, loc)
}

// Outcomes of a set of answers (Outcome).
const (
	OutcomePassed  = "passed"  // every answer is valid
	OutcomeWarned  = "warned"  // invalid answers, all warn_and_continue or log_and_continue, one warn
	OutcomeLogged  = "logged"  // invalid answers, all log_and_continue
	OutcomeRetry   = "retry"   // an invalid answer says retry, none block: ask again
	OutcomeBlocked = "blocked" // an invalid answer says block
)

// Outcome combines results: passed when all are valid (or there are
// none); otherwise the most severe on_invalid among the invalid ones:
// block -> blocked, retry -> retry, warn_and_continue -> warned,
// log_and_continue -> logged. An invalid result with no on_invalid is
// retry; one with an on_invalid wacpd does not know is blocked.
func Outcome(results []AnswerResult) string {
	worst := 0
	for _, r := range results {
		if r.Valid {
			continue
		}
		worst = max(worst, severity(r.OnInvalid))
	}
	return [...]string{OutcomePassed, OutcomeLogged, OutcomeWarned, OutcomeRetry, OutcomeBlocked}[worst]
}

// severity orders on_invalid values, 1 (log) to 4 (block).
func severity(onInvalid string) int {
	switch onInvalid {
	case atlas.OnInvalidLogAndContinue:
		return 1
	case atlas.OnInvalidWarnAndContinue:
		return 2
	case atlas.OnInvalidRetry, "":
		return 3
	default: // block, and any value atlas validation would refuse
		return 4
	}
}
