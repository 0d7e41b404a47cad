package integrity

import (
	"fmt"
	"os"
	"path/filepath"

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
	topts := table.Options{ReadOnly: true, ChkMode: options.OnTableRead, BlockSize: opts.BlockSize,
		BloomFalsePositive: opts.BloomFalsePositive, Compression: opts.Compression, ZSTDCompressionLevel: opts.ZSTDCompressionLevel}
	for _, ti := range db.Tables() {
		if err := verifyTable(table.NewFilename(ti.ID, opts.Dir), topts); err != nil {
			return table.IDToFilename(ti.ID), fmt.Sprintf("table %s (level %d): %v", table.IDToFilename(ti.ID), ti.Level, err)
		}
	}
	return "", ""
}

// verifyTable opens the table file at path with every block's checksum
// checked (options.OnTableRead) and closes it again; a panic inside Badger
// is returned as an error.
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
