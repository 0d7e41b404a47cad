package canon

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// TestPlainWord holds plainWord to a byte at a time: every byte value at
// every position of a word otherwise plain, every pair of bytes that could
// borrow from each other, and words of several bytes that are not plain.
func TestPlainWord(t *testing.T) {
	for pos := range 8 {
		for c := range 256 {
			b := []byte("abcdefgh")
			b[pos] = byte(c)
			if got, want := plainWord(binary.LittleEndian.Uint64(b)), plainByte(byte(c)); got != want {
				t.Errorf("plainWord(%q) = %v, want %v", b, got, want)
			}
		}
	}
	for c := range 256 {
		for d := range 256 {
			b := []byte{' ', '~', byte(c), byte(d), ' ', '~', byte(d), byte(c)}
			want := plainByte(byte(c)) && plainByte(byte(d))
			if got := plainWord(binary.LittleEndian.Uint64(b)); got != want {
				t.Errorf("plainWord(%q) = %v, want %v", b, got, want)
			}
		}
	}
	for _, s := range []string{"\x00\x00\x00\x00\x00\x00\x00\x00", "\"\\abcdef", "ab\x1f\xffcdef", "abcdefg\x7f", "\xff\xff\xff\xff\xff\xff\xff\xff"} {
		if plainWord(binary.LittleEndian.Uint64([]byte(s))) {
			t.Errorf("plainWord(%q) = true", s)
		}
	}
}

// FuzzPlainRun holds PlainRun to a byte at a time, on strings and bytes.
func FuzzPlainRun(f *testing.F) {
	for _, s := range []string{"", "plain text that runs past a word", "quote\" here", "back\\slash", "tab\tx", "\x7fdel", "été", "0123456789abcdef\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := 0
		for want < len(s) && plainByte(s[want]) {
			want++
		}
		if got := PlainRunString(s); got != want {
			t.Fatalf("PlainRun(%q) = %d, want %d", s, got, want)
		}
		if got := PlainRun([]byte(s)); got != want {
			t.Fatalf("PlainRun([]byte(%q)) = %d, want %d", s, got, want)
		}
	})
}

func BenchmarkPlainRun(b *testing.B) {
	long := bytes.Repeat([]byte("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 "), 17)[:1024]
	for _, c := range []struct {
		name string
		s    []byte
	}{{"1KiB", append(long, '"')}, {"id", []byte(`019a4b2c-7d3e-7f00-8000-0123456789ab"`)}, {"word", []byte(`created",`)}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.s)))
			for b.Loop() {
				if PlainRun(c.s) != len(c.s)-1 && c.name != "word" {
					b.Fatal("not plain")
				}
			}
		})
	}
}
