package traillog

import "github.com/wacpd/wacpd/trail"

// LocalHead returns workspace ws's local chain head as the batch sees it:
// with the entries of this batch and of the batch it continues. The
// liveness monitor reads the last entry's id and timestamp from it.
func (b *Batch) LocalHead(ws string) trail.Head { return b.localHead(ws) }
