package seglog

import (
	"os"

	"golang.org/x/sys/unix"
)

// datasync flushes f's data, and of its metadata only what reading the
// data back needs: on a file whose blocks are already allocated (written
// with zeros ahead, see Log.Write) no journal commit.
func datasync(f *os.File) error { return unix.Fdatasync(int(f.Fd())) }
