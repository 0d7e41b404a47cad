package seglog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/dgraph-io/badger/v4"
)

// scanTail finds the whole blocks of format 2 past end, in the order they
// were written, and where the last ends (stop; end when there is none).
// nums are the files in dir. A block is whole when its header, its length
// and its checksum hold; the first that is not (torn by a crash, or the
// zeros written ahead of the blocks), or a block of format 1 (written when
// Badger synced every commit itself: past the end it never committed),
// ends the tail. A file that ends exactly after a block goes on in the
// next file, as Write goes on.
func scanTail(dir string, end Pos, nums []uint32) (tail []Pos, stop Pos, err error) {
	at := end
	if at.File == 0 {
		at = Pos{File: 1}
	}
	stop = end
	for slices.Contains(nums, at.File) {
		f, err := os.Open(filepath.Join(dir, fileName(at.File)))
		if err != nil {
			return nil, end, fmt.Errorf("segments: %w", err)
		}
		found := 0
		next, eof, err := wholeBlocks(f, at.Off, func(off uint64) {
			tail = append(tail, Pos{File: at.File, Off: off})
			found++
		})
		f.Close()
		if err != nil {
			return nil, end, err
		}
		if found > 0 || at.File == end.File {
			stop = Pos{File: at.File, Off: next}
		}
		if !eof || found == 0 && at.File != end.File {
			break
		}
		at = Pos{File: at.File + 1}
	}
	return tail, stop, nil
}

// wholeBlocks calls fn with the offset of each whole block of format 2 in
// f from off on (readBody checks each), and returns where the last ends and
// whether f ends there.
func wholeBlocks(f *os.File, off uint64, fn func(uint64)) (next uint64, eof bool, err error) {
	st, err := f.Stat()
	if err != nil {
		return off, false, fmt.Errorf("segments: %w", err)
	}
	for size := uint64(st.Size()); off < size; {
		h, _, total, err := readBody(f, off)
		var de *DamageError
		switch {
		case errors.As(err, &de) || err == nil && h.format == 1:
			return off, false, nil
		case err != nil:
			return off, false, err
		}
		fn(off)
		off += uint64(total)
	}
	return off, true, nil
}

// Replayed says what Replay redid.
type Replayed struct {
	Blocks, Writes int
}

// Replay redoes, in db, the writes of the blocks written past the end db
// records (Recovered.Replay of them at Open), one transaction per block
// with the end moved past it, in the order they were written, then syncs
// db. Each block was written and synced before its batch was answered, and
// is its durable record: Badger, which writes without syncing, may have
// lost the commit in a crash (it keeps a prefix of its commits), or the
// commit failed after the block was written. Redoing a block whose commit
// landed changes nothing. A writable Log must be replayed after Open before
// it seals a block; the engine replays again after a failed batch, before
// it reloads its state. A block that passes its checksum but does not
// decode is damage (*DamageError): nothing is redone past it. Replay must
// not run while a block is being built or written.
func (l *Log) Replay(db *badger.DB) (Replayed, error) {
	var r Replayed
	if l == nil {
		return r, nil
	}
	l.mu.Lock()
	tail, durable := l.tail, l.durable
	l.mu.Unlock()
	if tail == nil {
		// Open's tail was redone: what lies past the end now is blocks
		// written since whose commits failed.
		end, err := End(db)
		if err != nil {
			return r, fmt.Errorf("segments: the end: %w", err)
		}
		nums, err := list(l.dir)
		if err != nil {
			return r, fmt.Errorf("segments: %w", err)
		}
		if tail, _, err = scanTail(l.dir, end, nums); err != nil {
			return r, err
		}
	}
	for _, at := range tail {
		if at.File > durable.File || at.File == durable.File && at.Off >= durable.Off {
			break // not this Log's: zeros ahead, or a block being written
		}
		f, err := l.file(at.File)
		if err != nil {
			return r, err
		}
		h, body, n, err := readBody(f, at.Off)
		if err != nil {
			return r, err
		}
		redo, err := l.decodeRedoFrame(h, body)
		if err != nil {
			return r, &DamageError{File: f.Name(), Off: at.Off, Detail: err.Error()}
		}
		next := Pos{File: at.File, Off: at.Off + uint64(n)}
		txn := db.NewTransaction(true)
		err = decodeRedo(redo, func(op, meta byte, key, value []byte) error {
			r.Writes++
			if op == opDelete {
				return txn.Delete(key)
			}
			return txn.SetEntry(badger.NewEntry(key, value).WithMeta(meta))
		})
		if err == nil {
			err = txn.Set(KeyEnd, appendPos(nil, next))
		}
		if err == nil {
			err = txn.Commit()
		}
		txn.Discard()
		if errors.Is(err, ErrRedo) {
			return r, &DamageError{File: f.Name(), Off: at.Off, Detail: err.Error()}
		}
		if err != nil {
			return r, fmt.Errorf("segments: redo the block at %s:%d: %w", fileName(at.File), at.Off, err)
		}
		r.Blocks++
	}
	if r.Blocks > 0 {
		if err := db.Sync(); err != nil {
			return r, fmt.Errorf("segments: sync the database after the redo: %w", err)
		}
	}
	l.mu.Lock()
	l.tail = nil
	l.mu.Unlock()
	return r, nil
}
