package seglog

import (
	"fmt"
	"slices"

	"github.com/dgraph-io/badger/v4"
)

// Ahead reads blocks ahead of a reader that goes through the segment files
// in order (a verify's walk of the trail, whose entries are in the blocks in
// the order they were written), on a goroutine of its own: when the reader
// enters a block, blocks after it are read, checked and decompressed into
// the cache, so that the reader finds them there. A
// verify's walk decompressed every block itself, a third of its time on
// the goroutine that feeds all the others. A block Ahead cannot read is
// left for the reader, which reads it itself and reports what is wrong; a
// reader that jumps about gets no help and loses nothing.
type Ahead struct {
	l     *Log
	n     int
	entry chan Pos // the block the reader entered last (latest only)
	stop  chan struct{}
	done  chan struct{}
	last  Pos // the reader's: the block it entered last
	began bool
	buf   []byte // the reader's, for the blocks it reads itself (get)
	// passed, in tests, gets the block the reader entered each time the
	// goroutine is done reading ahead of it.
	passed chan Pos
}

// NewAhead starts reading ahead of a reader, up to n blocks past the one it
// is in; Close stops it. A nil Log gives a nil Ahead, whose methods read
// as the Log's do.
func (l *Log) NewAhead(n int) *Ahead {
	if l == nil {
		return nil
	}
	return l.newAhead(n, nil)
}

func (l *Log) newAhead(n int, passed chan Pos) *Ahead {
	a := &Ahead{l: l, n: n, entry: make(chan Pos, 1), stop: make(chan struct{}), done: make(chan struct{}), passed: passed}
	go a.run()
	return a
}

// ValueExtra is Log.Value for the reader, which notes the block each value
// is in; fn is also given the extra bytes kept beside the value's pointer
// (Extra; extra false, x nil, when item holds a value of its own), the
// pointer read once for both.
func (a *Ahead) ValueExtra(item *badger.Item, fn func(v, x []byte, extra bool) error) error {
	if item.UserMeta()&Meta == 0 {
		return item.Value(func(v []byte) error { return fn(v, nil, false) })
	}
	return item.Value(func(pv []byte) error {
		p, err := DecodePtr(pv)
		if err != nil {
			return fmt.Errorf("key %q: %w", item.Key(), err)
		}
		var v []byte
		if a == nil {
			v, err = (*Log)(nil).Get(p)
		} else {
			v, err = a.get(p)
		}
		if err != nil {
			return fmt.Errorf("key %q: %w", item.Key(), err)
		}
		return fn(v, pv[PtrSize:], true)
	})
}

// Get is Log.Get for the reader, of the pointer encoded in pb (DecodePtr):
// it notes the block the value is in, as ValueExtra does.
func (a *Ahead) Get(pb []byte) ([]byte, error) {
	p, err := DecodePtr(pb)
	if err != nil {
		return nil, err
	}
	if a == nil {
		return (*Log)(nil).Get(p)
	}
	return a.get(p)
}

// get is Log.Get for the reader, which enters the block p points into. A
// block neither in memory nor being read (the reader caught up with the
// goroutine, which shares the cores with the reader and the workers it
// feeds) is read with the blocks after it that one read of readerRunBytes
// holds, rather than alone: a read per block took twice the time of all
// the goroutine's reads, in system calls, at one client's block per
// checkpoint.
func (a *Ahead) get(p Ptr) ([]byte, error) {
	at := Pos{File: p.File, Off: p.Off}
	a.enter(at)
	a.l.mu.Lock()
	missing := a.l.inMemory(at) == nil && a.l.loading[at] == nil && a.l.written(at)
	a.l.mu.Unlock()
	if missing {
		if a.buf == nil {
			a.buf = make([]byte, readerRunBytes)
		}
		a.l.readRun(at, a.buf, aheadMax, true)
	}
	return a.l.Get(p)
}

// enter tells the goroutine that the reader is in block at, when that is
// another block than the last.
func (a *Ahead) enter(at Pos) {
	if a.began && at == a.last {
		return
	}
	a.began, a.last = true, at
	select {
	case <-a.entry: // replaced by the newer one
	default:
	}
	a.entry <- at
}

// Close stops the goroutine and waits for it; it may be called more than
// once.
func (a *Ahead) Close() {
	if a == nil {
		return
	}
	select {
	case <-a.stop:
	default:
		close(a.stop)
	}
	<-a.done
}

// Ahead keeps at least n blocks (NewAhead), and at least aheadBytes of
// values, read ahead of the reader, up to aheadMax blocks; it reads the
// files runBytes at a time. A block of a checkpoint or two (a daemon
// under a light load writes one per checkpoint) is a few kilobytes: read
// one at a time, two reads each, Ahead fell behind the reader.
const (
	aheadBytes = 256 << 10
	aheadMax   = 256
	runBytes   = 256 << 10
	// readerRunBytes is what the reader reads at once when it finds a
	// block not read ahead (Ahead.get).
	readerRunBytes = 64 << 10
)

// aheadBlock is a block read ahead: where it is and its values' size.
type aheadBlock struct {
	at  Pos
	raw int
}

// run keeps ahead the blocks after the reader's that it has read (or found
// in memory), in order, and reads more as the reader moves on.
func (a *Ahead) run() {
	defer close(a.done)
	var ahead []aheadBlock
	buf := make([]byte, runBytes)
	for {
		var at Pos
		select {
		case <-a.stop:
			return
		case at = <-a.entry:
		}
		if i := slices.IndexFunc(ahead, func(b aheadBlock) bool { return b.at == at }); i >= 0 {
			ahead = ahead[i+1:]
		} else {
			ahead = ahead[:0]
		}
		for !a.enough(ahead) {
			select {
			case <-a.stop:
				return
			default:
			}
			if len(a.entry) > 0 {
				break // the reader moved on: start from there
			}
			from := at
			if len(ahead) > 0 {
				from = ahead[len(ahead)-1].at
			}
			got := a.l.readRun(from, buf, aheadMax-len(ahead), false)
			if len(got) == 0 {
				break
			}
			ahead = append(ahead, got...)
		}
		if a.passed != nil {
			select {
			case a.passed <- at:
			case <-a.stop:
				return
			}
		}
	}
}

// enough reports whether the blocks ahead are enough.
func (a *Ahead) enough(ahead []aheadBlock) bool {
	if len(ahead) >= aheadMax {
		return true
	}
	if len(ahead) < a.n {
		return false
	}
	raw := 0
	for _, b := range ahead {
		raw += b.raw
	}
	return raw >= aheadBytes
}

// readRun reads the blocks after the one at from (with it when with is
// set), at most limit, that one read of the file into buf holds whole (or,
// when the next does not fit, that one alone), puts those not in memory in
// the cache, and returns them in order; none when the block at from is the
// last written or a block cannot be read (the reader reads it itself and
// reports what is wrong). The blocks it is to decode are marked as being
// read (Log.loading) before it decodes the first, so that a reader that
// reaches one waits for it rather than reading it a second time.
func (l *Log) readRun(from Pos, buf []byte, limit int, with bool) []aheadBlock {
	f, err := l.file(from.File)
	if err != nil {
		return nil
	}
	n, _ := f.ReadAt(buf, int64(from.Off))
	h, bad := parseHeader(buf[:n])
	if bad != "" {
		return nil
	}
	var run []runBlock
	off := headerSize + int(h.clen) // in buf: where the block after from starts
	if with {
		off = 0
	}
	next := Pos{File: from.File, Off: from.Off + uint64(off)}
	l.mu.Lock()
	for len(run) < limit {
		if next.Off >= uint64(l.opts.MaxFile) {
			if len(run) == 0 {
				l.mu.Unlock()
				return l.readAlone(Pos{File: from.File + 1})
			}
			break // the next file's first block: in the next run
		}
		if !l.written(next) {
			break
		}
		h, bad := parseHeader(buf[min(off, n):n])
		end := off + headerSize + int(h.clen)
		if bad != "" || end > n {
			if len(run) == 0 && !(off+headerSize <= n && bad != "") {
				l.mu.Unlock()
				return l.readAlone(next) // it does not fit in buf
			}
			break // the rest in the next run; a damaged block for the reader
		}
		b := runBlock{at: next, h: h, off: off + headerSize, end: end}
		if l.inMemory(next) == nil && l.loading[next] == nil {
			b.done = make(chan struct{})
			l.loading[next] = b.done
		}
		run = append(run, b)
		off = end
		next = Pos{File: from.File, Off: from.Off + uint64(off)}
	}
	l.mu.Unlock()
	if testHooks.run != nil {
		testHooks.run()
	}
	out := make([]aheadBlock, 0, len(run))
	for i, b := range run {
		if b.done != nil {
			body := buf[b.off:b.end]
			var raw []byte
			ok := b.h.checkBody(body) == ""
			if ok {
				raw, err = l.decode(b.h, body)
				ok = err == nil
			}
			l.loaded(b.at, raw, ok, b.done)
			if !ok {
				// Left for the reader, which reads it and reports what
				// is wrong; the blocks after it are left unread.
				l.release(run[i+1:])
				return out
			}
			readBlocks.Add(1)
		}
		out = append(out, aheadBlock{at: b.at, raw: int(b.h.rlen)})
	}
	return out
}

// runBlock is a block of a run readRun read: where it is, its header,
// its body's bytes in the run's buffer, and, when readRun is to decode
// it, the channel it closes when done (Log.loading).
type runBlock struct {
	at       Pos
	h        header
	off, end int
	done     chan struct{}
}

// release gives up the blocks of run that readRun marked as being read.
func (l *Log) release(run []runBlock) {
	for _, b := range run {
		if b.done != nil {
			l.loaded(b.at, nil, false, b.done)
		}
	}
}

// readAlone reads the block at at into the cache unless it is in memory,
// as readRun's one block: the first of its file, or one larger than a
// run's buffer.
func (l *Log) readAlone(at Pos) []aheadBlock {
	l.mu.Lock()
	written := l.written(at)
	l.mu.Unlock()
	if !written {
		return nil
	}
	raw, err := l.block(at)
	if err != nil {
		return nil
	}
	return []aheadBlock{{at: at, raw: len(raw)}}
}

// written reports whether the block at at was written and synced (it
// starts before the durable end). Caller holds mu.
func (l *Log) written(at Pos) bool {
	return at.File < l.durable.File || at.File == l.durable.File && at.Off < l.durable.Off
}
