package seglog

import (
	"fmt"
	"slices"

	"github.com/dgraph-io/badger/v4"
)

// Ahead reads blocks ahead of a reader that goes through the segment files
// in order (a verify's walk of the trail, whose entries are in the blocks in
// the order they were written), on a goroutine of its own: when the reader
// enters a block, the blocks after it, up to a few, are read, checked and
// decompressed into the cache, so that the reader finds them there. A
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
			a.enter(Pos{File: p.File, Off: p.Off})
			v, err = a.l.Get(p)
		}
		if err != nil {
			return fmt.Errorf("key %q: %w", item.Key(), err)
		}
		return fn(v, pv[PtrSize:], true)
	})
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

// run keeps ahead the positions of the blocks after the reader's that it
// has read (or found in memory), in order, and reads more as the reader
// moves on.
func (a *Ahead) run() {
	defer close(a.done)
	var ahead []Pos
	for {
		var at Pos
		select {
		case <-a.stop:
			return
		case at = <-a.entry:
		}
		if i := slices.Index(ahead, at); i >= 0 {
			ahead = ahead[i+1:]
		} else {
			ahead = ahead[:0]
		}
		next := at
		if len(ahead) > 0 {
			next = ahead[len(ahead)-1]
		}
		for len(ahead) < a.n {
			select {
			case <-a.stop:
				return
			default:
			}
			if len(a.entry) > 0 {
				break // the reader moved on: start from there
			}
			end, ok := a.l.after(next)
			if !ok {
				break
			}
			ahead = append(ahead, end)
			next = end
		}
		if a.passed != nil {
			a.passed <- at
		}
	}
}

// after returns where the block after the one at at starts, having read
// that block into the cache if it is not in memory; false when there is
// none yet (at is the end of what was written) or it cannot be read.
func (l *Log) after(at Pos) (Pos, bool) {
	f, err := l.file(at.File)
	if err != nil {
		return Pos{}, false
	}
	var hb [headerSize]byte
	if n, _ := f.ReadAt(hb[:], int64(at.Off)); n < headerSize {
		return Pos{}, false
	}
	h, bad := parseHeader(hb[:])
	if bad != "" {
		return Pos{}, false
	}
	next := Pos{File: at.File, Off: at.Off + uint64(headerSize) + uint64(h.clen)}
	if next.Off >= uint64(l.opts.MaxFile) {
		next = Pos{File: at.File + 1}
	}
	l.mu.Lock()
	written := next.File < l.durable.File || next.File == l.durable.File && next.Off < l.durable.Off
	inMemory := l.inMemory(next) != nil
	l.mu.Unlock()
	if !written {
		return Pos{}, false
	}
	if !inMemory {
		if _, err := l.block(next); err != nil {
			return Pos{}, false
		}
	}
	return next, true
}
