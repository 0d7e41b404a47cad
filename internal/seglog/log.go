package seglog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"expvar"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"

	"github.com/dgraph-io/badger/v4"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
)

// Counters of what every Log of the process wrote, for measurements (the
// bench tool reads them as it reads Badger's).
var (
	writtenBlocks = expvar.NewInt("wacpd_segment_blocks")
	writtenBytes  = expvar.NewInt("wacpd_segment_write_bytes") // headers and compressed bodies
	writtenRaw    = expvar.NewInt("wacpd_segment_raw_bytes")   // the values and redo records, before compression
	readBlocks    = expvar.NewInt("wacpd_segment_blocks_read") // blocks read from the files (into the cache)
)

// Options tune a Log; zero fields take their defaults.
type Options struct {
	// ReadOnly opens the segments for reading only: nothing is removed or
	// written (the offline verify of a stopped daemon's data dir).
	ReadOnly bool
	// MaxFile is the size past which a new file starts (DefaultMaxFile).
	MaxFile int64
	// CacheBytes bounds the cache of raw blocks read (default 4 MiB).
	CacheBytes int
}

// Recovered says what Open found past the end Badger recorded: the whole
// blocks Replay redoes, and what it removed after them (torn by a crash,
// or the zeros written ahead).
type Recovered struct {
	Files  int   // whole files removed
	Bytes  int64 // bytes removed, in all
	Replay int   // whole blocks past the end, which Replay redoes
}

// Log is the segments of one database. One goroutine at a time may build
// and write blocks (Txn's writes, Seal, Write, Abort: the engine's committer and the
// batch it has in flight, one after the other); any number may read.
type Log struct {
	dir  string
	opts Options
	// zmu guards enc and dec, made when first needed (zstdEncoder,
	// zstdDecoder): only the blocks of format 2 need them, which builds
	// before 2026-11-26 wrote (and tests still write).
	zmu sync.Mutex
	enc *zstd.Encoder
	dec *zstd.Decoder
	// zstdFrom: a block with at least this many bytes of values is of
	// format 2, its values compressed with zstd; every block Seal writes
	// is of format 3 (S2), whatever its size: Open sets zstdFrom out of
	// reach, and tests lower it (earlierZstdFrom) to write the blocks
	// earlier builds wrote, which every reader still reads. zstd stored
	// the values of a 64-agent batch (57 KB) in 15 % of their size
	// against S2's 24 %, but took 8 µs of the committer's CPU per
	// checkpoint against S2's 2.5 (about 540 and 1,900 MB/s on this
	// project's test machine); the CPU per checkpoint is what bounds the
	// daemon's rate there, and its bytes on disk stay within their target
	// (docs/performance.md). S2 also decodes about 2.5 times as fast,
	// which every read of the trail sees.
	zstdFrom int

	fmu   sync.Mutex
	files map[uint32]*os.File // read handles

	mu     sync.Mutex     // guards the fields below
	pend   []byte         // the values of the block being built
	ops    []byte         // its redo record
	last   map[string]int // where each key's last write in ops starts
	dead   bool           // ops holds writes a later one replaced
	pendAt Pos            // where it will be written, once it has a value
	// hint is the capacity a block's values start with (twice the last
	// block's), and spare a sealed block's redo record's
	// buffer, for the next: built by appending, each grew from nothing,
	// and their copies were a fifth of the bytes the daemon allocated.
	hint  int
	spare []byte // at most maxHint
	// spareVals is the buffer the last block's values were built in, for
	// the next block's (Seal keeps a copy); at most maxHint.
	spareVals []byte
	sealed    map[Pos][]byte
	loading   map[Pos]chan struct{} // blocks being read from the files, closed when read
	next      Pos                   // where the next block goes
	durable   Pos                   // the end of the last block written and synced
	tail      []Pos                 // whole blocks Open found past the end: Replay first
	cache     cache

	wmu    sync.Mutex // guards w, wn and zeroed
	w      *os.File   // the file written to, or nil
	wn     uint32     // its number
	zeroed int64      // w holds zeros (or blocks) up to here
}

// zeroChunk is how far ahead of the blocks Write fills a file with zeros:
// a block then overwrites allocated bytes, and syncing it needs no journal
// commit of the file's size (about 140 µs against 210-260 µs for an
// append on this project's test machine; docs/performance.md).
const zeroChunk = 4 << 20

// Open opens the segments in dir (created if missing) that end at end, as
// KeyEnd says: every pointer Badger holds is before end. Unless
// opts.ReadOnly, it keeps the whole blocks past end for Replay, which must
// run before the next Seal, and removes what lies after them.
func Open(dir string, end Pos, opts Options) (*Log, Recovered, error) {
	if opts.MaxFile <= 0 {
		opts.MaxFile = DefaultMaxFile
	}
	if opts.CacheBytes <= 0 {
		opts.CacheBytes = 4 << 20
	}
	var rec Recovered
	if !opts.ReadOnly {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, rec, fmt.Errorf("segments: %w", err)
		}
	}
	nums, err := list(dir)
	if err != nil && !(opts.ReadOnly && errors.Is(err, os.ErrNotExist)) {
		return nil, rec, fmt.Errorf("segments: %w", err)
	}
	for n := uint32(1); n <= end.File; n++ {
		if !slices.Contains(nums, n) {
			return nil, rec, &DamageError{File: filepath.Join(dir, fileName(n)), Detail: fmt.Sprintf("missing; the database points into segments up to %s at %d", fileName(end.File), end.Off)}
		}
	}
	if end.File > 0 {
		p := filepath.Join(dir, fileName(end.File))
		st, err := os.Stat(p)
		if err != nil {
			return nil, rec, fmt.Errorf("segments: %w", err)
		}
		if uint64(st.Size()) < end.Off {
			return nil, rec, &DamageError{File: p, Off: uint64(st.Size()), Detail: fmt.Sprintf("the file ends here; the database points up to %d", end.Off)}
		}
	}
	var tail []Pos
	stop := end
	if !opts.ReadOnly {
		// Blocks past end were written for batches whose transactions
		// Badger lost (it writes without syncing) or never committed:
		// the whole ones are kept for Replay, the rest cut off.
		if tail, stop, err = scanTail(dir, end, nums); err != nil {
			return nil, rec, err
		}
		last := uint32(0)
		if len(nums) > 0 {
			last = nums[len(nums)-1]
		}
		if rec.Files, rec.Bytes, err = cutFrom(dir, stop, last); err != nil {
			return nil, rec, fmt.Errorf("segments: %w", err)
		}
		rec.Replay = len(tail)
	}
	l := &Log{
		dir: dir, opts: opts, zstdFrom: math.MaxInt,
		files:  map[uint32]*os.File{},
		sealed: map[Pos][]byte{},
		next:   stop, durable: stop, tail: tail,
		cache: cache{max: opts.CacheBytes, blocks: map[uint64][]byte{}}, loading: map[Pos]chan struct{}{},
	}
	return l, rec, nil
}

// ReadEnd returns the segments' end as txn sees it (the zero Pos when
// none was ever written).
func ReadEnd(txn *badger.Txn) (Pos, error) {
	item, err := txn.Get(KeyEnd)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return Pos{}, nil
	}
	if err != nil {
		return Pos{}, err
	}
	var p Pos
	err = item.Value(func(v []byte) (err error) { p, err = DecodePos(v); return err })
	return p, err
}

// End returns the segments' end that db records (ReadEnd in a read-only
// transaction of its own).
func End(db *badger.DB) (end Pos, err error) {
	err = db.View(func(txn *badger.Txn) error { end, err = ReadEnd(txn); return err })
	return end, err
}

// Close closes the files. The Log must not be used afterwards.
func (l *Log) Close() error {
	var errs []error
	l.fmu.Lock()
	for _, f := range l.files {
		errs = append(errs, f.Close())
	}
	l.files = nil
	l.fmu.Unlock()
	l.wmu.Lock()
	errs = append(errs, l.closeWriter())
	l.wmu.Unlock()
	l.zmu.Lock()
	if l.dec != nil {
		l.dec.Close()
	}
	l.zmu.Unlock()
	return errors.Join(errs...)
}

// No zstd checksum of its own, written or checked: the block's CRC-32C
// covers the compressed bytes and is checked on every read, and what the
// values decompress to is hashed by every check that reads them (the
// entries' chains, the objects' addresses). The xxhash of each block was
// 12 % of a verify's walk.

// zstdEncoder returns the encoder of format 2's values, made at its first
// use (an encoder and the decoders, about a megabyte per core, were made
// by every Open for blocks no build writes any more).
func (l *Log) zstdEncoder() (*zstd.Encoder, error) {
	l.zmu.Lock()
	defer l.zmu.Unlock()
	if l.enc == nil {
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1), zstd.WithEncoderCRC(false))
		if err != nil {
			return nil, fmt.Errorf("segments: %w", err)
		}
		l.enc = enc
	}
	return l.enc, nil
}

// zstdDecoder returns the decoder of format 2's values, made at its first
// use.
func (l *Log) zstdDecoder() (*zstd.Decoder, error) {
	l.zmu.Lock()
	defer l.zmu.Unlock()
	if l.dec == nil {
		dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(maxBlock), zstd.IgnoreChecksum(true))
		if err != nil {
			return nil, fmt.Errorf("segments: %w", err)
		}
		l.dec = dec
	}
	return l.dec, nil
}

// add adds value to the block being built and returns its pointer with
// extra after it, the value Badger keeps under the value's key.
func (l *Log) add(value, extra []byte) []byte {
	l.mu.Lock()
	if len(l.pend) == 0 {
		l.pendAt = l.place()
		if cap(l.pend) == 0 {
			l.pend, l.spareVals = l.spareVals, nil
		}
		if cap(l.pend) == 0 {
			l.pend = make([]byte, 0, max(l.hint, len(value)))
		}
	}
	l.pend = grow(l.pend, len(value))
	p := Ptr{File: l.pendAt.File, Off: l.pendAt.Off, Rec: uint32(len(l.pend)), Len: uint32(len(value))}
	l.pend = append(l.pend, value...)
	l.mu.Unlock()
	return append(p.Append(make([]byte, 0, PtrSize+len(extra))), extra...)
}

// maxHint bounds the memory a block's buffers keep for the next.
const maxHint = 1 << 20

// grow returns b with room for n more bytes: twice its capacity or more
// when it has to grow (append grows a large slice by a quarter, so a
// block built by appending was copied about four times over).
func grow(b []byte, n int) []byte {
	if cap(b)-len(b) >= n {
		return b
	}
	nb := make([]byte, len(b), max(2*cap(b), len(b)+n, 4096))
	copy(nb, b)
	return nb
}

// place returns where the next block goes: after the last one, or at the
// start of a new file once the last has reached MaxFile. Caller holds mu.
func (l *Log) place() Pos {
	at := l.next
	if at.File == 0 || at.Off >= uint64(l.opts.MaxFile) {
		at = Pos{File: at.File + 1}
	}
	return at
}

// Extra calls fn with the extra bytes kept beside item's pointer and
// returns true; it returns false, without calling fn, when item's value is
// not a pointer.
func Extra(item *badger.Item, fn func([]byte) error) (bool, error) {
	if item.UserMeta()&Meta == 0 {
		return false, nil
	}
	return true, item.Value(func(v []byte) error {
		if len(v) < PtrSize {
			return fmt.Errorf("key %q: %w: %d bytes", item.Key(), ErrPointer, len(v))
		}
		return fn(v[PtrSize:])
	})
}

// Block is a sealed block, to be written before the transaction that
// points into it commits.
type Block struct {
	at   Pos
	data []byte // header and body
	raw  int    // the values' and the redo record's bytes, before compression
}

// Seal closes the block being built (the batch's values and its redo
// record) and sets the new end in txn. It returns nil if the batch wrote
// nothing through the Log (or the Log is nil). The end is set on txn
// itself, not recorded: Replay sets it from where the block ends.
func (l *Log) Seal(txn *badger.Txn) (*Block, error) {
	if l == nil {
		return nil, nil
	}
	l.mu.Lock()
	if l.tail != nil {
		l.mu.Unlock()
		return nil, errors.New("segments: blocks past the end wait to be replayed (Replay)")
	}
	vals, ops, at, dead := l.pend, l.ops, l.pendAt, l.dead
	l.pend = nil
	l.forget()
	if len(vals) == 0 {
		at = l.place()
	}
	l.mu.Unlock()
	if len(vals) == 0 && len(ops) == 0 {
		return nil, nil
	}
	if dead {
		ops = compact(ops)
	}
	// The block keeps its values (sealed, then the cache of blocks read)
	// in a buffer of their size; the one they were built in, grown as they
	// came, builds the next block's (about 13 KB were allocated per
	// checkpoint of 3.7 KB of values at 64 agents, the batches' sizes
	// varying too much for a guess of the next one's).
	built := vals
	if len(vals) > 0 {
		vals = bytes.Clone(vals)
	}
	if len(vals) > maxBlock || len(ops) > maxBlock {
		return nil, fmt.Errorf("segments: a block of %d and %d bytes, limit %d", len(vals), len(ops), maxBlock)
	}
	// The body (the values' frame, then the redo record's) is compressed
	// after room for the header and the first frame's length, which are
	// then written in front of it: readers of values decompress the first
	// frame only.
	data := make([]byte, headerSize+4, headerSize+4+(len(vals)+len(ops))/2+128)
	small := len(vals) < l.zstdFrom
	switch {
	case len(vals) == 0:
	case small:
		data = slices.Grow(data, s2.MaxEncodedLen(len(vals)))
		data = append(data, s2.Encode(data[len(data):cap(data)], vals)...)
	default:
		enc, err := l.zstdEncoder()
		if err != nil {
			return nil, err
		}
		data = enc.EncodeAll(vals, data)
	}
	binary.BigEndian.PutUint32(data[headerSize:], uint32(len(data)-headerSize-4))
	if len(ops) > 0 {
		// S2, not zstd, for the redo record: it is read only after a
		// crash, and zstd's cost per call (about 10 µs here) is on every
		// batch's way to its answer.
		data = slices.Grow(data, s2.MaxEncodedLen(len(ops)))
		data = append(data, s2.Encode(data[len(data):cap(data)], ops)...)
	}
	appendHeader(data[:0], data[headerSize:], len(vals), small)
	b := &Block{at: at, data: data, raw: len(vals) + len(ops)}
	end := b.end()
	l.mu.Lock()
	l.sealed[at] = vals
	l.next = end
	l.hint = min(2*len(vals), maxHint)
	if cap(built) <= maxHint {
		l.spareVals = built[:0] // copied: nothing else holds it (pending copies what it reads)
	}
	if ops != nil && cap(ops) <= maxHint {
		l.spare = ops[:0] // compressed into data: nothing else holds it
	}
	l.mu.Unlock()
	if err := txn.Set(KeyEnd, appendPos(nil, end)); err != nil {
		return nil, err
	}
	return b, nil
}

// end returns where b ends.
func (b *Block) end() Pos { return Pos{File: b.at.File, Off: b.at.Off + uint64(len(b.data))} }

// Write writes b and syncs it. Blocks must be written in the order they
// were sealed.
func (l *Log) Write(b *Block) error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if err := l.writer(b.at.File); err != nil {
		return err
	}
	if end := int64(b.at.Off) + int64(len(b.data)); end > l.zeroed {
		if err := l.zeroAhead(end); err != nil {
			return err
		}
	}
	if _, err := l.w.WriteAt(b.data, int64(b.at.Off)); err != nil {
		return fmt.Errorf("segments: write %s: %w", fileName(b.at.File), err)
	}
	if err := datasync(l.w); err != nil {
		return fmt.Errorf("segments: sync %s: %w", fileName(b.at.File), err)
	}
	writtenBlocks.Add(1)
	writtenBytes.Add(int64(len(b.data)))
	l.mu.Lock()
	raw := l.sealed[b.at]
	writtenRaw.Add(int64(b.raw))
	delete(l.sealed, b.at)
	l.durable = b.end()
	l.cache.put(b.at, raw)
	l.mu.Unlock()
	return nil
}

// zeroAhead fills l.w with zeros from l.zeroed to past end, a chunk at a
// time, and syncs it (its size included). Caller holds wmu.
func (l *Log) zeroAhead(end int64) error {
	to := max(end, l.zeroed+zeroChunk)
	zeros := make([]byte, 64<<10)
	for off := l.zeroed; off < to; off += int64(len(zeros)) {
		n := min(int64(len(zeros)), to-off)
		if _, err := l.w.WriteAt(zeros[:n], off); err != nil {
			return fmt.Errorf("segments: write %s: %w", fileName(l.wn), err)
		}
	}
	if err := l.w.Sync(); err != nil {
		return fmt.Errorf("segments: sync %s: %w", fileName(l.wn), err)
	}
	l.zeroed = to
	return nil
}

// writer makes l.w the file numbered n, created if new. The file it
// leaves is cut at its last block first (no zeros after it): only the last
// file may end past its blocks. Caller holds wmu.
func (l *Log) writer(n uint32) error {
	if l.w != nil && l.wn == n {
		return nil
	}
	if err := l.closeWriter(); err != nil {
		return err
	}
	p := filepath.Join(l.dir, fileName(n))
	st, statErr := os.Stat(p)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("segments: %w", err)
	}
	l.zeroed = 0
	if errors.Is(statErr, os.ErrNotExist) {
		if err := syncDir(l.dir); err != nil {
			f.Close()
			return fmt.Errorf("segments: %w", err)
		}
	} else if statErr == nil {
		l.zeroed = st.Size()
	}
	l.w, l.wn = f, n
	return nil
}

// closeWriter cuts the file written to at the end of its last block
// written, syncs and closes it. Caller holds wmu.
func (l *Log) closeWriter() error {
	if l.w == nil {
		return nil
	}
	l.mu.Lock()
	d := l.durable
	l.mu.Unlock()
	f := l.w
	l.w = nil
	if d.File == l.wn {
		if err := f.Truncate(int64(d.Off)); err != nil {
			f.Close()
			return fmt.Errorf("segments: cut %s: %w", fileName(l.wn), err)
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return fmt.Errorf("segments: sync %s: %w", fileName(l.wn), err)
		}
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("segments: close %s: %w", fileName(l.wn), err)
	}
	return nil
}

// Abort forgets every block not written, after a failed batch: the next
// block goes where the last one written ends, and whatever a failed write
// left past it is cut off. A block written and synced stays, whatever
// became of its transaction: it is the batch's durable record, which
// Replay redoes.
func (l *Log) Abort() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	l.pend = nil
	l.forget()
	clear(l.sealed)
	l.next = l.durable
	d := l.durable
	l.mu.Unlock()
	l.wmu.Lock()
	defer l.wmu.Unlock()
	// The handle a write failed on may be broken (EIO): the next write
	// opens the file again.
	n := l.wn
	if l.w != nil {
		l.w.Close()
		l.w = nil
	} else {
		n = d.File
	}
	if _, _, err := cutFrom(l.dir, d, n); err != nil {
		return fmt.Errorf("segments: %w", err)
	}
	return nil
}

// cutFrom cuts the segments in dir at d: file d.File to d.Off bytes, and
// files after it up to last removed. It returns the files removed and the
// bytes cut, in all.
func cutFrom(dir string, d Pos, last uint32) (files int, bytes int64, err error) {
	if d.File > 0 {
		p := filepath.Join(dir, fileName(d.File))
		if st, err := os.Stat(p); err == nil && uint64(st.Size()) > d.Off {
			if err := truncate(p, int64(d.Off)); err != nil {
				return files, bytes, err
			}
			bytes += st.Size() - int64(d.Off)
		}
	}
	for n := d.File + 1; n <= last; n++ {
		p := filepath.Join(dir, fileName(n))
		st, err := os.Stat(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err == nil {
			err = os.Remove(p)
		}
		if err != nil {
			return files, bytes, err
		}
		files++
		bytes += st.Size()
	}
	if files > 0 {
		return files, bytes, syncDir(dir)
	}
	return files, bytes, nil
}

// Discard drops the block being built, of a batch that will not be
// written.
func (l *Log) Discard() {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.pend = nil
	l.forget()
	l.mu.Unlock()
}

// Dir returns the segments' directory.
func (l *Log) Dir() string { return l.dir }

// fileName is the name of file n.
func fileName(n uint32) string { return fmt.Sprintf("%08d.seg", n) }

// list returns the numbers of the segment files in dir, ascending.
func list(dir string) ([]uint32, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var nums []uint32
	for _, e := range ents {
		name := e.Name()
		if len(name) != 12 || filepath.Ext(name) != ".seg" {
			continue
		}
		n, err := strconv.ParseUint(name[:8], 10, 32)
		if err != nil || n == 0 {
			continue
		}
		nums = append(nums, uint32(n))
	}
	slices.Sort(nums)
	return nums, nil
}

func truncate(p string, size int64) error {
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		d.Close()
		return err
	}
	return d.Close()
}
