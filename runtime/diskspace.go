package runtime

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// Disk space guard. Badger writes its write-ahead log through a memory map
// of a sparse file: on a full disk a write into it is not an error the
// engine could handle but SIGBUS, which kills the process (seen on a full
// tmpfs). So the engine does not wait for a write to fail: before each batch
// it checks the data dir's free space (at most every spaceCheckEvery), and
// below Config.MinFreeBytes it admits no more work, as in degraded mode
// (degraded.go), until the space is back; the probe that ends degraded mode
// checks it too. The default reserve, 128 MiB, covers what Badger may still
// need: the rest of the current memtable's log and the table its flush
// writes, or the next log (memtables are 32 MiB, or 64 MiB in older data
// dirs: badgeropts.go).

// defaultMinFree is the reserve when Config.MinFreeBytes is zero.
const defaultMinFree = 128 << 20

// spaceCheckEvery bounds how often the free space is read.
const spaceCheckEvery = 50 * time.Millisecond

// freeBytes returns the free space of the file system holding dir, as an
// unprivileged process may use it.
func freeBytes(dir string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return st.Bavail * uint64(st.Bsize), nil
}

// spaceGuard is the committer's view of the free space.
type spaceGuard struct {
	min     uint64
	free    func() (uint64, error)
	now     func() time.Time // Config.Now
	checked time.Time
	err     error // the last check's verdict
}

func newSpaceGuard(cfg Config) *spaceGuard {
	if cfg.InMemory || cfg.MinFreeBytes < 0 {
		return nil
	}
	g := &spaceGuard{min: uint64(cfg.MinFreeBytes), free: cfg.freeSpace, now: cfg.Now}
	if g.min == 0 {
		g.min = defaultMinFree
	}
	if g.free == nil {
		dir := cfg.DataDir
		g.free = func() (uint64, error) { return freeBytes(dir) }
	}
	return g
}

// check reports an error wrapping ErrStorage when the free space is below
// the reserve; it reads the space at most every spaceCheckEvery unless
// fresh is set. A nil guard always passes.
func (g *spaceGuard) check(fresh bool) error {
	if g == nil {
		return nil
	}
	now := g.now()
	if !fresh && now.Sub(g.checked) >= 0 && now.Sub(g.checked) < spaceCheckEvery {
		return g.err
	}
	g.checked = now
	free, err := g.free()
	switch {
	case err != nil:
		g.err = nil // an unreadable figure does not stop the engine; writes will tell
	case free < g.min:
		g.err = fmt.Errorf("%w: %d MiB free on the data dir's disk, below the reserve of %d MiB", ErrStorage, free>>20, g.min>>20)
	default:
		g.err = nil
	}
	return g.err
}

// DiskRoom checks now that the data dir's disk has more free space than
// the engine's reserve (Config.MinFreeBytes); nil when it has, or when the
// guard is off.
func (e *Engine) DiskRoom() error { return newSpaceGuard(e.cfg).check(true) }
