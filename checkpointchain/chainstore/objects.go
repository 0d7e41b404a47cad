package chainstore

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/casstore"
	"github.com/wacpd/wacpd/casstore/badgerstore"
	"github.com/wacpd/wacpd/checkpointchain"
	"github.com/wacpd/wacpd/internal/blake3x"
	"github.com/wacpd/wacpd/internal/seglog"
)

// The claims' objects: where those kept in the segment files are (one scan
// of cas/, or a point read while it runs), how they are read (from the
// block the walk has just read, or at the end, block by block in the
// files' order) and checked, their BLAKE3 sums taken side by side.

// located is where an object kept in the segment files is.
type located struct {
	ref casstore.Ref
	ptr seglog.Ptr
}

// locIndex finds an object's pointer among locs, in digest order: starts[k]
// is the first whose digest's first two bytes are k or more.
type locIndex struct {
	locs   []located
	starts []int32
}

func (x *locIndex) find(r casstore.Ref) (seglog.Ptr, bool) {
	sum := r.Sum()
	k := int(sum[0])<<8 | int(sum[1])
	for _, l := range x.locs[x.starts[k]:x.starts[k+1]] {
		if l.ref == r {
			return l.ptr, true
		}
	}
	return seglog.Ptr{}, false
}

// locate returns the pointers of the objects kept in the segment files.
func locate(txn *badger.Txn) *locIndex {
	prefix := []byte(badgerstore.KeyPrefix)
	it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
	defer it.Close()
	x := &locIndex{starts: make([]int32, 1<<16+1)}
	for it.Rewind(); it.Valid(); it.Next() {
		ref, err := casstore.FromBytes(it.Item().Key()[len(prefix):])
		if err != nil {
			continue
		}
		if p, ok, err := seglog.PointerOf(it.Item()); err == nil && ok {
			x.locs = append(x.locs, located{ref, p})
		}
	}
	// In key order, so in digest order: count each prefix, then sum.
	for _, l := range x.locs {
		sum := l.ref.Sum()
		x.starts[int(sum[0])<<8|int(sum[1])+1]++
	}
	for k := 1; k < len(x.starts); k++ {
		x.starts[k] += x.starts[k-1]
	}
	return x
}

// lookup returns the pointer of object r when it is kept in the segment
// files, read with a point read of its key.
func (c *StoreCheck) lookup(r casstore.Ref) (seglog.Ptr, bool) {
	item, err := c.txn.Get(badgerstore.Key(r))
	if err != nil {
		return seglog.Ptr{}, false
	}
	p, ok, err := seglog.PointerOf(item)
	return p, ok && err == nil
}

// findObjects finds, for Finish after locate, the objects of the claims
// Add did not check: those locate found are read from the segment files
// (readPointed); the others, objects kept in Badger's tree (none is, with
// segment files, but an empty one) or missing, are looked up one by one.
func (c *StoreCheck) findObjects() error {
	for i, cl := range c.claims {
		if c.checked[i] || c.byRef[cl.Digest] != i {
			continue // checked, or a second claim of one object (add reported it)
		}
		if ptr, ok := c.locs.find(cl.Digest); ok {
			c.seenObject[i] = true
			c.pointed[0] = append(c.pointed[0], pointed{ptr: ptr, claim: i})
			continue
		}
		item, err := c.txn.Get(badgerstore.Key(cl.Digest))
		if errors.Is(err, badger.ErrKeyNotFound) {
			continue // missing: result reports it
		}
		if err != nil {
			return fmt.Errorf("get %s: %w", cl.Digest, err)
		}
		c.seenObject[i] = true
		if err := c.seg.Value(item, func(b []byte) error { c.object(i, b); return nil }); err != nil {
			return fmt.Errorf("get %s: %w", cl.Digest, err)
		}
	}
	return nil
}

// pointed is a claimed object kept in the segment files.
type pointed struct {
	ptr   seglog.Ptr
	claim int
}

// readPointed reads the objects the scans found in the segment files, in
// the files' order, in up to parts runs of whole blocks, and checks them.
func (c *storeCheck) readPointed(seg *seglog.Log, parts int) error {
	all := slices.Concat(c.pointed...)
	if len(all) == 0 {
		return nil
	}
	slices.SortFunc(all, func(a, b pointed) int {
		return cmp.Or(cmp.Compare(a.ptr.File, b.ptr.File), cmp.Compare(a.ptr.Off, b.ptr.Off), cmp.Compare(a.ptr.Rec, b.ptr.Rec))
	})
	var runs []func() error
	for lo := 0; lo < len(all); {
		hi := min(len(all), lo+(len(all)+parts-1)/parts)
		for hi < len(all) && all[hi].ptr.File == all[hi-1].ptr.File && all[hi].ptr.Off == all[hi-1].ptr.Off {
			hi++ // a block belongs to one run
		}
		run := all[lo:hi]
		runs = append(runs, func() error {
			var batch objectBatch
			defer batch.flush(c)
			for _, p := range run {
				b, err := seg.Get(p.ptr)
				if err != nil {
					return fmt.Errorf("get %s: %w", c.claims[p.claim].Digest, err)
				}
				batch.add(c, p.claim, b)
			}
			return nil
		})
		lo = hi
	}
	return runAll(runs)
}

// scanObjects reads, in key order, the objects whose digest's first byte
// is in [lo, hi), and checks those a claim names; of those kept in the
// segment files it notes the pointers in c.pointed[part].
func (c *storeCheck) scanObjects(txn *badger.Txn, part int, lo byte, hi int) error {
	prefix := []byte(badgerstore.KeyPrefix)
	it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
	defer it.Close()
	for it.Seek(append(prefix, lo)); it.Valid(); it.Next() {
		k := it.Item().Key()
		if len(k) > len(prefix) && int(k[len(prefix)]) >= hi {
			break
		}
		ref, err := casstore.FromBytes(k[len(prefix):])
		if err != nil {
			continue // not an object this check knows of
		}
		i, ok := c.byRef[ref]
		if !ok {
			continue
		}
		c.seenObject[i] = true
		if c.checked[i] {
			continue
		}
		p, ok, err := seglog.PointerOf(it.Item())
		if err != nil {
			return fmt.Errorf("get %s: %w", ref, err)
		}
		if ok {
			c.pointed[part] = append(c.pointed[part], pointed{ptr: p, claim: i})
			continue
		}
		if err := it.Item().Value(func(b []byte) error { c.object(i, b); return nil }); err != nil {
			return fmt.Errorf("get %s: %w", ref, err)
		}
	}
	return nil
}

// object checks claim i's object b.
func (c *storeCheck) object(i int, b []byte) {
	if p := objectProblem(c.claims[i], c.prevs[i].Head, b); p != nil {
		c.fail(i, 2, p)
	}
}

// objectBatchLen is how many objects objectBatch hashes at a time
// (blake3x takes sixteen side by side).
const objectBatchLen = 64

// objectBatch gathers claimed objects to hash them together (an object of
// about 1.3 KB is two BLAKE3 chunks, which blake3x hashes sixteen objects
// at a time), then checks each as object does. One goroutine owns each.
type objectBatch struct {
	claims []int
	data   [][]byte
	sums   [][32]byte
}

// add queues claim i's object b (a shared slice of a block, kept as is).
func (q *objectBatch) add(c *storeCheck, i int, b []byte) {
	q.claims = append(q.claims, i)
	q.data = append(q.data, b)
	if len(q.claims) == objectBatchLen {
		q.flush(c)
	}
}

// flush hashes and checks the queued objects.
func (q *objectBatch) flush(c *storeCheck) {
	if len(q.claims) == 0 {
		return
	}
	q.sums = slices.Grow(q.sums[:0], len(q.data))[:len(q.data)]
	blake3x.Sum256Many(q.data, q.sums)
	for k, i := range q.claims {
		if p := objectProblemSum(c.claims[i], c.prevs[i].Head, q.data[k], q.sums[k]); p != nil {
			c.fail(i, 2, p)
		}
	}
	q.drop() // the blocks are not held past the check
}

// drop forgets the queued objects unchecked.
func (q *objectBatch) drop() {
	clear(q.data)
	q.claims, q.data = q.claims[:0], q.data[:0]
}

// objectProblem checks claim cl's object b, where head is its chain's head
// before it, and returns the problem (nil when there is none).
func objectProblem(cl Claim, head string, b []byte) *StoreProblem {
	return objectProblemSum(cl, head, b, casstore.RefOf(b).Sum())
}

// objectProblemSum is objectProblem given b's BLAKE3-256 sum.
func objectProblemSum(cl Claim, head string, b []byte, sum [32]byte) *StoreProblem {
	if sum != cl.Digest.Sum() {
		err := casstore.Verify(cl.Digest, b) // its error says what the bytes hash to
		return &StoreProblem{Key: cl.Digest.String(), Object: true, Detail: fmt.Sprintf("checkpoint %s: %v", cl.ID, err)}
	}
	o, err := checkpointchain.DecodeIdentity(b)
	if err != nil {
		return &StoreProblem{Key: cl.Digest.String(), Object: true, Detail: fmt.Sprintf("checkpoint %s: object %s: %v", cl.ID, cl.Digest, err)}
	}
	if o.ID != cl.ID || o.Workspace != cl.Workspace || o.Type != cl.Type || o.Status != cl.Status || o.Parent != cl.Parent || o.Parent != head {
		return &StoreProblem{Key: cl.Digest.String(), Object: true, Detail: fmt.Sprintf(
			"object %s holds checkpoint %s of %s (%s, %s, parent %q), the trail says %s of %s (%s, %s, parent %q; chain head %q)",
			cl.Digest, o.ID, o.Workspace, o.Type, o.Status, o.Parent, cl.ID, cl.Workspace, cl.Type, cl.Status, cl.Parent, head)}
	}
	return nil
}
