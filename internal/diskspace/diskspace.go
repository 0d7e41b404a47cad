// Package diskspace guards the free space of the disk a database writes
// to. Badger writes its write-ahead log through a memory map of a sparse
// file: on a full disk a write into it is not an error a caller could
// handle but SIGBUS, which kills the process (seen on a full tmpfs). So the
// engine does not wait for a write to fail: before each batch it asks a
// Guard, which reads the free space at most every CheckEvery, and below the
// reserve it admits no more work until the space is back.
package diskspace

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// CheckEvery bounds how often a Guard reads the free space.
const CheckEvery = 50 * time.Millisecond

// Free returns the free space of the file system holding dir, as an
// unprivileged process may use it.
func Free(dir string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return st.Bavail * uint64(st.Bsize), nil
}

// LowError reports free space below the reserve.
type LowError struct {
	Free, Reserve uint64 // bytes
}

func (e *LowError) Error() string {
	return fmt.Sprintf("%d MiB free on the data dir's disk, below the reserve of %d MiB", e.Free>>20, e.Reserve>>20)
}

// Guard remembers the last reading of the free space. It is not safe for
// concurrent use: its owner (the engine's committer) calls it.
type Guard struct {
	reserve uint64
	free    func() (uint64, error)
	now     func() time.Time
	checked time.Time
	err     error // the last check's verdict
}

// New returns a guard that keeps reserve bytes free, reading the free space
// with free and the time with now.
func New(reserve uint64, free func() (uint64, error), now func() time.Time) *Guard {
	return &Guard{reserve: reserve, free: free, now: now}
}

// Check returns a *LowError when the free space is below the reserve. It
// reads the space at most every CheckEvery, unless fresh is set; between
// readings it repeats the last verdict. A free space it cannot read does
// not stop anything (the writes will tell). A nil Guard always passes.
func (g *Guard) Check(fresh bool) error {
	if g == nil {
		return nil
	}
	now := g.now()
	if since := now.Sub(g.checked); !fresh && since >= 0 && since < CheckEvery {
		return g.err
	}
	g.checked = now
	free, err := g.free()
	switch {
	case err != nil:
		g.err = nil
	case free < g.reserve:
		g.err = &LowError{Free: free, Reserve: g.reserve}
	default:
		g.err = nil
	}
	return g.err
}
