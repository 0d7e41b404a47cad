package bench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/nats-io/nats-server/v2/server"
	"golang.org/x/sys/unix"

	"github.com/wacpd/wacpd/wire"
)

// The volume and contract bounds: what storing the daemon's writes costs,
// and what the wire contract's transport adds (Bounds.Volume,
// Bounds.Contract).

// Shape is what the volume bound writes per request: Puts keys of
// Value-byte values, and Segment bytes appended to a segment file (synced
// before the transaction, which Badger then writes without syncing, as the
// daemon's), from the daemon's writes per checkpoint (Written).
type Shape struct {
	Puts    int `json:"puts"`
	Value   int `json:"value_bytes"`
	Segment int `json:"segment_bytes,omitempty"`
}

// volumeKeyLen is the length of the volume bound's keys: a slot byte and a
// sequence number.
const volumeKeyLen = 9

// shapeOf returns the shape of w's writes per checkpoint, or nil if w has
// none: Badger counts a key with its 8-byte version and 2 bytes of meta.
func shapeOf(w *Written) *Shape {
	if w == nil || w.PutsPerCheckpoint < 1 {
		return nil
	}
	puts := int(w.PutsPerCheckpoint + 0.5)
	return &Shape{Puts: puts, Value: max(int(w.BytesPerCheckpoint)/puts-(volumeKeyLen+8)-2, 1), Segment: int(w.SegmentPerCheckpoint + 0.5)}
}

// measureVolume runs the volume and contract bounds in dir, as
// measureBounds runs the others.
func measureVolume(ctx context.Context, dir string, clients, size int, d time.Duration, n, window int, shape Shape) (volume, contract BoundRun, err error) {
	msgs, err := newBoundMessages(size)
	if err != nil {
		return BoundRun{}, BoundRun{}, err
	}
	spec := boundSpec{store: storeGrouped, shape: shape, window: window}
	if volume, err = runBound(ctx, filepath.Join(dir, "volume"), clients, msgs, d, n, spec); err != nil {
		return BoundRun{}, BoundRun{}, fmt.Errorf("volume bound: %w", err)
	}
	spec.contract = true
	if contract, err = runBound(ctx, filepath.Join(dir, "contract"), clients, msgs, d, n, spec); err != nil {
		return BoundRun{}, BoundRun{}, fmt.Errorf("contract bound: %w", err)
	}
	return volume, contract, nil
}

// maxGroupBytes bounds what one group writes, well inside Badger's
// transaction limit (15% of its 64 MiB memtables).
const maxGroupBytes = 4 << 20

// commitGroups is the volume bound's committer: it takes every request
// waiting (at least one), writes shape.Puts values of shape.Value bytes
// for each in one transaction, and hands the transaction to Badger without
// waiting for it, so the next group is built while one is written; each
// group's requests are answered once its write is done. With a segment
// file, its sync is the group's only one and makes the group durable: its
// requests are answered then, before Badger's commit, as the daemon's.
func (s *boundServer) commitGroups(db *badger.DB, shape Shape, answer func(boundReq)) {
	var seq uint64
	for {
		var group []boundReq
		select {
		case r := <-s.queue:
			group = append(group, r)
		case <-s.done:
			return
		}
	more:
		for (len(group)+1)*shape.Puts*(shape.Value+volumeKeyLen+10) <= maxGroupBytes {
			select {
			case r := <-s.queue:
				group = append(group, r)
			default:
				break more
			}
		}
		txn := db.NewTransaction(true)
		var err error
		var off int64 // where the group's values start in the segment
		if s.seg != nil {
			off, err = s.appendSegment(group, shape)
		}
		for _, r := range group {
			for slot := range shape.Puts {
				if err != nil {
					break
				}
				seq++
				key := binary.BigEndian.AppendUint64([]byte{byte(slot)}, seq)
				var val []byte
				if s.pointers {
					val = binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint64(nil, uint64(off)), uint32(shape.Value))
					off += int64(shape.Value)
				} else {
					val = fill(r.data, shape.Value)
				}
				err = txn.Set(key, val)
			}
		}
		finish := func(err error) {
			for _, r := range group {
				if err != nil {
					s.fail(err)
				} else {
					s.stored.Add(1)
					answer(r)
				}
				s.handlers.Done()
			}
		}
		if err != nil {
			txn.Discard()
			finish(err)
			continue
		}
		if s.seg != nil {
			// As the daemon's: the segment's sync made the group
			// durable, and its requests are answered before Badger's
			// commit, which then runs unsynced.
			finish(nil)
			txn.CommitWith(func(err error) {
				if err != nil {
					s.fail(err)
				}
			})
			continue
		}
		txn.CommitWith(finish)
	}
}

// appendSegment appends to the segment file the group's values (with
// pointers) or its shape.Segment bytes per request, makes them durable,
// and returns the offset they start at.
func (s *boundServer) appendSegment(group []boundReq, shape Shape) (int64, error) {
	var buf []byte
	for _, r := range group {
		if s.pointers {
			for range shape.Puts {
				buf = append(buf, fill(r.data, shape.Value)...)
			}
		} else {
			buf = append(buf, fill(r.data, shape.Segment)...)
		}
	}
	return s.seg.append(buf)
}

// segFile is an append-only file written as internal/seglog writes its
// segments: zeros written ahead of the data, 4 MiB at a time, so that a
// write overwrites allocated bytes and fdatasync needs no journal commit.
type segFile struct {
	f           *os.File
	end, zeroed int64
}

// close cuts the zeros after the data and closes the file.
func (s *segFile) close() error {
	return errors.Join(s.f.Truncate(s.end), s.f.Close())
}

// append writes b at the end and syncs it, and returns where it starts.
func (s *segFile) append(b []byte) (int64, error) {
	at := s.end
	if need := at + int64(len(b)); need > s.zeroed {
		to := max(need, s.zeroed+4<<20)
		if _, err := s.f.WriteAt(make([]byte, to-s.zeroed), s.zeroed); err != nil {
			return 0, err
		}
		if err := s.f.Sync(); err != nil {
			return 0, err
		}
		s.zeroed = to
	}
	if _, err := s.f.WriteAt(b, at); err != nil {
		return 0, err
	}
	s.end += int64(len(b))
	return at, unix.Fdatasync(int(s.f.Fd()))
}

// fill returns n bytes of data, repeated as needed: values as compressible
// as the requests.
func fill(data []byte, n int) []byte {
	out := make([]byte, n)
	for i := 0; i < n && len(data) > 0; i += copy(out[i:], data) {
	}
	return out
}

// boundFeedSize is the size of a live-feed message of the contract bound:
// a trail entry.
const boundFeedSize = 700

// boundServerToken is the token of the bound server's own connections.
const boundServerToken = "bound-server"

// requesterToken is requester i's token.
func requesterToken(i int) string { return "bound-requester-" + strconv.Itoa(i) }

// boundAuth authenticates the contract bound's connections by token, as
// the wire contract asks (wire-v1 §2): requester i may publish only to
// bound.req.<i> and subscribe only under its token's inbox prefix; the
// server's connections are not restricted. Any token of the form is taken
// (the bound measures the cost, not the policy). The daemon also puts each
// principal in an account of its own (docs/security.md); the contract does
// not ask for that, so the bound does not pay it.
type boundAuth struct{}

// Check implements server.Authentication.
func (boundAuth) Check(c server.ClientAuthentication) bool {
	tok := c.GetOpts().Token
	if tok == boundServerToken {
		c.RegisterUser(&server.User{Username: tok})
		return true
	}
	i, ok := strings.CutPrefix(tok, "bound-requester-")
	if !ok {
		return false
	}
	c.RegisterUser(&server.User{Username: tok, Permissions: &server.Permissions{
		Publish:   &server.SubjectPermission{Allow: []string{"bound.req." + i}},
		Subscribe: &server.SubjectPermission{Allow: []string{wire.InboxPrefix(tok) + ".>"}},
	}})
	return true
}
