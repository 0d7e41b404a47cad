package steward

// Tests of keyword matching (keyword.go): one table over the match
// modes, which FuzzKeywords also seeds from.

import (
	"slices"
	"strings"
	"testing"
)

// keywordTest is one input against one compiled trigger.
type keywordTest struct {
	name          string
	patterns      []string
	mode          string
	caseSensitive bool
	threshold     float64
	input         string
	want          bool
	wantMatched   []string
}

var keywordTests = []keywordTest{
	// any
	{name: "any", patterns: []string{"refund", "cancel"}, mode: "any", input: "I want a Refund", want: true, wantMatched: []string{"refund"}},
	{name: "default mode is any", patterns: []string{"refund", "cancel"}, input: "cancel it", want: true, wantMatched: []string{"cancel"}},
	{name: "any none", patterns: []string{"refund", "cancel"}, mode: "any", input: "hello", want: false},
	{name: "any substring", patterns: []string{"refund"}, mode: "any", input: "refunds please", want: true, wantMatched: []string{"refund"}},
	{name: "any keyword upper case", patterns: []string{"REFUND"}, mode: "any", input: "a refund", want: true, wantMatched: []string{"REFUND"}},
	{name: "any case-sensitive refuses", patterns: []string{"Refund"}, mode: "any", caseSensitive: true, input: "refund please", want: false},
	{name: "any case-sensitive accepts", patterns: []string{"Refund"}, mode: "any", caseSensitive: true, input: "Refund please", want: true, wantMatched: []string{"Refund"}},
	{name: "any matched in pattern order", patterns: []string{"b", "a"}, mode: "any", input: "a b", want: true, wantMatched: []string{"b", "a"}},
	{name: "empty pattern never matches", patterns: []string{""}, mode: "any", input: "anything", want: false},
	{name: "no patterns", mode: "any", input: "anything", want: false},

	// all
	{name: "all", patterns: []string{"refund", "order"}, mode: "all", input: "refund my ORDER", want: true, wantMatched: []string{"refund", "order"}},
	{name: "all needs every keyword", patterns: []string{"refund", "order"}, mode: "all", input: "refund please", want: false, wantMatched: []string{"refund"}},
	{name: "all with an empty pattern", patterns: []string{"refund", ""}, mode: "all", input: "refund", want: false, wantMatched: []string{"refund"}},
	{name: "all no patterns", mode: "all", input: "anything", want: false},

	// phrase
	{name: "phrase not inside a word", patterns: []string{"refund"}, mode: "phrase", input: "refunds please", want: false},
	{name: "phrase word", patterns: []string{"refund"}, mode: "phrase", input: "I want a Refund.", want: true, wantMatched: []string{"refund"}},
	{name: "phrase whole input", patterns: []string{"refund"}, mode: "phrase", input: "refund", want: true, wantMatched: []string{"refund"}},
	{name: "phrase underscore is a word character", patterns: []string{"refund"}, mode: "phrase", input: "pre_refund", want: false},
	{name: "phrase digit is a word character", patterns: []string{"refund"}, mode: "phrase", input: "refund2", want: false},
	{name: "phrase hyphen is a boundary", patterns: []string{"refund"}, mode: "phrase", input: "a refund-request", want: true, wantMatched: []string{"refund"}},
	{name: "phrase later occurrence", patterns: []string{"refund"}, mode: "phrase", input: "refunds, then a refund", want: true, wantMatched: []string{"refund"}},
	{name: "phrase of words", patterns: []string{"delete account"}, mode: "phrase", input: "please Delete Account now", want: true, wantMatched: []string{"delete account"}},
	{name: "phrase of words not inside a word", patterns: []string{"delete account"}, mode: "phrase", input: "delete accounts", want: false},
	{name: "phrase letter boundary beyond ASCII", patterns: []string{"caf"}, mode: "phrase", input: "un café", want: false},
	{name: "phrase non-ASCII keyword", patterns: []string{"café"}, mode: "phrase", input: "un Café, merci", want: true, wantMatched: []string{"café"}},
	{name: "phrase case-sensitive", patterns: []string{"Refund"}, mode: "phrase", caseSensitive: true, input: "a refund", want: false},

	// regex
	{name: "regex", patterns: []string{`^del(ete)?\s`}, mode: "regex", input: "DELETE everything", want: true, wantMatched: []string{`^del(ete)?\s`}},
	{name: "regex case-sensitive", patterns: []string{`^del(ete)?\s`}, mode: "regex", caseSensitive: true, input: "DELETE everything", want: false},
	{name: "regex no match", patterns: []string{`\d{4}`}, mode: "regex", input: "code 123", want: false},
	{name: "regex second pattern", patterns: []string{`\d{4}`, `ssn`}, mode: "regex", input: "my SSN", want: true, wantMatched: []string{"ssn"}},
	{name: "regex empty pattern never matches", patterns: []string{""}, mode: "regex", input: "anything", want: false},

	// fuzzy
	{name: "fuzzy typo", patterns: []string{"refund"}, mode: "fuzzy", threshold: 0.8, input: "I want a refundd now", want: true, wantMatched: []string{"refund"}},
	{name: "fuzzy default threshold", patterns: []string{"refund"}, mode: "fuzzy", input: "I want a refundd now", want: true, wantMatched: []string{"refund"}},
	{name: "fuzzy transposition below 0.8", patterns: []string{"refund"}, mode: "fuzzy", threshold: 0.8, input: "I want a refnud", want: false},
	{name: "fuzzy transposition at 0.6", patterns: []string{"refund"}, mode: "fuzzy", threshold: 0.6, input: "I want a refnud", want: true, wantMatched: []string{"refund"}},
	{name: "fuzzy exactly at the threshold", patterns: []string{"abcde"}, mode: "fuzzy", threshold: 0.8, input: "abcdx", want: true, wantMatched: []string{"abcde"}},
	{name: "fuzzy words not substrings", patterns: []string{"refund"}, mode: "fuzzy", input: "refundable", want: false},
	{name: "fuzzy multi-word keyword", patterns: []string{"delete account"}, mode: "fuzzy", input: "please delet  acount, now", want: true, wantMatched: []string{"delete account"}},
	{name: "fuzzy multi-word needs consecutive words", patterns: []string{"delete account"}, mode: "fuzzy", input: "delete my whole account", want: false},
	{name: "fuzzy threshold 1 exact words", patterns: []string{"refund"}, mode: "fuzzy", threshold: 1, input: "a Refund!", want: true, wantMatched: []string{"refund"}},
	{name: "fuzzy threshold 1 refuses a typo", patterns: []string{"refund"}, mode: "fuzzy", threshold: 1, input: "a refundd", want: false},
	{name: "fuzzy case-sensitive", patterns: []string{"REFUND"}, mode: "fuzzy", caseSensitive: true, input: "Refund", want: false},
	{name: "fuzzy keyword without words", patterns: []string{"!!"}, mode: "fuzzy", input: "!! hello", want: false},
}

func TestKeywords(t *testing.T) {
	for _, tt := range keywordTests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := CompileKeywords(tt.patterns, tt.mode, tt.caseSensitive, tt.threshold)
			if err != nil {
				t.Fatalf("CompileKeywords: %v", err)
			}
			got, matched := k.Match(tt.input)
			if got != tt.want || !slices.Equal(matched, tt.wantMatched) {
				t.Errorf("Match(%q) = %v, %q, want %v, %q", tt.input, got, matched, tt.want, tt.wantMatched)
			}
		})
	}
}

func TestCompileKeywordsErrors(t *testing.T) {
	tests := []struct {
		name      string
		patterns  []string
		mode      string
		threshold float64
	}{
		{"unknown mode", []string{"a"}, "exact", 0},
		{"bad regex", []string{"ok", "("}, "regex", 0},
		{"threshold above 1", []string{"a"}, "fuzzy", 1.5},
		{"negative threshold", []string{"a"}, "fuzzy", -0.1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := CompileKeywords(tt.patterns, tt.mode, false, tt.threshold); err == nil {
				t.Errorf("CompileKeywords(%q, %q, %v) succeeded, want an error", tt.patterns, tt.mode, tt.threshold)
			}
		})
	}
}

// TestKeywordsInputBound checks that only the first 64 KiB of an input
// are matched, cut at a character boundary.
func TestKeywordsInputBound(t *testing.T) {
	k, err := CompileKeywords([]string{"refund", "é"}, "any", false, 0)
	if err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat("a", maxKeywordInput-len("refund"))
	if got, _ := k.Match(pad + "refund"); !got {
		t.Errorf("Match(pad + refund within the bound) = false, want true")
	}
	if got, _ := k.Match(pad + "xrefund"); got {
		t.Errorf("Match(pad + refund past the bound) = true, want false")
	}
	// "é" is two bytes straddling the bound: it is not matched.
	edge := strings.Repeat("a", maxKeywordInput-1) + "é"
	if got, _ := k.Match(edge); got {
		t.Errorf("Match(é straddling the bound) = true, want false")
	}
	if got, _ := k.Match(strings.Repeat("a", maxKeywordInput-2) + "é" + "bb"); !got {
		t.Errorf("Match(é ending at the bound) = false, want true")
	}
}
