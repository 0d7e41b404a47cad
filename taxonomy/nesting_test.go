package taxonomy

import (
	"strings"
	"testing"
)

func TestNesting(t *testing.T) {
	tests := []struct {
		in   string
		want int
	}{
		{``, 0},
		{`"x"`, 0},
		{`{}`, 1},
		{`[]`, 1},
		{`[[]]`, 2},
		{`{"a":{"b":[1,{}]}}`, 4},
		{`{"a":"{[{[{["}`, 1},
		{`{"a":"\"{{{"}`, 1},
		{`{"a":"\\"}`, 1},
		{`[[[`, 3}, // not JSON: Nesting bounds, it does not validate
		{`]]][`, 0},
		{strings.Repeat("[", MaxNesting+1) + strings.Repeat("]", MaxNesting+1), MaxNesting + 1},
	}
	for _, tt := range tests {
		if got := Nesting([]byte(tt.in)); got != tt.want {
			t.Errorf("Nesting(%.40q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}
