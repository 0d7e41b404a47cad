package integrity

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/table"
	"github.com/dgraph-io/ristretto/v2/z"
)

// verifyTables checks the checksum of every block of every table db holds
// and returns the first damaged table's file name and what is wrong ("" when
// none is). It opens each table file again, on its own and read-only,
// rather than calling db.VerifyChecksum: Badger v4.9.6's VerifyChecksum
// dereferences a nil block when a block fails its checksum (a panic, not an
// error), and does not say which table it was.
func verifyTables(db *badger.DB) (where, detail string) {
	opts := db.Opts()
	topts := tableOptions(opts, true)
	for _, ti := range db.Tables() {
		err := verifyTable(table.NewFilename(ti.ID, opts.Dir), topts)
		if errors.Is(err, fs.ErrNotExist) {
			continue // a running daemon's compaction replaced it since Tables
		}
		if err != nil {
			return table.IDToFilename(ti.ID), fmt.Sprintf("table %s (level %d): %v", table.IDToFilename(ti.ID), ti.Level, err)
		}
	}
	return "", ""
}

// CheckTableFiles opens every table file (*.sst) of the Badger database
// in dir, read-only and one at a time, as Badger itself would open it with
// opts (its index, checked against its checksum, and its last block), and
// with full also checks every block's checksum. It returns the first
// damaged table's file name and what is wrong ("" when none is).
//
// Call it before badger.Open: Badger opens tables on goroutines of its
// own, where a damaged table's panic cannot be recovered and ends the
// process; here it is recovered and reported.
func CheckTableFiles(dir string, opts badger.Options, full bool) (where, detail string) {
	names, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	if err != nil {
		return dir, err.Error()
	}
	slices.Sort(names)
	topts := tableOptions(opts, full)
	for _, name := range names {
		if err := verifyTable(name, topts); err != nil {
			return filepath.Base(name), fmt.Sprintf("table %s: %v", filepath.Base(name), err)
		}
	}
	return "", ""
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

// verifyTable opens the table file at path with topts (with
// options.OnTableRead every block's checksum is checked) and closes it
// again; a panic inside Badger is returned as an error.
func verifyTable(path string, topts table.Options) (err error) {
	mf, err := z.OpenMmapFile(path, os.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", filepath.Base(path), err)
	}
	defer func() {
		if p := recover(); p != nil {
			_ = mf.Close(-1)
			err = fmt.Errorf("badger panicked reading it: %v", p)
		}
	}()
	t, err := table.OpenTable(mf, topts)
	if err != nil {
		return err // OpenTable has closed mf
	}
	// Close the file without DecrRef, which deletes a table whose count
	// reaches zero.
	return t.MmapFile.Close(-1)
}
