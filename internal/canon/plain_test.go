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

// TestPlainRunBlocks holds PlainRun to a byte at a time where it tests
// blocks of 32 bytes (plainBlocks, with AVX2): each kind of byte at each
// position of strings up to four blocks and some long.
func TestPlainRunBlocks(t *testing.T) {
	base := bytes.Repeat([]byte("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 ~!"), 3)
	for n := range 131 {
		for p := range n {
			for _, c := range []byte{0x00, 0x1f, 0x20, '"', '\\', 0x7e, 0x7f, 0x80, 0xc3, 0xff} {
				s := bytes.Clone(base[:n])
				s[p] = c
				want := 0
				for want < len(s) && plainByte(s[want]) {
					want++
				}
				if got := PlainRun(s); got != want {
					t.Fatalf("PlainRun(%q) = %d, want %d", s, got, want)
				}
			}
		}
	}
	if !blocks {
		t.Log("plainBlocks does not run here (no AVX2): the words were tested")
		return
	}
	// plainBlocks itself stops at the first byte not plain, not before
	// (PlainRun would still be right, from the words, but slower).
	for n := range 131 {
		if got, want := plainBlocks(base[:n]), n&^31; got != want {
			t.Fatalf("plainBlocks of %d plain bytes = %d, want %d", n, got, want)
		}
		for p := range n &^ 31 {
			s := bytes.Clone(base[:n])
			s[p] = '"'
			if got := plainBlocks(s); got != p {
				t.Fatalf("plainBlocks(%q) = %d, want %d", s, got, p)
			}
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
