package seglog

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/dgraph-io/badger/v4"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
)

// The read side: values through pointers, the blocks they are in (from the
// block being built, the cache or the file), and Verify.

// Value calls fn with item's value, read from the segments if it is a
// pointer. As with badger.Item.Value, fn must not keep or change it.
func (l *Log) Value(item *badger.Item, fn func([]byte) error) error {
	p, ok, err := PointerOf(item)
	switch {
	case err != nil:
		return err
	case !ok:
		return item.Value(fn)
	}
	v, err := l.Get(p)
	if err != nil {
		return fmt.Errorf("key %q: %w", item.Key(), err)
	}
	return fn(v)
}

// PointerOf returns the pointer item's value holds, and ok false when it
// holds a value of its own (no Meta).
func PointerOf(item *badger.Item) (p Ptr, ok bool, err error) {
	if item.UserMeta()&Meta == 0 {
		return Ptr{}, false, nil
	}
	if err := item.Value(func(v []byte) (err error) { p, err = DecodePtr(v); return err }); err != nil {
		return Ptr{}, true, fmt.Errorf("key %q: %w", item.Key(), err)
	}
	return p, true, nil
}

// ValueCopy returns a copy of item's value, read from the segments if it
// is a pointer.
func (l *Log) ValueCopy(item *badger.Item) ([]byte, error) {
	if item.UserMeta()&Meta == 0 {
		return item.ValueCopy(nil)
	}
	var out []byte
	err := l.Value(item, func(v []byte) error { out = bytes.Clone(v); return nil })
	return out, err
}

// Get returns the value p points at. It is shared: the caller must not
// change it.
func (l *Log) Get(p Ptr) ([]byte, error) {
	if l == nil {
		return nil, ErrNoLog
	}
	if v, ok := l.pending(p); ok {
		return v, nil
	}
	raw, err := l.block(Pos{File: p.File, Off: p.Off})
	if err != nil {
		return nil, err
	}
	if uint64(p.Rec)+uint64(p.Len) > uint64(len(raw)) {
		return nil, &DamageError{File: filepath.Join(l.dir, fileName(p.File)), Off: p.Off,
			Detail: fmt.Sprintf("a pointer to bytes [%d, +%d) of a block of %d", p.Rec, p.Len, len(raw))}
	}
	return raw[p.Rec : p.Rec+p.Len : p.Rec+p.Len], nil
}

// Cached returns the value p points at when its block is in memory (being
// built, sealed and not yet written, or in the cache of blocks read), and
// false, without reading the files, when it is not. It is shared: the
// caller must not change it.
func (l *Log) Cached(p Ptr) ([]byte, bool) {
	if l == nil {
		return nil, false
	}
	if v, ok := l.pending(p); ok {
		return v, true
	}
	l.mu.Lock()
	raw := l.inMemory(Pos{File: p.File, Off: p.Off})
	l.mu.Unlock()
	if raw == nil || uint64(p.Rec)+uint64(p.Len) > uint64(len(raw)) {
		return nil, false
	}
	return raw[p.Rec : p.Rec+p.Len : p.Rec+p.Len], true
}

// pending returns a copy of the value p points at when it is in the block
// being built, and false when it is not (or p points beyond what it
// holds). A copy: the block's buffer is the next block's once it is sealed
// (Seal).
func (l *Log) pending(p Ptr) ([]byte, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.pend) == 0 || (Pos{File: p.File, Off: p.Off}) != l.pendAt || uint64(p.Rec)+uint64(p.Len) > uint64(len(l.pend)) {
		return nil, false
	}
	return bytes.Clone(l.pend[p.Rec : p.Rec+p.Len]), true
}

// inMemory returns the raw block at at if it is in memory, sealed and not
// yet written or in the cache of blocks read; nil if not. (The block being
// built is read with pending.) Caller holds mu.
func (l *Log) inMemory(at Pos) []byte {
	if raw := l.sealed[at]; raw != nil {
		return raw
	}
	return l.cache.get(at)
}

// block returns the raw block at at. A block another goroutine is reading
// (Ahead's, or another reader's) is waited for, not read a second time.
func (l *Log) block(at Pos) ([]byte, error) {
	if testHooks.enter != nil {
		testHooks.enter()
	}
	for {
		l.mu.Lock()
		if raw := l.inMemory(at); raw != nil {
			l.mu.Unlock()
			return raw, nil
		}
		wait, busy := l.loading[at]
		if !busy {
			done := make(chan struct{})
			l.loading[at] = done
			l.mu.Unlock()
			raw, err := l.readAt(at)
			l.loaded(at, raw, err == nil, done)
			return raw, err
		}
		l.mu.Unlock()
		<-wait // then in memory; or it failed, or the cache did not keep it, and this reads it
	}
}

// loaded ends the read of the block at at that done marks (Log.loading):
// raw goes to the cache when ok, and the readers waiting for it go on.
func (l *Log) loaded(at Pos, raw []byte, ok bool, done chan struct{}) {
	l.mu.Lock()
	delete(l.loading, at)
	if ok {
		l.cache.put(at, raw)
	}
	l.mu.Unlock()
	close(done)
}

// readAt reads the block at at from its file.
func (l *Log) readAt(at Pos) ([]byte, error) {
	if testHooks.read != nil {
		testHooks.read()
	}
	f, err := l.file(at.File)
	if err != nil {
		return nil, err
	}
	raw, _, err := l.readBlock(f, at.Off)
	if err == nil {
		readBlocks.Add(1)
	}
	return raw, err
}

// testHooks are called, in tests, as block starts, before a block is
// read from its file, and when readRun has marked the blocks of its run
// as being read.
var testHooks struct{ enter, read, run func() }

// readBlock reads, checks and decompresses the values of the block at off
// in f, and returns them with the block's length in the file.
func (l *Log) readBlock(f *os.File, off uint64) ([]byte, int, error) {
	bp := bodies.Get().(*[]byte)
	defer bodies.Put(bp)
	h, body, total, err := readBodyInto(f, off, bp)
	if err != nil {
		return nil, 0, err
	}
	raw, err := l.decode(h, body)
	if err != nil {
		return nil, 0, &DamageError{File: f.Name(), Off: off, Detail: err.Error()}
	}
	return raw, total, nil
}

// bodies recycles the buffers readBlock reads blocks' compressed bodies
// into: they are decompressed at once, and a verify reads every block
// (about 40 % of the bytes it allocated were these buffers).
var bodies = sync.Pool{New: func() any { return new([]byte) }}

// readBody reads the block at off in f and checks its header and
// checksum; it returns its header, its body and its length in the file.
func readBody(f *os.File, off uint64) (header, []byte, int, error) {
	var buf []byte
	return readBodyInto(f, off, &buf)
}

// readBodyInto is readBody reading into *buf, which it grows as needed;
// the body it returns is in *buf.
func readBodyInto(f *os.File, off uint64, bp *[]byte) (header, []byte, int, error) {
	damaged := func(detail string) error { return &DamageError{File: f.Name(), Off: off, Detail: detail} }
	if cap(*bp) < headerSize+4096 {
		*bp = make([]byte, headerSize+4096)
	}
	buf := (*bp)[:cap(*bp)]
	n, err := f.ReadAt(buf[:headerSize+4096], int64(off))
	if err != nil && !errors.Is(err, io.EOF) {
		return header{}, nil, 0, fmt.Errorf("segments: %w", err)
	}
	h, bad := parseHeader(buf[:n])
	if bad != "" {
		return header{}, nil, 0, damaged(bad)
	}
	total := headerSize + int(h.clen)
	if total > n {
		if total > len(buf) {
			buf = append(buf[:n], make([]byte, total-n)...)
			*bp = buf
		}
		m, err := f.ReadAt(buf[n:total], int64(off)+int64(n))
		if err != nil && !errors.Is(err, io.EOF) {
			return header{}, nil, 0, fmt.Errorf("segments: %w", err)
		}
		n += m
	}
	if n > total {
		n = total
	}
	body := buf[headerSize:n]
	if bad := h.checkBody(body); bad != "" {
		return header{}, nil, 0, damaged(bad)
	}
	return h, body, total, nil
}

// frames splits the body of a block of format 2 into its values' frame
// and its redo record's; a block of format 1 is all values.
func frames(h header, body []byte) (vals, redo []byte, err error) {
	if h.format == 1 {
		return body, nil, nil
	}
	if len(body) < 4 {
		return nil, nil, fmt.Errorf("a body of %d bytes has no room for its first frame's length", len(body))
	}
	n := binary.BigEndian.Uint32(body)
	if uint64(n) > uint64(len(body)-4) {
		return nil, nil, fmt.Errorf("a first frame of %d bytes in a body of %d", n, len(body))
	}
	return body[4 : 4+n], body[4+n:], nil
}

// decode decompresses the values of a checked block (header h, body).
func (l *Log) decode(h header, body []byte) ([]byte, error) {
	vals, _, err := frames(h, body)
	if err != nil {
		return nil, err
	}
	if len(vals) == 0 && h.rlen == 0 {
		return nil, nil
	}
	var raw []byte
	if h.format == 3 {
		raw, err = decodeS2(vals, int(h.rlen)) // a frame claiming more is not this block's
	} else {
		var dec *zstd.Decoder
		if dec, err = l.zstdDecoder(); err == nil {
			raw, err = dec.DecodeAll(vals, make([]byte, 0, h.rlen))
		}
	}
	if err != nil {
		return nil, fmt.Errorf("decompress: %v", err)
	}
	if len(raw) != int(h.rlen) {
		return nil, fmt.Errorf("raw block of %d bytes, header says %d", len(raw), h.rlen)
	}
	return raw, nil
}

// decodeRedoFrame decompresses the redo record of a checked block.
func (l *Log) decodeRedoFrame(h header, body []byte) ([]byte, error) {
	_, redo, err := frames(h, body)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrRedo, err)
	}
	if len(redo) == 0 {
		return nil, nil
	}
	raw, err := decodeS2(redo, maxBlock)
	if err != nil {
		return nil, fmt.Errorf("%w: decompress: %v", ErrRedo, err)
	}
	return raw, nil
}

// decodeS2 decompresses an S2 frame (block format) of at most limit bytes
// decompressed; a frame that says it holds more is refused before
// anything is allocated for it.
func decodeS2(frame []byte, limit int) ([]byte, error) {
	n, err := s2.DecodedLen(frame)
	if err == nil && n > limit {
		err = fmt.Errorf("%d bytes, limit %d", n, limit)
	}
	if err != nil {
		return nil, err
	}
	return s2.Decode(make([]byte, n), frame)
}

// file returns the read handle of file n.
func (l *Log) file(n uint32) (*os.File, error) {
	l.fmu.Lock()
	defer l.fmu.Unlock()
	if f := l.files[n]; f != nil {
		return f, nil
	}
	if l.files == nil {
		return nil, errors.New("segments: closed")
	}
	f, err := os.Open(filepath.Join(l.dir, fileName(n)))
	if err != nil {
		return nil, fmt.Errorf("segments: %w", err)
	}
	l.files[n] = f
	return f, nil
}

// Stats is what Verify read.
type Stats struct {
	Files, Blocks int
	Bytes, Raw    int64 // in the files; decompressed
}

// Verify reads every block of the segments up to end (every file before
// end.File to its end), in order, and checks it: its header, its checksum,
// and that the blocks tile the files exactly. It does not decompress them:
// every read does, and says so when a block does not decompress to its
// length, which a block that passes its checksum does only if it was
// written so. It returns the first damage found as a *DamageError.
func (l *Log) Verify(ctx context.Context, end Pos) (Stats, error) {
	var st Stats
	buf := make([]byte, 0, 1<<20)
	for n := uint32(1); n <= end.File; n++ {
		p := filepath.Join(l.dir, fileName(n))
		f, err := os.Open(p)
		if err != nil {
			return st, &DamageError{File: p, Detail: err.Error()}
		}
		err = verifyFile(ctx, f, n == end.File, end.Off, &st, buf)
		f.Close()
		if err != nil {
			return st, err
		}
		st.Files++
	}
	return st, nil
}

// verifyFile is Verify of one file, f: up to stop if last, else to its
// end.
func verifyFile(ctx context.Context, f *os.File, last bool, stop uint64, st *Stats, buf []byte) error {
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("segments: %w", err)
	}
	size := uint64(fi.Size())
	switch {
	case !last:
		stop = size
	case size < stop:
		return &DamageError{File: f.Name(), Off: size, Detail: fmt.Sprintf("the file ends here; the database points up to %d", stop)}
	}
	r := bufio.NewReaderSize(io.NewSectionReader(f, 0, int64(stop)), 1<<20)
	for off := uint64(0); off < stop; {
		if err := ctx.Err(); err != nil {
			return err
		}
		damaged := func(detail string) error { return &DamageError{File: f.Name(), Off: off, Detail: detail} }
		buf = buf[:headerSize]
		if n, err := io.ReadFull(r, buf); err != nil {
			return damaged(fmt.Sprintf("torn header (%d of %d bytes before the end at %d)", n, headerSize, stop))
		}
		h, bad := parseHeader(buf)
		if bad != "" {
			return damaged(bad)
		}
		if off+headerSize+uint64(h.clen) > stop {
			return damaged(fmt.Sprintf("a block of %d bytes runs past the end (%d)", headerSize+h.clen, stop))
		}
		buf = slices.Grow(buf[:0], int(h.clen))[:h.clen]
		if _, err := io.ReadFull(r, buf); err != nil {
			return fmt.Errorf("segments: %w", err)
		}
		if bad := h.checkBody(buf); bad != "" {
			return damaged(bad)
		}
		st.Blocks++
		st.Bytes += headerSize + int64(h.clen)
		st.Raw += int64(h.rlen)
		off += headerSize + uint64(h.clen)
	}
	return nil
}

// cache holds recent raw blocks, up to max bytes, evicting the oldest.
// Blocks are found by their position packed in a word (packPos): a map of
// Pos, a struct with padding, hashes each field with a call of its own,
// and a verify looks a block up for every value it reads (3 % of its CPU).
type cache struct {
	max    int
	size   int
	order  []Pos
	blocks map[uint64][]byte // by packPos
	far    map[Pos][]byte    // the blocks packPos cannot pack
}

// packPos packs at in a word: the file's number in the top 24 bits, the
// offset in the low 40 (a terabyte; segment files are MaxFile bytes and a
// block past it). ok is false for a position that does not fit.
func packPos(at Pos) (key uint64, ok bool) {
	if at.File >= 1<<24 || at.Off >= 1<<40 {
		return 0, false
	}
	return uint64(at.File)<<40 | at.Off, true
}

func (c *cache) get(at Pos) []byte {
	if k, ok := packPos(at); ok {
		return c.blocks[k]
	}
	return c.far[at]
}

func (c *cache) set(at Pos, raw []byte) {
	if k, ok := packPos(at); ok {
		c.blocks[k] = raw
		return
	}
	if c.far == nil {
		c.far = map[Pos][]byte{}
	}
	c.far[at] = raw
}

func (c *cache) drop(at Pos) {
	if k, ok := packPos(at); ok {
		delete(c.blocks, k)
		return
	}
	delete(c.far, at)
}

func (c *cache) put(at Pos, raw []byte) {
	if raw == nil || c.get(at) != nil || len(raw) > c.max {
		return
	}
	for c.size+len(raw) > c.max && len(c.order) > 0 {
		old := c.order[0]
		c.order = c.order[1:]
		c.size -= len(c.get(old))
		c.drop(old)
	}
	c.set(at, raw)
	c.order = append(c.order, at)
	c.size += len(raw)
}
