package seglog

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/s2"
)

// FuzzDecodePtr: a pointer decodes only from 20 bytes or more naming a file
// and a record within a block's limit, and encodes back to its 20 bytes;
// anything else is ErrPointer. The same for an end.
func FuzzDecodePtr(f *testing.F) {
	f.Add(Ptr{File: 1, Off: 42, Rec: 7, Len: 9}.Append(nil))
	f.Add(appendPos(nil, Pos{File: 3, Off: 1 << 20}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := DecodePtr(b)
		if err != nil {
			if !errors.Is(err, ErrPointer) {
				t.Fatalf("untyped error %v", err)
			}
		} else if !bytes.Equal(p.Append(nil), b[:PtrSize]) || p.File == 0 {
			t.Fatalf("%x decodes to %+v", b, p)
		}
		e, err := DecodePos(b)
		if err != nil {
			if !errors.Is(err, ErrPointer) {
				t.Fatalf("untyped error %v", err)
			}
		} else if !bytes.Equal(appendPos(nil, e), b) {
			t.Fatalf("%x decodes to %+v", b, e)
		}
	})
}

// FuzzSegmentFile: whatever a segment file holds, Verify, a read of its
// first block and of its redo record return what it holds, a *DamageError
// or an error wrapping ErrRedo, never a panic; a file of valid blocks
// verifies.
func FuzzSegmentFile(f *testing.F) {
	dir := f.TempDir()
	l, _, err := Open(dir, Pos{}, Options{})
	if err != nil {
		f.Fatal(err)
	}
	defer l.Close()
	enc, err := l.zstdEncoder()
	if err != nil {
		f.Fatal(err)
	}
	vals := enc.EncodeAll([]byte(`{"a":1}{"b":2}`), nil)
	body := append(binary.BigEndian.AppendUint32(nil, uint32(len(vals))), vals...)
	body = append(body, s2.Encode(nil, []byte{opDelete, 0, 1, 'k', 0})...)
	good := append(appendHeader(nil, body, 14, false), body...)
	f.Add(good)
	raw := []byte(`{"a":1}{"b":2}`)
	vals3 := s2.Encode(nil, raw)
	body3 := append(binary.BigEndian.AppendUint32(nil, uint32(len(vals3))), vals3...)
	f.Add(append(appendHeader(nil, body3, len(raw), true), body3...))
	f.Add(append(bytes.Clone(good), good...))
	f.Add(good[:len(good)-1])
	f.Add([]byte("WSB1"))
	f.Fuzz(func(t *testing.T, data []byte) {
		d := t.TempDir()
		if err := os.WriteFile(filepath.Join(d, fileName(1)), data, 0o600); err != nil {
			t.Fatal(err)
		}
		r, _, err := Open(d, Pos{File: 1, Off: uint64(len(data))}, Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		var de *DamageError
		st, err := r.Verify(context.Background(), Pos{File: 1, Off: uint64(len(data))})
		if err != nil && !errors.As(err, &de) {
			t.Fatalf("untyped error %v", err)
		}
		if err == nil && st.Bytes != int64(len(data)) {
			t.Fatalf("verified %d of %d bytes", st.Bytes, len(data))
		}
		_, err = r.Get(Ptr{File: 1, Off: 0, Rec: 0, Len: 1})
		if err != nil && !errors.As(err, &de) {
			t.Fatalf("untyped read error %v", err)
		}
		// The redo record, as Replay reads it.
		f, err := os.Open(filepath.Join(d, fileName(1)))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if h, body, _, err := readBody(f, 0); err == nil {
			redo, err := r.decodeRedoFrame(h, body)
			if err == nil {
				err = decodeRedo(redo, func(op, meta byte, key, value []byte) error { return nil })
			}
			if err != nil && !errors.Is(err, ErrRedo) {
				t.Fatalf("untyped redo error %v", err)
			}
		} else if !errors.As(err, &de) {
			t.Fatalf("untyped read error %v", err)
		}
	})
}

// FuzzRedoRecord: a block's redo record decodes to writes that encode back
// to the same bytes, or is an error wrapping ErrRedo; never a panic.
func FuzzRedoRecord(f *testing.F) {
	l := &Log{}
	l.record(opSet, Meta, []byte("t/g/1"), Ptr{File: 1, Rec: 3, Len: 9}.Append(nil))
	l.record(opDelete, 0, []byte("e/o/x"), nil)
	l.record(opSet, 0, []byte("w/a"), nil)
	f.Add(bytes.Clone(l.ops))
	f.Add(l.ops[1:])
	f.Add([]byte{})
	f.Add([]byte{opSet, 0, 0x80, 0, 0, 0, 4})
	f.Fuzz(func(t *testing.T, redo []byte) {
		var again []byte
		err := decodeRedo(redo, func(op, meta byte, key, value []byte) error {
			again = appendWrite(again, op, meta, key, value)
			return nil
		})
		if err != nil {
			if !errors.Is(err, ErrRedo) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if !bytes.Equal(again, redo) {
			t.Fatalf("%x decodes and encodes to %x", redo, again)
		}
	})
}
