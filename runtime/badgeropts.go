package runtime

import (
	"os"
	"path/filepath"
)

// memTableSize is the size of Badger's memtables (its default is 64 MiB).
// Flushing a memtable builds its level-0 table in memory, and with 64 MiB
// memtables that and the memtables themselves made the daemon's peak RSS
// about 0.8 GiB under load; with 32 MiB it is about 0.45 GiB at the same
// throughput (docs/performance.md).
const memTableSize = 32 << 20

// memTableSizeFor returns the memtable size to open the database in dir
// with. Badger replays a memtable's write-ahead log (a .mem file, created
// at twice the memtable size) into a memtable of the size it is opened
// with, and a log written with larger memtables may not fit a smaller one.
// So a data dir that has a larger .mem file (written by an earlier build
// that used Badger's default) keeps that size; its new logs are created at
// it too, so such a dir stays at 64 MiB memtables. Checked by hand: a
// daemon of the earlier build killed with SIGKILL under load left two 128
// MiB logs, and this build started on them, verified 60,006 entries and
// wrote recovery_completed.
func memTableSizeFor(dir string) int64 {
	size := int64(memTableSize)
	mems, _ := filepath.Glob(filepath.Join(dir, "*.mem"))
	for _, m := range mems {
		if fi, err := os.Stat(m); err == nil && fi.Size()/2 > size {
			size = fi.Size() / 2
		}
	}
	return size
}
