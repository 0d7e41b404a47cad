package seglog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/dgraph-io/badger/v4"
)

// TestAheadReadsTheNextBlocks: a reader going through the blocks in order
// finds the blocks after the one it is in already in memory, read from the
// files by Ahead's goroutine, across files; a block Ahead cannot read
// (damaged) stops it, and the reader's own read reports the damage.
func TestAheadReadsTheNextBlocks(t *testing.T) {
	dir := t.TempDir()
	r := openRig(t, dir, Options{MaxFile: 4096})
	var blocks []Pos
	for b := range 8 {
		r.commit(values(b, 10))
		blocks = append(blocks, r.last.at)
	}
	if blocks[7].File < 2 {
		t.Fatalf("the blocks fill %d files; the test wants more than one", blocks[7].File)
	}
	r.close()
	seg := filepath.Join(dir, Dir, fileName(blocks[6].File))
	data, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	data[blocks[6].Off+headerSize+10] ^= 0x40 // block 6's body
	if err := os.WriteFile(seg, data, 0o600); err != nil {
		t.Fatal(err)
	}
	r = openRig(t, dir, Options{MaxFile: 4096})
	if in := r.inMemory(blocks); len(in) != 0 {
		t.Fatalf("blocks %v in memory after the open", in)
	}
	passed := make(chan Pos)
	a := r.l.newAhead(3, passed)
	defer a.Close()
	if err := r.readThrough(a, "v/0/0"); err != nil {
		t.Fatal(err)
	}
	if at := <-passed; at != blocks[0] {
		t.Fatalf("Ahead went past %v, the reader is in %v", at, blocks[0])
	}
	if in, want := r.inMemory(blocks), []int{0, 1, 2, 3, 4, 5}; !slices.Equal(in, want) {
		t.Fatalf("blocks %v in memory, want %v (6 is damaged)", in, want)
	}
	var de *DamageError
	if err := r.readThrough(a, "v/6/0"); !errors.As(err, &de) {
		t.Fatalf("the reader's read of a damaged block: %v", err)
	}
}

// TestAheadStopsAhead: Ahead reads at most aheadMax blocks ahead of the
// reader, and more as the reader moves on.
func TestAheadStopsAhead(t *testing.T) {
	dir := t.TempDir()
	r := openRig(t, dir, Options{})
	var blocks []Pos
	for b := range aheadMax + 20 {
		r.commit(map[string]string{fmt.Sprintf("v/%d/0", b): "x"})
		blocks = append(blocks, r.last.at)
	}
	r.close()
	r = openRig(t, dir, Options{})
	passed := make(chan Pos)
	a := r.l.newAhead(8, passed)
	defer a.Close()
	for _, first := range []int{0, 10} {
		if err := r.readThrough(a, fmt.Sprintf("v/%d/0", first)); err != nil {
			t.Fatal(err)
		}
		<-passed
		in := r.inMemory(blocks)
		if want := first + aheadMax; in[len(in)-1] != want {
			t.Fatalf("the reader in block %d: blocks up to %d in memory, want up to %d", first, in[len(in)-1], want)
		}
	}
}

// inMemory returns the indexes of blocks in memory.
func (r *rig) inMemory(blocks []Pos) (in []int) {
	r.l.mu.Lock()
	defer r.l.mu.Unlock()
	for i, at := range blocks {
		if r.l.inMemory(at) != nil {
			in = append(in, i)
		}
	}
	return in
}

// readThrough reads key's value through a.
func (r *rig) readThrough(a *Ahead, key string) error {
	return r.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get([]byte(key))
		if err != nil {
			return err
		}
		return a.ValueExtra(item, func([]byte, []byte, bool) error { return nil })
	})
}

// TestBlockReadOnce: readers that want a block another is reading from its
// file wait for it rather than read it again (Ahead and the walk it reads
// for want the same blocks).
func TestBlockReadOnce(t *testing.T) {
	dir := t.TempDir()
	r := openRig(t, dir, Options{})
	r.commit(values(0, 10))
	at := r.last.at
	r.close()
	r = openRig(t, dir, Options{})
	const readers = 8
	var entered sync.WaitGroup
	entered.Add(readers)
	testHooks.enter = entered.Done
	testHooks.read = entered.Wait // the first read waits until every reader is in block
	defer func() { testHooks.enter, testHooks.read = nil, nil }()
	before := readBlocks.Value()
	var done sync.WaitGroup
	for range readers {
		done.Go(func() {
			if _, err := r.l.block(at); err != nil {
				t.Error(err)
			}
		})
	}
	done.Wait()
	if n := readBlocks.Value() - before; n != 1 {
		t.Fatalf("%d readers read the block %d times from the file, want once", readers, n)
	}
}

// TestAheadRunIsReadOnce: a reader that wants a block of the run Ahead is
// reading waits for it rather than reading it from the file a second time
// (a verify's walk catches up with Ahead when both share two busy cores).
func TestAheadRunIsReadOnce(t *testing.T) {
	r, blocks := reopened(t, 6)
	wanted := blocks[1:]
	var entered sync.WaitGroup
	entered.Add(len(wanted))
	marked := make(chan struct{})
	testHooks.run = func() {
		close(marked)
		entered.Wait() // every reader is in block before the run is decoded
	}
	defer func() { testHooks.enter, testHooks.run = nil, nil }()
	before := readBlocks.Value()
	ran := make(chan []aheadBlock, 1)
	go func() { ran <- r.l.readRun(blocks[0], make([]byte, runBytes), aheadMax, false) }()
	<-marked
	testHooks.enter = entered.Done
	var done sync.WaitGroup
	for _, at := range wanted {
		done.Go(func() {
			if _, err := r.l.block(at); err != nil {
				t.Error(err)
			}
		})
	}
	done.Wait()
	if got := <-ran; len(got) != len(wanted) {
		t.Fatalf("the run read %d blocks, want %d", len(got), len(wanted))
	}
	if n := readBlocks.Value() - before; n != int64(len(wanted)) {
		t.Fatalf("%d blocks read %d times from the files, want once each", len(wanted), n)
	}
	if in := r.inMemory(blocks); !slices.Equal(in, []int{1, 2, 3, 4, 5}) {
		t.Fatalf("blocks %v in memory, want 1-5", in)
	}
}

// TestAheadReaderReadsARun: a reader that finds its block neither in
// memory nor being read reads it with the blocks after it, in one read of
// the file, rather than alone.
func TestAheadReaderReadsARun(t *testing.T) {
	r, blocks := reopened(t, 6)
	alone := 0
	testHooks.read = func() { alone++ }
	defer func() { testHooks.read = nil }()
	a := &Ahead{l: r.l, n: 1, entry: make(chan Pos, 1)} // no goroutine: the reader alone
	if err := r.readThrough(a, "v/0/0"); err != nil {
		t.Fatal(err)
	}
	if in := r.inMemory(blocks); !slices.Equal(in, []int{0, 1, 2, 3, 4, 5}) || alone != 0 {
		t.Fatalf("after the reader's first read: blocks %v in memory, %d read alone; want 0-5 and none", in, alone)
	}
	for b := range 6 {
		if err := r.readThrough(a, fmt.Sprintf("v/%d/3", b)); err != nil {
			t.Fatal(err)
		}
	}
	if alone != 0 {
		t.Fatalf("%d blocks read alone", alone)
	}
}

// reopened returns a rig of n blocks of ten values each, written, closed
// and opened again (none in memory), and the blocks' positions.
func reopened(t *testing.T, n int) (*rig, []Pos) {
	t.Helper()
	dir := t.TempDir()
	r := openRig(t, dir, Options{})
	var blocks []Pos
	for b := range n {
		r.commit(values(b, 10))
		blocks = append(blocks, r.last.at)
	}
	r.close()
	return openRig(t, dir, Options{}), blocks
}
