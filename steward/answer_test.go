package steward

// Tests of answer validation (answer.go): one table of questions and
// answers, each case naming the rule it exercises; FuzzCheckAnswer seeds
// from the same table.

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/wacpd/wacpd/atlas"
)

func answerBoolPtr(b bool) *bool        { return &b }
func answerFloatPtr(f float64) *float64 { return &f }

// answerTest is one answer to one question. answer is the raw JSON the
// agent sent; absent means it sent none. want is "" for a valid answer,
// else the reason.
type answerTest struct {
	name    string
	q       atlas.Question
	answer  string
	absent  bool
	want    string
	wantMsg string // when set, the exact message
	notMsg  string // when set, a text the message must not contain
}

var (
	ansText = func(v atlas.Validation) atlas.Question {
		return atlas.Question{QuestionID: "why", Question: "Why?", ResponseType: atlas.ResponseText, Validation: &v}
	}
	ansAck    = atlas.Question{QuestionID: "ack", Question: "Handle data responsibly.", ResponseType: atlas.ResponseAcknowledgment}
	ansBool   = atlas.Question{QuestionID: "agree", Question: "Do you agree?", ResponseType: atlas.ResponseBoolean}
	ansChoice = atlas.Question{QuestionID: "role", Question: "Your role?", ResponseType: atlas.ResponseChoice, Options: []string{"admin", "user"}}
	ansNumber = atlas.Question{QuestionID: "n", Question: "How many?", ResponseType: atlas.ResponseNumber}
	ansJSON   = atlas.Question{QuestionID: "obj", Question: "Give the object.", ResponseType: atlas.ResponseJSON,
		Schema: json.RawMessage(`{"type":"object","required":["a"]}`)}
)

// ansWith returns a copy of q changed by f (f replaces slices, never
// modifies them).
func ansWith(q atlas.Question, f func(*atlas.Question)) atlas.Question {
	f(&q)
	return q
}

var answerTests = []answerTest{
	// presence
	{name: "required absent", q: ansBool, absent: true, want: ReasonRequired},
	{name: "optional absent", q: ansWith(ansBool, func(q *atlas.Question) { q.Required = answerBoolPtr(false) }), absent: true},
	{name: "explicitly required absent", q: ansWith(ansBool, func(q *atlas.Question) { q.Required = answerBoolPtr(true) }), absent: true, want: ReasonRequired},
	{name: "null counts as absent when required", q: ansBool, answer: `null`, want: ReasonRequired},
	{name: "null counts as absent when optional", q: ansWith(ansBool, func(q *atlas.Question) { q.Required = answerBoolPtr(false) }), answer: ` null `},
	{name: "not JSON", q: ansText(atlas.Validation{}), answer: `because I need it`, want: ReasonType},
	{name: "too large", q: ansText(atlas.Validation{}), answer: `"` + strings.Repeat("x", maxAnswerBytes) + `"`, want: ReasonType},
	{name: "just small enough", q: ansText(atlas.Validation{}), answer: `"` + strings.Repeat("x", maxAnswerBytes-2) + `"`},

	// text
	{name: "text not a string", q: ansText(atlas.Validation{}), answer: `5`, want: ReasonType},
	{name: "min_length short", q: ansText(atlas.Validation{MinLength: 3}), answer: `"ab"`, want: ReasonMinLength,
		wantMsg: "the answer has 2 characters; at least 3 are needed"},
	{name: "min_length exact", q: ansText(atlas.Validation{MinLength: 3}), answer: `"abc"`},
	{name: "min_length counts characters not bytes", q: ansText(atlas.Validation{MinLength: 3}), answer: `"äö"`, want: ReasonMinLength},
	{name: "max_length counts characters not bytes", q: ansText(atlas.Validation{MinLength: 3, MaxLength: 3}), answer: `"äöü"`},
	{name: "max_length long", q: ansText(atlas.Validation{MaxLength: 5}), answer: `"abcdef"`, want: ReasonMaxLength},
	{name: "must_contain present any case", q: ansText(atlas.Validation{MustContain: []string{"reason"}}), answer: `"The REASON is audits"`},
	{name: "must_contain missing", q: ansText(atlas.Validation{MustContain: []string{"reason"}}), answer: `"audits need it"`, want: ReasonMustContain},
	{name: "must_contain every entry", q: ansText(atlas.Validation{MustContain: []string{"reason", "ticket"}}), answer: `"the reason is X"`, want: ReasonMustContain},
	{name: "must_not_contain", q: ansText(atlas.Validation{MustNotContain: []string{"hack"}}), answer: `"I will hack the system"`,
		want: ReasonMustNotContain, wantMsg: "the answer contains a forbidden term (must_not_contain #1)", notMsg: "I will hack"},
	{name: "must_not_contain any case", q: ansText(atlas.Validation{MustNotContain: []string{"bypass", "hack"}}), answer: `"I will HACK it"`,
		want: ReasonMustNotContain, wantMsg: "the answer contains a forbidden term (must_not_contain #2)"},
	{name: "must_not_contain absent", q: ansText(atlas.Validation{MustNotContain: []string{"hack"}}), answer: `"I will help"`},
	{name: "pattern matches", q: ansText(atlas.Validation{Pattern: `^[A-Za-z].*\.$`}), answer: `"Because the ticket says so."`},
	{name: "pattern no final dot", q: ansText(atlas.Validation{Pattern: `^[A-Za-z].*\.$`}), answer: `"Because the ticket says so"`, want: ReasonPattern},
	{name: "pattern starts with a digit", q: ansText(atlas.Validation{Pattern: `^[A-Za-z].*\.$`}), answer: `"1 ticket says so."`, want: ReasonPattern},
	{name: "text expected", q: ansWith(ansText(atlas.Validation{}), func(q *atlas.Question) { q.Expected = json.RawMessage(`"proceed"`) }), answer: `"proceed"`},
	{name: "text expected is exact", q: ansWith(ansText(atlas.Validation{}), func(q *atlas.Question) { q.Expected = json.RawMessage(`"proceed"`) }), answer: `"Proceed"`, want: ReasonExpected},

	// acknowledgment
	{name: "ack understood.", q: ansAck, answer: `"Understood."`},
	{name: "ack i agree!", q: ansAck, answer: `"  I agree! "`},
	{name: "ack true", q: ansAck, answer: `true`},
	{name: "ack false", q: ansAck, answer: `false`, want: ReasonExpected},
	{name: "ack maybe", q: ansAck, answer: `"maybe"`, want: ReasonExpected},
	{name: "ack removes one dot only", q: ansAck, answer: `"understood.."`, want: ReasonExpected},
	{name: "ack validation applies", q: ansWith(ansAck, func(q *atlas.Question) { q.Validation = &atlas.Validation{MinLength: 5} }), answer: `"ok"`, want: ReasonMinLength},

	// boolean
	{name: "boolean yes", q: ansBool, answer: `"yes"`},
	{name: "boolean true", q: ansBool, answer: `true`},
	{name: "boolean No trimmed", q: ansBool, answer: `" No "`},
	{name: "boolean maybe", q: ansBool, answer: `"maybe"`, want: ReasonType},
	{name: "boolean number", q: ansBool, answer: `1`, want: ReasonType},
	{name: "boolean expected true refuses false", q: ansWith(ansBool, func(q *atlas.Question) { q.Expected = json.RawMessage(`true`) }), answer: `false`, want: ReasonExpected},
	{name: "boolean expected true refuses no", q: ansWith(ansBool, func(q *atlas.Question) { q.Expected = json.RawMessage(`true`) }), answer: `"no"`, want: ReasonExpected},
	{name: "boolean expected true accepts YES", q: ansWith(ansBool, func(q *atlas.Question) { q.Expected = json.RawMessage(`true`) }), answer: `"YES"`},

	// choice
	{name: "choice JSON string", q: ansChoice, answer: `"admin"`},
	{name: "choice quoted literal", q: ansChoice, answer: `"\"admin\""`},
	{name: "choice any case trimmed", q: ansChoice, answer: `" Admin "`},
	{name: "choice no option", q: ansChoice, answer: `"root"`, want: ReasonOption},
	{name: "choice quoted no option", q: ansChoice, answer: `"\"root\""`, want: ReasonOption},
	{name: "choice not a string", q: ansChoice, answer: `1`, want: ReasonType},
	{name: "choice ambiguous ignoring case", q: ansWith(ansChoice, func(q *atlas.Question) { q.Options = []string{"Admin", "admin"} }), answer: `"ADMIN"`, want: ReasonOption},
	{name: "choice exact beats ambiguity", q: ansWith(ansChoice, func(q *atlas.Question) { q.Options = []string{"Admin", "admin"} }), answer: `"admin"`},
	{name: "choice expected", q: ansWith(ansChoice, func(q *atlas.Question) { q.Expected = json.RawMessage(`"admin"`) }), answer: `" ADMIN "`},
	{name: "choice expected refuses", q: ansWith(ansChoice, func(q *atlas.Question) { q.Expected = json.RawMessage(`"admin"`) }), answer: `"user"`, want: ReasonExpected},

	// number
	{name: "number string", q: ansNumber, answer: `"5"`},
	{name: "number", q: ansNumber, answer: `5`},
	{name: "number string trimmed", q: ansNumber, answer: `" 7.5 "`},
	{name: "number words", q: ansNumber, answer: `"five"`, want: ReasonType},
	{name: "number bool", q: ansNumber, answer: `true`, want: ReasonType},
	{name: "number NaN", q: ansNumber, answer: `"NaN"`, want: ReasonType},
	{name: "number Inf", q: ansNumber, answer: `"-Inf"`, want: ReasonType},
	{name: "number overflow", q: ansNumber, answer: `1e400`, want: ReasonType},
	{name: "number underflow", q: ansNumber, answer: `1e-400`},
	{name: "number minimum refuses", q: ansWith(ansNumber, func(q *atlas.Question) { q.Validation = &atlas.Validation{Minimum: answerFloatPtr(10)} }), answer: `5`, want: ReasonMinimum},
	{name: "number minimum refuses string", q: ansWith(ansNumber, func(q *atlas.Question) { q.Validation = &atlas.Validation{Minimum: answerFloatPtr(10)} }), answer: `"5"`, want: ReasonMinimum},
	{name: "number minimum inclusive", q: ansWith(ansNumber, func(q *atlas.Question) { q.Validation = &atlas.Validation{Minimum: answerFloatPtr(10)} }), answer: `10`},
	{name: "number maximum refuses", q: ansWith(ansNumber, func(q *atlas.Question) { q.Validation = &atlas.Validation{Maximum: answerFloatPtr(100)} }), answer: `100.5`, want: ReasonMaximum},
	{name: "number expected", q: ansWith(ansNumber, func(q *atlas.Question) { q.Expected = json.RawMessage(`42`) }), answer: `"42.0"`},
	{name: "number expected refuses", q: ansWith(ansNumber, func(q *atlas.Question) { q.Expected = json.RawMessage(`42`) }), answer: `41`, want: ReasonExpected},

	// json
	{name: "json schema accepts", q: ansJSON, answer: `{"a":1}`},
	{name: "json schema accepts a string of JSON", q: ansJSON, answer: `"{\"a\":1}"`},
	{name: "json schema refuses", q: ansJSON, answer: `{"b":1}`, want: ReasonSchema,
		wantMsg: "the answer does not match the question's schema (schema keyword /required)"},
	{name: "json schema refuses a string of JSON", q: ansJSON, answer: `"{\"b\":1}"`, want: ReasonSchema},
	{name: "json schema refuses a string", q: ansJSON, answer: `"secret words"`, want: ReasonSchema},
	{name: "json schema refuses an array", q: ansJSON, answer: `[1]`, want: ReasonSchema},
	{name: "json message names no answer property", q: ansWith(ansJSON, func(q *atlas.Question) {
		q.Schema = json.RawMessage(`{"type":"object","additionalProperties":false}`)
	}), answer: `{"privatekey":1}`, want: ReasonSchema, notMsg: "privatekey"},
	{name: "json not JSON", q: ansWith(ansJSON, func(q *atlas.Question) { q.Schema = nil }), answer: `{"a":`, want: ReasonType},
	{name: "json without schema", q: ansWith(ansJSON, func(q *atlas.Question) { q.Schema = nil }), answer: `"anything"`},
	{name: "json expected", q: ansWith(ansJSON, func(q *atlas.Question) { q.Schema = nil; q.Expected = json.RawMessage(`{"a":[1,2]}`) }), answer: `{ "a": [1, 2.0] }`},
	{name: "json expected in a string", q: ansWith(ansJSON, func(q *atlas.Question) { q.Schema = nil; q.Expected = json.RawMessage(`{"a":[1,2]}`) }), answer: `"{\"a\":[1,2]}"`},
	{name: "json expected refuses", q: ansWith(ansJSON, func(q *atlas.Question) { q.Expected = json.RawMessage(`{"a":[1,2]}`) }), answer: `{"a":[2,1]}`, want: ReasonExpected},

	// on_invalid
	{name: "on_invalid passed through", q: ansWith(ansChoice, func(q *atlas.Question) { q.OnInvalid = atlas.OnInvalidBlock }), answer: `"root"`, want: ReasonOption},
}

func TestCheck(t *testing.T) {
	for _, tt := range answerTests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := CompileQuestion(tt.q)
			if err != nil {
				t.Fatalf("CompileQuestion: %v", err)
			}
			got := q.Check(json.RawMessage(tt.answer), !tt.absent)
			if got.Valid != (tt.want == "") || got.Reason != tt.want {
				t.Fatalf("Check(%.40q) = valid %v reason %q (%s), want valid %v reason %q", tt.answer, got.Valid, got.Reason, got.Message, tt.want == "", tt.want)
			}
			if got.QuestionID != tt.q.QuestionID {
				t.Errorf("QuestionID = %q, want %q", got.QuestionID, tt.q.QuestionID)
			}
			answered := !tt.absent && strings.TrimSpace(tt.answer) != "null"
			if got.Answered != answered {
				t.Errorf("Answered = %v, want %v", got.Answered, answered)
			}
			wantOnInvalid := ""
			if tt.want != "" {
				wantOnInvalid = tt.q.OnInvalid
				if wantOnInvalid == "" {
					wantOnInvalid = atlas.OnInvalidRetry
				}
				if got.Message == "" {
					t.Errorf("invalid with no message")
				}
			}
			if got.OnInvalid != wantOnInvalid {
				t.Errorf("OnInvalid = %q, want %q", got.OnInvalid, wantOnInvalid)
			}
			if tt.wantMsg != "" && got.Message != tt.wantMsg {
				t.Errorf("Message = %q, want %q", got.Message, tt.wantMsg)
			}
			if tt.notMsg != "" && strings.Contains(got.Message, tt.notMsg) {
				t.Errorf("Message = %q, contains %q", got.Message, tt.notMsg)
			}
			var s string
			if json.Unmarshal([]byte(tt.answer), &s) == nil && len(s) >= 4 && strings.Contains(got.Message, s) {
				t.Errorf("Message = %q, contains the answer", got.Message)
			}
		})
	}
}

func TestCompileQuestion(t *testing.T) {
	tests := []struct {
		name    string
		q       atlas.Question
		wantErr bool
	}{
		{"no validation", ansBool, false},
		{"good pattern", ansText(atlas.Validation{Pattern: `^a+$`}), false},
		{"bad pattern", ansText(atlas.Validation{Pattern: `(`}), true},
		{"good schema", ansJSON, false},
		{"bad schema", ansWith(ansJSON, func(q *atlas.Question) { q.Schema = json.RawMessage(`{"type":12}`) }), true},
		{"schema not JSON", ansWith(ansJSON, func(q *atlas.Question) { q.Schema = json.RawMessage(`{`) }), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := CompileQuestion(tt.q)
			if (err != nil) != tt.wantErr {
				t.Errorf("CompileQuestion() error = %v, want error %v", err, tt.wantErr)
			}
		})
	}
}

func TestIsRequired(t *testing.T) {
	tests := []struct {
		required *bool
		want     bool
	}{
		{nil, true},
		{answerBoolPtr(true), true},
		{answerBoolPtr(false), false},
	}
	for _, tt := range tests {
		q, err := CompileQuestion(atlas.Question{QuestionID: "q", ResponseType: atlas.ResponseText, Required: tt.required})
		if err != nil {
			t.Fatal(err)
		}
		if got := q.IsRequired(); got != tt.want {
			t.Errorf("IsRequired(required=%v) = %v, want %v", tt.required, got, tt.want)
		}
	}
}

func TestOutcome(t *testing.T) {
	valid := AnswerResult{QuestionID: "v", Answered: true, Valid: true}
	bad := func(onInvalid string) AnswerResult {
		return AnswerResult{QuestionID: "x", Answered: true, Reason: ReasonType, OnInvalid: onInvalid}
	}
	tests := []struct {
		name    string
		results []AnswerResult
		want    string
	}{
		{"none", nil, OutcomePassed},
		{"all valid", []AnswerResult{valid, valid}, OutcomePassed},
		{"log", []AnswerResult{valid, bad(atlas.OnInvalidLogAndContinue)}, OutcomeLogged},
		{"warn beats log", []AnswerResult{bad(atlas.OnInvalidLogAndContinue), bad(atlas.OnInvalidWarnAndContinue)}, OutcomeWarned},
		{"retry beats warn", []AnswerResult{bad(atlas.OnInvalidWarnAndContinue), bad(atlas.OnInvalidRetry), bad(atlas.OnInvalidLogAndContinue)}, OutcomeRetry},
		{"block beats retry", []AnswerResult{bad(atlas.OnInvalidBlock), bad(atlas.OnInvalidRetry)}, OutcomeBlocked},
		{"block beats retry in any order", []AnswerResult{bad(atlas.OnInvalidRetry), bad(atlas.OnInvalidBlock)}, OutcomeBlocked},
		{"empty on_invalid is retry", []AnswerResult{bad(""), bad(atlas.OnInvalidWarnAndContinue)}, OutcomeRetry},
		{"unknown on_invalid blocks", []AnswerResult{bad("shrug")}, OutcomeBlocked},
		{"valid results do not count", []AnswerResult{{QuestionID: "v", Valid: true, OnInvalid: atlas.OnInvalidBlock}, bad(atlas.OnInvalidLogAndContinue)}, OutcomeLogged},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Outcome(tt.results); got != tt.want {
				t.Errorf("Outcome() = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestOutcomeOfChecks runs Check and Outcome together: a retry question
// answered wrongly and a block question answered rightly retry.
func TestOutcomeOfChecks(t *testing.T) {
	retry, err := CompileQuestion(ansText(atlas.Validation{MinLength: 3}))
	if err != nil {
		t.Fatal(err)
	}
	block, err := CompileQuestion(ansWith(ansChoice, func(q *atlas.Question) { q.OnInvalid = atlas.OnInvalidBlock }))
	if err != nil {
		t.Fatal(err)
	}
	rs := []AnswerResult{retry.Check(json.RawMessage(`"ab"`), true), block.Check(json.RawMessage(`"admin"`), true)}
	if got := Outcome(rs); got != OutcomeRetry {
		t.Errorf("Outcome(%+v) = %q, want %q", rs, got, OutcomeRetry)
	}
	rs[1] = block.Check(json.RawMessage(`"root"`), true)
	if got := Outcome(rs); got != OutcomeBlocked {
		t.Errorf("Outcome(%+v) = %q, want %q", rs, got, OutcomeBlocked)
	}
}
