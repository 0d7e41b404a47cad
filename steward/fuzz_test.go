package steward

// Fuzz targets of answer validation (FuzzCheckAnswer) and keyword
// matching (FuzzKeywords), each seeded with its table of tests
// (answerTests, keywordTests).

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/wacpd/wacpd/atlas"
)

// answerFuzzTypes are the response types FuzzCheckAnswer's type index
// picks from.
var answerFuzzTypes = []string{atlas.ResponseText, atlas.ResponseAcknowledgment, atlas.ResponseBoolean,
	atlas.ResponseChoice, atlas.ResponseNumber, atlas.ResponseJSON}

// answerFuzzOnInvalid are the on_invalid values its index picks from.
var answerFuzzOnInvalid = []string{"", atlas.OnInvalidRetry, atlas.OnInvalidBlock, atlas.OnInvalidWarnAndContinue, atlas.OnInvalidLogAndContinue}

// answerFuzzExpected is each response type's expected value.
var answerFuzzExpected = map[string]string{
	atlas.ResponseText: `"proceed"`, atlas.ResponseAcknowledgment: `"understood"`, atlas.ResponseBoolean: `true`,
	atlas.ResponseChoice: `"admin"`, atlas.ResponseNumber: `42`, atlas.ResponseJSON: `{"a":1}`,
}

// Knobs of FuzzCheckAnswer's question and answer, one bit each.
const (
	answerKnobMustContain    = 1 << iota // must_contain ["reason"]
	answerKnobMustNotContain             // must_not_contain ["hack", "bypass"]
	answerKnobPattern                    // pattern ^[A-Za-z].*\.$
	answerKnobBounds                     // minimum 10, maximum 100
	answerKnobExpected                   // answerFuzzExpected
	answerKnobSchema                     // schema {"type":"object","required":["a"]}
	answerKnobOptional                   // required false
	answerKnobAbsent                     // no answer
)

// answerFuzzQuestion builds the question a FuzzCheckAnswer input
// describes.
func answerFuzzQuestion(typ, minLen, maxLen, knobs, onInvalid uint8) atlas.Question {
	rt := answerFuzzTypes[int(typ)%len(answerFuzzTypes)]
	q := atlas.Question{QuestionID: "q1", Question: "Answer.", ResponseType: rt, Options: []string{"admin", "user"},
		OnInvalid: answerFuzzOnInvalid[int(onInvalid)%len(answerFuzzOnInvalid)]}
	v := &atlas.Validation{MinLength: int(minLen), MaxLength: int(maxLen)}
	if knobs&answerKnobMustContain != 0 {
		v.MustContain = []string{"reason"}
	}
	if knobs&answerKnobMustNotContain != 0 {
		v.MustNotContain = []string{"hack", "bypass"}
	}
	if knobs&answerKnobPattern != 0 {
		v.Pattern = `^[A-Za-z].*\.$`
	}
	if knobs&answerKnobBounds != 0 {
		lo, hi := 10.0, 100.0
		v.Minimum, v.Maximum = &lo, &hi
	}
	q.Validation = v
	if knobs&answerKnobExpected != 0 {
		q.Expected = json.RawMessage(answerFuzzExpected[rt])
	}
	if knobs&answerKnobSchema != 0 {
		q.Schema = json.RawMessage(`{"type":"object","required":["a"]}`)
	}
	if knobs&answerKnobOptional != 0 {
		f := false
		q.Required = &f
	}
	return q
}

// answerFuzzSeed describes a table case in FuzzCheckAnswer's terms, as
// near as its knobs reach.
func answerFuzzSeed(tt answerTest) (typ, minLen, maxLen, knobs, onInvalid uint8) {
	typ = uint8(max(0, slices.Index(answerFuzzTypes, tt.q.ResponseType)))
	onInvalid = uint8(max(0, slices.Index(answerFuzzOnInvalid, tt.q.OnInvalid)))
	if v := tt.q.Validation; v != nil {
		minLen, maxLen = uint8(min(v.MinLength, 255)), uint8(min(v.MaxLength, 255))
		if len(v.MustContain) > 0 {
			knobs |= answerKnobMustContain
		}
		if len(v.MustNotContain) > 0 {
			knobs |= answerKnobMustNotContain
		}
		if v.Pattern != "" {
			knobs |= answerKnobPattern
		}
		if v.Minimum != nil || v.Maximum != nil {
			knobs |= answerKnobBounds
		}
	}
	if len(tt.q.Expected) > 0 {
		knobs |= answerKnobExpected
	}
	if len(tt.q.Schema) > 0 {
		knobs |= answerKnobSchema
	}
	if tt.q.Required != nil && !*tt.q.Required {
		knobs |= answerKnobOptional
	}
	if tt.absent {
		knobs |= answerKnobAbsent
	}
	return typ, minLen, maxLen, knobs, onInvalid
}

// messageAlphabet is every character the fixed words of a message use
// (counts and numbers included). Configured terms add their own.
const messageAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789 ;:,.()#\"'_-/+\\"

// foreignRune reports whether s has a character that neither a message's
// fixed words nor q's configured values contain: if a message contains
// such an s, it came from the answer.
func foreignRune(s string, q atlas.Question) bool {
	known := messageAlphabet + q.QuestionID + strings.Join(q.Options, "") + string(q.Expected) + string(q.Schema)
	if v := q.Validation; v != nil {
		known += v.Pattern + strings.Join(v.MustContain, "") + strings.Join(v.MustNotContain, "")
	}
	for _, r := range s {
		if !strings.ContainsRune(known, r) {
			return true
		}
	}
	return false
}

var answerReasons = []string{ReasonRequired, ReasonType, ReasonMinLength, ReasonMaxLength, ReasonMustContain, ReasonMustNotContain,
	ReasonPattern, ReasonOption, ReasonExpected, ReasonMinimum, ReasonMaximum, ReasonSchema}

func FuzzCheckAnswer(f *testing.F) {
	for _, tt := range answerTests {
		if len(tt.answer) > 4<<10 {
			// The too-large case: its size alone decides it, and the
			// fuzzer would spend its time minimizing 64 KiB inputs.
			continue
		}
		typ, minLen, maxLen, knobs, onInvalid := answerFuzzSeed(tt)
		f.Add(typ, minLen, maxLen, knobs, onInvalid, []byte(tt.answer))
	}
	f.Fuzz(func(t *testing.T, typ, minLen, maxLen, knobs, onInvalid uint8, answer []byte) {
		q := answerFuzzQuestion(typ, minLen, maxLen, knobs, onInvalid)
		cq, err := CompileQuestion(q)
		if err != nil {
			t.Fatalf("CompileQuestion: %v", err)
		}
		present := knobs&answerKnobAbsent == 0
		r := cq.Check(answer, present)
		if again := cq.Check(answer, present); again != r {
			t.Fatalf("Check is not deterministic: %+v then %+v", r, again)
		}
		if r.QuestionID != q.QuestionID {
			t.Errorf("QuestionID = %q, want %q", r.QuestionID, q.QuestionID)
		}
		if !present && r.Answered {
			t.Errorf("Answered with no answer")
		}
		if r.Valid {
			if r.Reason != "" || r.OnInvalid != "" || r.Message != "" {
				t.Errorf("valid result %+v has a reason, on_invalid or message", r)
			}
			if got := Outcome([]AnswerResult{r}); got != OutcomePassed {
				t.Errorf("Outcome(valid) = %q, want %q", got, OutcomePassed)
			}
		} else {
			if !slices.Contains(answerReasons, r.Reason) || r.OnInvalid == "" || r.Message == "" {
				t.Errorf("invalid result %+v lacks a known reason, an on_invalid or a message", r)
			}
			if got := Outcome([]AnswerResult{r}); got == OutcomePassed {
				t.Errorf("Outcome(invalid) = %q", got)
			}
		}
		// The message never contains the answer. Checked when the answer
		// (a JSON string's text, else the raw bytes) has 4 characters or
		// more and one of them occurs in no fixed word of a message and
		// no configured value: otherwise an answer such as "the answer"
		// or "admin" is legitimately in the message's own words.
		s := string(answer)
		var str string
		if json.Unmarshal(answer, &str) == nil {
			s = str
		}
		if utf8.RuneCountInString(s) >= 4 && foreignRune(s, q) && strings.Contains(r.Message, s) {
			t.Errorf("Message %q contains the answer %q", r.Message, s)
		}
	})
}

// keywordFuzzModes are the match modes FuzzKeywords' mode index picks
// from.
var keywordFuzzModes = []string{"", "any", "all", "phrase", "regex", "fuzzy"}

func FuzzKeywords(f *testing.F) {
	for _, tt := range keywordTests {
		mode := uint8(max(0, slices.Index(keywordFuzzModes, tt.mode)))
		f.Add(mode, tt.caseSensitive, uint8(math.Round(tt.threshold*255)), strings.Join(tt.patterns, "\n"), tt.input)
	}
	f.Fuzz(func(t *testing.T, modeIndex uint8, caseSensitive bool, threshold uint8, patterns, input string) {
		mode := keywordFuzzModes[int(modeIndex)%len(keywordFuzzModes)]
		pats := strings.Split(patterns, "\n")
		th := float64(threshold) / 255
		k, err := CompileKeywords(pats, mode, caseSensitive, th)
		if err != nil {
			if mode == "regex" {
				return // a pattern that does not compile
			}
			t.Fatalf("CompileKeywords(%q, %q, %v, %v): %v", pats, mode, caseSensitive, th, err)
		}
		got, matched := k.Match(input)

		// matched is a subsequence of the patterns, without empty ones.
		j := 0
		for _, m := range matched {
			if m == "" {
				t.Fatalf("an empty pattern matched")
			}
			for j < len(pats) && pats[j] != m {
				j++
			}
			if j == len(pats) {
				t.Fatalf("matched %q is not a subsequence of the patterns %q", matched, pats)
			}
			j++
		}
		wantGot := len(matched) > 0
		if mode == "all" {
			wantGot = len(matched) == len(pats)
		}
		if got != wantGot {
			t.Fatalf("Match(%q) = %v with matched %q of %d patterns in mode %q", input, got, matched, len(pats), mode)
		}
		if len(input) > maxKeywordInput {
			return // the references below match the whole input
		}
		norm := func(s string) string {
			if caseSensitive {
				return s
			}
			return strings.ToLower(s)
		}
		var want []string
		switch mode {
		case "", "any", "all":
			// A keyword matches iff it is a substring, ignoring case
			// unless case-sensitive.
			for _, p := range pats {
				if p != "" && strings.Contains(norm(input), norm(p)) {
					want = append(want, p)
				}
			}
		case "phrase":
			// A phrase match is a substring match.
			anyK, err := CompileKeywords(pats, "any", caseSensitive, 0)
			if err != nil {
				t.Fatal(err)
			}
			_, anyMatched := anyK.Match(input)
			for _, m := range matched {
				if !slices.Contains(anyMatched, m) {
					t.Fatalf("phrase %q matched %q, but not as a substring", m, input)
				}
			}
			return
		case "fuzzy":
			if len(input) > 1024 {
				return // the reference is quadratic
			}
			if th == 0 {
				th = DefaultFuzzyThreshold
			}
			inWords := strings.FieldsFunc(norm(input), referenceNotWord)
			for _, p := range pats {
				if referenceFuzzy(inWords, strings.FieldsFunc(norm(p), referenceNotWord), th) {
					want = append(want, p)
				}
			}
		default:
			return
		}
		if !slices.Equal(matched, want) {
			t.Fatalf("Match(%q) in mode %q (case-sensitive %v, threshold %v) matched %q, want %q", input, mode, caseSensitive, th, matched, want)
		}
	})
}

func referenceNotWord(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }

// referenceFuzzy is fuzzy matching written plainly: the similarity of
// every window, by a full Levenshtein table, against the threshold.
func referenceFuzzy(input, key []string, threshold float64) bool {
	if len(key) == 0 {
		return false
	}
	b := []rune(strings.Join(key, " "))
	for i := 0; i+len(key) <= len(input); i++ {
		a := []rune(strings.Join(input[i:i+len(key)], " "))
		d := make([][]int, len(a)+1)
		for x := range d {
			d[x] = make([]int, len(b)+1)
			d[x][0] = x
		}
		for y := range d[0] {
			d[0][y] = y
		}
		for x := 1; x <= len(a); x++ {
			for y := 1; y <= len(b); y++ {
				sub := d[x-1][y-1]
				if a[x-1] != b[y-1] {
					sub++
				}
				d[x][y] = min(d[x-1][y]+1, d[x][y-1]+1, sub)
			}
		}
		sim := 1 - float64(d[len(a)][len(b)])/float64(max(len(a), len(b)))
		if sim >= threshold-1e-9 {
			return true
		}
	}
	return false
}
