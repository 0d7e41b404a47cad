//go:build !linux

package seglog

import "os"

// datasync is f.Sync where fdatasync(2) is not available.
func datasync(f *os.File) error { return f.Sync() }
