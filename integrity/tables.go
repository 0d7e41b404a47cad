package integrity

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/table"
	"github.com/dgraph-io/badger/v4/y"
	"golang.org/x/sys/unix"
)

// VerifyTables checks the checksum of every block of every table db holds
// and returns the first damaged table's file name and what is wrong ("" when
// none is). It reads each table file again, on its own, rather than calling
// db.VerifyChecksum: Badger v4.9.6's VerifyChecksum
// dereferences a nil block when a block fails its checksum (a panic, not an
// error), and does not say which table it was. The tables are independent:
// GOMAXPROCS goroutines read them, each a table at a time, and the damaged
// table reported is the first in db.Tables' order among those found.
//
// It is the storage step of a full Check, and what every full check costs
// at least (each block read from its file and decompressed once): wacp-bench
// times it as the verify's bound.
func VerifyTables(ctx context.Context, db *badger.DB) (where, detail string, err error) {
	return verifyTables(ctx, db, nil)
}

// verifyTables is VerifyTables; with ptrs, it also notes there the keys of
// the entries whose values are in the value log, as it reads each block,
// and the largest version of the tables it read (see storage).
func verifyTables(ctx context.Context, db *badger.DB, ptrs *pointers) (where, detail string, err error) {
	opts := db.Opts()
	topts := tableOptions(opts, true)
	tables := db.Tables()
	bad := make([]error, len(tables))
	found := make([]pointers, len(tables))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(len(tables), runtime.GOMAXPROCS(0)) {
		wg.Go(func() {
			var buf []byte // one table's copy at a time
			for i := int(next.Add(1) - 1); i < len(tables) && ctx.Err() == nil; i = int(next.Add(1) - 1) {
				ti := tables[i]
				var p *pointers
				if ptrs != nil {
					p = &found[i]
				}
				var err error
				if buf, err = verifyTable(table.NewFilename(ti.ID, opts.Dir), topts, buf, p); err != nil {
					if holds(db, ti.ID) {
						bad[i] = err
					} else if p != nil {
						p.partial = true // a running daemon's compaction replaced it since Tables
					}
				}
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return "", "", err
	}
	if ptrs != nil {
		for i, p := range found {
			ptrs.keys = append(ptrs.keys, p.keys...)
			ptrs.partial = ptrs.partial || p.partial
			ptrs.maxVersion = max(ptrs.maxVersion, tables[i].MaxVersion)
		}
		slices.SortFunc(ptrs.keys, bytes.Compare)
		ptrs.keys = slices.CompactFunc(ptrs.keys, bytes.Equal)
	}
	for i, err := range bad {
		if err != nil {
			ti := tables[i]
			return table.IDToFilename(ti.ID), fmt.Sprintf("table %s (level %d): %v", table.IDToFilename(ti.ID), ti.Level, err), nil
		}
	}
	return "", "", nil
}

// holds reports whether id is still one of db's tables.
func holds(db *badger.DB, id uint64) bool {
	for _, ti := range db.Tables() {
		if ti.ID == id {
			return true
		}
	}
	return false
}

// CheckTableFiles opens every table file (*.sst) the MANIFEST of the
// Badger database in dir lists, read-only and one at a time, as Badger itself would open it with
// opts (its index, checked against its checksum, and its last block), and
// with full also checks every block's checksum. It returns the first
// damaged table's file name and what is wrong ("" when none is).
//
// Call it before badger.Open: Badger opens tables on goroutines of its
// own, where a damaged table's panic cannot be recovered and ends the
// process; here it is recovered and reported.
func CheckTableFiles(dir string, opts badger.Options, full bool) (where, detail string) {
	live, where, detail := manifestTables(dir, opts)
	if detail != "" {
		return where, detail
	}
	names, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	if err != nil {
		return dir, err.Error()
	}
	slices.Sort(names)
	topts := tableOptions(opts, full)
	// Without full, only each table's index and last block are read: from
	// a mapping of the file, which needs no other process to be changing
	// the tables (see verifyTable). Badger's own lock on the directory
	// says none is; held shared for the check, released before Badger
	// takes it.
	mapped := false
	if !full {
		if unlock, ok := lockDir(dir); ok {
			defer unlock()
			mapped = true
		}
	}
	for _, name := range names {
		id, ok := table.ParseFileID(filepath.Base(name))
		if ok && !live[id] {
			// Not in the MANIFEST: a table a crash cut short (a flush or
			// compaction killed before it was recorded). Badger deletes
			// it on open; it holds nothing the database relies on.
			continue
		}
		var err error
		if mapped {
			err = verifyMappedTable(name, topts)
		} else {
			_, err = verifyTable(name, topts, nil, nil)
		}
		if err != nil {
			return filepath.Base(name), fmt.Sprintf("table %s: %v", filepath.Base(name), err)
		}
	}
	return "", ""
}

// manifestTables returns the IDs of the tables the MANIFEST of the
// database in dir lists: the tables Badger opens. A directory without a
// MANIFEST holds no database yet (none). A MANIFEST that cannot be read is
// reported as damaged, with its name as where.
func manifestTables(dir string, opts badger.Options) (live map[uint64]bool, where, detail string) {
	f, err := os.Open(filepath.Join(dir, badger.ManifestFilename))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", ""
	}
	if err != nil {
		return nil, badger.ManifestFilename, err.Error()
	}
	defer f.Close()
	defer func() {
		if p := recover(); p != nil {
			live, where, detail = nil, badger.ManifestFilename, fmt.Sprintf("%s: damaged: badger cannot read it (%v)", badger.ManifestFilename, p)
		}
	}()
	m, _, err := badger.ReplayManifestFile(f, opts.ExternalMagicVersion, opts)
	if err != nil {
		return nil, badger.ManifestFilename, fmt.Sprintf("%s: damaged: %v", badger.ManifestFilename, err)
	}
	live = make(map[uint64]bool, len(m.Tables))
	for id := range m.Tables {
		live[id] = true
	}
	return live, "", ""
}

// tableOptions returns the options to open a table of a database opened
// with opts; with full, every block's checksum is checked.
func tableOptions(opts badger.Options, full bool) table.Options {
	mode := options.NoVerification
	if full {
		mode = options.OnTableRead
	}
	return table.Options{ReadOnly: true, ChkMode: mode, BlockSize: opts.BlockSize,
		BloomFalsePositive: opts.BloomFalsePositive, Compression: opts.Compression, ZSTDCompressionLevel: opts.ZSTDCompressionLevel}
}

// lockDir takes a shared lock on dir, which Badger locks exclusively while
// a process has the database open; it reports false when it cannot (dir
// is open elsewhere, or not there).
func lockDir(dir string) (unlock func(), ok bool) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, false
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, false
	}
	return func() { unix.Flock(int(f.Fd()), unix.LOCK_UN); f.Close() }, true
}

// verifyTable opens the table file at path as Badger would open the table
// (its index, checked against its checksum, and its last block; with
// options.OnTableRead every block's checksum too), from a copy of the file
// it reads into buf (grown when the file does not fit; returned for the
// next table). A panic inside Badger is returned as an error. With ptrs,
// it notes there the keys whose values are in the value log (openTable).
//
// A copy, not a mapping of the file (verifyMappedTable), because a running
// daemon's compaction truncates a table file it deletes, and touching a
// mapping of a truncated file is a fault (SIGBUS); debug.SetPanicOnFault
// turns one in Go code into a panic, but one inside the assembly of the
// block decompressor ends the process ("missing stackmap": CI hit it). A
// table deleted meanwhile is short or empty here and fails, and
// VerifyTables then finds the table gone from the database and skips it.
func verifyTable(path string, topts table.Options, buf []byte, ptrs *pointers) ([]byte, error) {
	f, size, err := openTableFile(path)
	if err != nil {
		return buf, err
	}
	defer f.Close()
	if int64(cap(buf)) < size {
		buf = make([]byte, size)
	}
	n, err := io.ReadFull(f, buf[:size])
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return buf, fmt.Errorf("read %s: %w", filepath.Base(path), err)
	}
	return buf, openTable(path, buf[:n], topts, ptrs)
}

// verifyMappedTable is verifyTable through a read-only mapping of the
// file, so that only what is checked is read (the whole file was copied
// before: 0.6 s of a 1.1 s start with 330 MB of tables). That is for a
// file no process is changing (see verifyTable for why).
func verifyMappedTable(path string, topts table.Options) error {
	m, err := mapFile(path)
	if err != nil {
		return err
	}
	defer unix.Munmap(m)
	return openTable(path, m, topts, nil)
}

// openTable opens the table of the file at path from its content data and
// with options.OnTableRead checks every block's checksum; with ptrs too,
// it does so as it reads every entry, and notes in ptrs the keys of those
// whose values are in the value log. A panic inside Badger is returned as
// an error.
func openTable(path string, data []byte, topts table.Options, ptrs *pointers) (err error) {
	base := filepath.Base(path)
	id, ok := table.ParseFileID(base)
	if !ok {
		return fmt.Errorf("%s is not a table file name", base)
	}
	defer func() {
		if p := recover(); p != nil {
			// Badger names the file through the table's descriptor, which
			// an in-memory table does not have: its error paths panic
			// instead.
			err = fmt.Errorf("damaged: badger cannot read it (%v)", p)
		}
	}()
	if ptrs != nil && topts.ChkMode == options.OnTableRead {
		// Each block's checksum checked as the iterator reads it.
		topts.ChkMode = options.OnBlockRead
	}
	t, err := table.OpenInMemoryTable(data, id, &topts)
	if err != nil {
		return err
	}
	switch {
	case ptrs != nil:
		return ptrs.scan(t)
	case topts.ChkMode == options.OnTableRead:
		return t.VerifyChecksum()
	}
	return nil
}

// bitValuePointer is the bit of an entry's meta by which Badger marks a
// value kept in its value log (the entry holds a pointer to it): Badger's
// own constant, in its value.go, is not exported.
const bitValuePointer = 1 << 1

// pointers are the keys (without their versions) of table entries whose
// values are in the value log.
type pointers struct {
	keys [][]byte
	// partial is set when a table's entries could not all be read,
	// though its blocks pass their checksums, or a table was gone before
	// it was read: the keys may be missing some.
	partial bool
	// maxVersion is the largest version of the tables read (each table's
	// MaxVersion in db.Tables): every entry not read is newer (storage).
	maxVersion uint64
}

// scan reads every entry of t, each block checked against its checksum
// as it is read, and notes the keys of those whose values are in the
// value log. It returns the error of a block that fails its checksum.
func (p *pointers) scan(t *table.Table) error {
	it := t.NewIterator(table.NOCACHE)
	defer it.Close()
	var n uint32
	for it.Rewind(); it.Valid(); it.Next() {
		n++
		if it.Value().Meta&bitValuePointer != 0 {
			p.keys = append(p.keys, bytes.Clone(y.ParseKey(it.Key())))
		}
	}
	if n != t.KeyCount() {
		// The iterator stops at a block it cannot read as at the end:
		// the checksums say which it was.
		if err := t.VerifyChecksum(); err != nil {
			return err
		}
		p.partial = true
	}
	return nil
}

// mapFile maps the file at path read-only.
func mapFile(path string) ([]byte, error) {
	f, size, err := openTableFile(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	base := filepath.Base(path)
	if size == 0 {
		return nil, fmt.Errorf("damaged: %s is empty", base)
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map %s: %w", base, err)
	}
	return m, nil
}

// openTableFile opens the file at path for reading and returns its size.
func openTableFile(path string) (*os.File, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("read %s: %w", filepath.Base(path), err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("read %s: %w", filepath.Base(path), err)
	}
	return f, fi.Size(), nil
}
