package seglog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

const (
	// Meta is the Badger user meta of a value that is a Ptr.
	Meta byte = 0x01
	// PtrSize is the length of an encoded Ptr.
	PtrSize = 20
	// Dir is the segments' directory inside Badger's.
	Dir = "seg"
	// DefaultMaxFile is the size past which a new segment file starts.
	DefaultMaxFile = 256 << 20

	headerSize = 16
	// maxBlock bounds a block's raw and compressed lengths; a batch is far
	// smaller (Badger's transaction limit is a few MiB).
	maxBlock = 64 << 20
)

// KeyEnd is the Badger key of the segments' end (a Pos), set in every
// transaction that points into a new block.
var KeyEnd = []byte("s/e")

var (
	// magic starts a block of format 2 (values, then the redo record),
	// which earlier builds wrote for blocks of 16 KiB of values or more;
	// magic3 one of format 3, format 2 with its values compressed with S2,
	// which Seal writes (Log.zstdFrom); magic1 one of format 1 (values
	// only), which earlier builds wrote.
	magic  = [4]byte{'W', 'S', 'B', '2'}
	magic3 = [4]byte{'W', 'S', 'B', '3'}
	magic1 = [4]byte{'W', 'S', 'B', '1'}
	crcTab = crc32.MakeTable(crc32.Castagnoli)
)

var (
	// ErrDamaged is wrapped by every *DamageError.
	ErrDamaged = errors.New("segment damaged")
	// ErrNoLog is returned when a value is a pointer and no segments are
	// open (a database in memory, or read without its directory).
	ErrNoLog = errors.New("value is a segment pointer, but no segments are open")
	// ErrPointer is returned for a pointer or end that does not decode.
	ErrPointer = errors.New("malformed segment pointer")
)

// DamageError says what is wrong with a segment file, and where.
type DamageError struct {
	File   string // the file's path
	Off    uint64 // the block's offset
	Detail string
}

func (e *DamageError) Error() string {
	return fmt.Sprintf("%v: %s at offset %d: %s", ErrDamaged, e.File, e.Off, e.Detail)
}

func (e *DamageError) Unwrap() error { return ErrDamaged }

// Pos is a place in the segments: a file's number and an offset in it.
// The zero Pos is before the first file.
type Pos struct {
	File uint32
	Off  uint64
}

// appendPos encodes p in 12 bytes.
func appendPos(b []byte, p Pos) []byte {
	b = binary.BigEndian.AppendUint32(b, p.File)
	return binary.BigEndian.AppendUint64(b, p.Off)
}

// DecodePos decodes the value of KeyEnd.
func DecodePos(b []byte) (Pos, error) {
	if len(b) != 12 {
		return Pos{}, fmt.Errorf("%w: end of %d bytes, want 12", ErrPointer, len(b))
	}
	p := Pos{File: binary.BigEndian.Uint32(b), Off: binary.BigEndian.Uint64(b[4:])}
	if p.File == 0 && p.Off != 0 {
		return Pos{}, fmt.Errorf("%w: offset %d in file 0", ErrPointer, p.Off)
	}
	return p, nil
}

// Ptr is where a value is: the block at Off in file File, bytes
// [Rec, Rec+Len) of its raw form.
type Ptr struct {
	File     uint32
	Off      uint64
	Rec, Len uint32
}

// Append appends p's 20-byte encoding to b.
func (p Ptr) Append(b []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, p.File)
	b = binary.BigEndian.AppendUint64(b, p.Off)
	b = binary.BigEndian.AppendUint32(b, p.Rec)
	return binary.BigEndian.AppendUint32(b, p.Len)
}

// DecodePtr decodes a pointer value: its first PtrSize bytes (the rest is
// the owner's extra, see SetExtra).
func DecodePtr(b []byte) (Ptr, error) {
	if len(b) < PtrSize {
		return Ptr{}, fmt.Errorf("%w: %d bytes, want %d or more", ErrPointer, len(b), PtrSize)
	}
	p := Ptr{
		File: binary.BigEndian.Uint32(b),
		Off:  binary.BigEndian.Uint64(b[4:]),
		Rec:  binary.BigEndian.Uint32(b[12:]),
		Len:  binary.BigEndian.Uint32(b[16:]),
	}
	if p.File == 0 || uint64(p.Rec)+uint64(p.Len) > maxBlock {
		return Ptr{}, fmt.Errorf("%w: file %d, record [%d, +%d)", ErrPointer, p.File, p.Rec, p.Len)
	}
	return p, nil
}

// header is a block's header, parsed.
type header struct {
	format     int // 1, 2 or 3
	clen, rlen uint32
	crc        uint32
}

// appendHeader appends the header of a block of format 2, or 3 with s2,
// whose body is body and raw length rlen.
func appendHeader(b []byte, body []byte, rlen int, s2 bool) []byte {
	if s2 {
		b = append(b, magic3[:]...)
	} else {
		b = append(b, magic[:]...)
	}
	var lens [8]byte
	binary.BigEndian.PutUint32(lens[:], uint32(len(body)))
	binary.BigEndian.PutUint32(lens[4:], uint32(rlen))
	b = append(b, lens[:]...)
	crc := crc32.Update(crc32.Checksum(lens[:], crcTab), crcTab, body)
	return binary.BigEndian.AppendUint32(b, crc)
}

// parseHeader parses the 16 bytes at the start of b.
func parseHeader(b []byte) (header, string) {
	if len(b) < headerSize {
		return header{}, fmt.Sprintf("torn header (%d of %d bytes)", len(b), headerSize)
	}
	h := header{format: 2}
	switch [4]byte(b[:4]) {
	case magic:
	case magic3:
		h.format = 3
	case magic1:
		h.format = 1
	default:
		return header{}, fmt.Sprintf("no block here (magic %x)", b[:4])
	}
	h = header{format: h.format,
		clen: binary.BigEndian.Uint32(b[4:]),
		rlen: binary.BigEndian.Uint32(b[8:]),
		crc:  binary.BigEndian.Uint32(b[12:]),
	}
	if h.clen > maxBlock || h.rlen > maxBlock {
		return header{}, fmt.Sprintf("block lengths %d, %d out of range", h.clen, h.rlen)
	}
	return h, ""
}

// checkBody reports whether body is the block h describes.
func (h header) checkBody(body []byte) string {
	if uint32(len(body)) != h.clen {
		return fmt.Sprintf("torn block (%d of %d bytes)", len(body), h.clen)
	}
	var lens [8]byte
	binary.BigEndian.PutUint32(lens[:], h.clen)
	binary.BigEndian.PutUint32(lens[4:], h.rlen)
	if crc32.Update(crc32.Checksum(lens[:], crcTab), crcTab, body) != h.crc {
		return "checksum mismatch"
	}
	return ""
}
