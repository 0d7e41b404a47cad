package steward

// Keyword matching of keyword triggers (seed 001, "Keyword Matching"):
// CompileKeywords compiles a trigger's patterns once for its match mode
// (any, all, phrase, regex, fuzzy); Match tells whether an input (a
// goal, a hint, a prompt) triggers it. Matching is pure and bounded: an
// input is matched on its first 64 KiB only.

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// DefaultFuzzyThreshold is fuzzy matching's least similarity when a
// trigger names none.
const DefaultFuzzyThreshold = 0.8

// maxKeywordInput bounds the work of Match: an input longer than this is
// matched on its first maxKeywordInput bytes (cut back to a character
// boundary) only.
const maxKeywordInput = 64 << 10

// Keyword match modes (atlas.MatchModes); "" is any.
const (
	matchAny    = "any"    // a keyword occurs as a substring; any one triggers
	matchAll    = "all"    // as any, but every keyword must occur
	matchPhrase = "phrase" // a keyword occurs between word boundaries
	matchRegex  = "regex"  // a pattern is an RE2 regular expression
	matchFuzzy  = "fuzzy"  // a keyword's words are close to consecutive words of the input
)

// fuzzyTolerance absorbs floating-point rounding when a similarity is
// compared with the threshold: 1 - 1/5 is at least 0.8.
const fuzzyTolerance = 1e-9

// Keywords is a compiled keyword matcher (seed 001 "Keyword Matching").
// It is immutable and safe for concurrent use.
type Keywords struct {
	mode          string
	caseSensitive bool
	threshold     float64          // fuzzy's least similarity
	patterns      []string         // as configured: what Match reports
	keys          []string         // patterns lowercased unless caseSensitive
	regexps       []*regexp.Regexp // regex: one per pattern, nil for an empty one
	fuzzy         [][]rune         // fuzzy: a key's words joined by single spaces
	fuzzyWords    []int            // fuzzy: how many words the key has; 0 never matches
}

// CompileKeywords compiles patterns for mode "" (= any), any, all,
// phrase, regex, fuzzy. threshold is fuzzy's least similarity (0 ->
// DefaultFuzzyThreshold); it must be in (0, 1]. Unless caseSensitive,
// input and keywords are compared lowercased, and a regex pattern is
// compiled with (?i). It fails on an unknown mode, a threshold out of
// range, or a regex pattern that does not compile.
func CompileKeywords(patterns []string, mode string, caseSensitive bool, threshold float64) (*Keywords, error) {
	if mode == "" {
		mode = matchAny
	}
	switch mode {
	case matchAny, matchAll, matchPhrase, matchRegex, matchFuzzy:
	default:
		return nil, fmt.Errorf("steward: unknown keyword match mode %q", mode)
	}
	if threshold == 0 {
		threshold = DefaultFuzzyThreshold
	}
	if !(threshold > 0 && threshold <= 1) {
		return nil, fmt.Errorf("steward: fuzzy threshold %v is outside (0, 1]", threshold)
	}
	k := &Keywords{mode: mode, caseSensitive: caseSensitive, threshold: threshold, patterns: slices.Clone(patterns),
		keys: make([]string, len(patterns))}
	for i, p := range patterns {
		k.keys[i] = k.normalize(p)
	}
	switch mode {
	case matchRegex:
		k.regexps = make([]*regexp.Regexp, len(patterns))
		for i, p := range patterns {
			if p == "" {
				continue
			}
			expr := p
			if !caseSensitive {
				expr = "(?i)" + p
			}
			re, err := regexp.Compile(expr)
			if err != nil {
				return nil, fmt.Errorf("compile keyword pattern %d: %w", i, err)
			}
			k.regexps[i] = re
		}
	case matchFuzzy:
		k.fuzzy = make([][]rune, len(patterns))
		k.fuzzyWords = make([]int, len(patterns))
		for i, key := range k.keys {
			words := strings.FieldsFunc(key, notWordChar)
			k.fuzzy[i] = []rune(strings.Join(words, " "))
			k.fuzzyWords[i] = len(words)
		}
	}
	return k, nil
}

// normalize lowercases s unless the matcher is case-sensitive.
func (k *Keywords) normalize(s string) string {
	if k.caseSensitive {
		return s
	}
	return strings.ToLower(s)
}

// Match reports whether input triggers and which patterns matched (in
// pattern order). In mode all, matched lists the patterns that matched
// even when not all did (and triggered is false). An empty pattern never
// matches, so in mode all it keeps the trigger from firing; no patterns
// never trigger. Only the first 64 KiB of input are matched. A regex
// pattern is matched against the input as given ((?i) makes it
// case-insensitive); the other modes compare the normalised input.
func (k *Keywords) Match(input string) (triggered bool, matched []string) {
	input = truncateInput(input)
	norm := input
	if k.mode != matchRegex {
		norm = k.normalize(input)
	}
	var words *inputWords // fuzzy: norm's words, split once
	for i, p := range k.patterns {
		var ok bool
		switch k.mode {
		case matchAny, matchAll:
			ok = k.keys[i] != "" && strings.Contains(norm, k.keys[i])
		case matchPhrase:
			ok = k.keys[i] != "" && containsPhrase(norm, k.keys[i])
		case matchRegex:
			ok = k.regexps[i] != nil && k.regexps[i].MatchString(input)
		case matchFuzzy:
			if k.fuzzyWords[i] == 0 {
				break
			}
			if words == nil {
				words = splitWords(norm)
			}
			ok = words.fuzzyMatch(k.fuzzy[i], k.fuzzyWords[i], k.threshold)
		}
		if ok {
			matched = append(matched, p)
		}
	}
	if k.mode == matchAll {
		return len(k.patterns) > 0 && len(matched) == len(k.patterns), matched
	}
	return len(matched) > 0, matched
}

// truncateInput returns s cut to at most maxKeywordInput bytes, at a
// character boundary when s is valid UTF-8.
func truncateInput(s string) string {
	if len(s) <= maxKeywordInput {
		return s
	}
	i := maxKeywordInput // s[i] is the first byte cut off
	for j := 0; j < utf8.UTFMax && i > 0 && !utf8.RuneStart(s[i]); j++ {
		i--
	}
	return s[:i]
}

// isWordChar reports whether r is a letter, a digit or '_': what \b
// separates from the rest.
func isWordChar(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

// notWordChar reports whether r separates fuzzy matching's words (runs of
// letters and digits).
func notWordChar(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }

// containsPhrase reports whether key occurs in s with a word boundary on
// both sides: the characters just before and after it are not letters,
// digits or '_', or are s's ends.
func containsPhrase(s, key string) bool {
	for off := 0; off+len(key) <= len(s); {
		i := strings.Index(s[off:], key)
		if i < 0 {
			return false
		}
		i += off
		end := i + len(key)
		before, _ := utf8.DecodeLastRuneInString(s[:i])
		after, _ := utf8.DecodeRuneInString(s[end:])
		if (i == 0 || !isWordChar(before)) && (end == len(s) || !isWordChar(after)) {
			return true
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		off = i + size
	}
	return false
}

// inputWords is an input split into words for fuzzy matching, with the
// scratch space the windows reuse.
type inputWords struct {
	words  [][]rune
	prefix []int // prefix[i]: the runes of words[:i]
	buf    []rune
	prev   []int
	cur    []int
}

func splitWords(s string) *inputWords {
	w := &inputWords{prefix: []int{0}}
	for _, f := range strings.FieldsFunc(s, notWordChar) {
		r := []rune(f)
		w.words = append(w.words, r)
		w.prefix = append(w.prefix, w.prefix[len(w.prefix)-1]+len(r))
	}
	return w
}

// fuzzyMatch reports whether some window of n consecutive words, joined
// by single spaces, has a similarity to key of at least threshold:
// 1 - levenshtein(window, key) / the longer one's length in runes.
func (w *inputWords) fuzzyMatch(key []rune, n int, threshold float64) bool {
	for i := 0; i+n <= len(w.words); i++ {
		wl := w.prefix[i+n] - w.prefix[i] + n - 1
		longer := max(wl, len(key))
		// similarity >= threshold  <=>  distance <= longer * (1 - threshold)
		limit := int(math.Floor(float64(longer)*(1-threshold) + fuzzyTolerance))
		if d := wl - len(key); d > limit || -d > limit {
			continue // the distance is at least the length difference
		}
		w.buf = w.buf[:0]
		for j := i; j < i+n; j++ {
			if j > i {
				w.buf = append(w.buf, ' ')
			}
			w.buf = append(w.buf, w.words[j]...)
		}
		if w.levenshtein(w.buf, key, limit) <= limit {
			return true
		}
	}
	return false
}

// levenshtein returns the edit distance of a and b over runes, or
// limit+1 once it is sure to exceed limit. Two rows of the dynamic
// program are kept.
func (w *inputWords) levenshtein(a, b []rune, limit int) int {
	if cap(w.prev) < len(b)+1 {
		w.prev = make([]int, len(b)+1)
		w.cur = make([]int, len(b)+1)
	}
	prev, cur := w.prev[:len(b)+1], w.cur[:len(b)+1]
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			rowMin = min(rowMin, cur[j])
		}
		if rowMin > limit {
			return limit + 1
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
