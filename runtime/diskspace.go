package runtime

import (
	"fmt"

	"github.com/wacpd/wacpd/internal/diskspace"
)

// Disk space guard (package diskspace): below Config.MinFreeBytes the
// engine admits no more work, as in degraded mode (degraded.go), until the
// space is back; the probe that ends degraded mode checks it too. The
// default reserve, 128 MiB, covers what Badger may still need: the rest of
// the current memtable's log and the table its flush writes, or the next
// log (memtables are 32 MiB, or 64 MiB in older data dirs: dbupkeep.MemTableSizeFor).

// defaultMinFree is the reserve when Config.MinFreeBytes is zero.
const defaultMinFree = 128 << 20

// spaceGuard is the committer's view of the free space.
type spaceGuard struct{ g *diskspace.Guard }

func newSpaceGuard(cfg Config) spaceGuard {
	if cfg.InMemory || cfg.MinFreeBytes < 0 {
		return spaceGuard{}
	}
	reserve := uint64(cfg.MinFreeBytes)
	if reserve == 0 {
		reserve = defaultMinFree
	}
	free := cfg.freeSpace
	if free == nil {
		dir := cfg.DataDir
		free = func() (uint64, error) { return diskspace.Free(dir) }
	}
	return spaceGuard{diskspace.New(reserve, free, cfg.Now)}
}

// check reports an error wrapping ErrStorage when the free space is below
// the reserve (diskspace.Guard.Check).
func (s spaceGuard) check(fresh bool) error {
	if err := s.g.Check(fresh); err != nil {
		return fmt.Errorf("%w: %w", ErrStorage, err)
	}
	return nil
}

// DiskRoom checks now that the data dir's disk has more free space than
// the engine's reserve (Config.MinFreeBytes); nil when it has, or when the
// guard is off.
func (e *Engine) DiskRoom() error { return newSpaceGuard(e.cfg).check(true) }
