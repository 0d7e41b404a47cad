package traillog

import (
	"bytes"
	"encoding/hex"
	goruntime "runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/internal/blake3x"
	"github.com/wacpd/wacpd/trail"
)

// fast is Check's accelerator for a check from entry #1, or from the mark
// a previous check left (resume; the running check every 2 s): it applies the
// rule set (rules) and compares the derived records (the stored Merkle
// nodes, the local indexes) without decoding entries into
// strings. It works on the stored form that appendStored writes and hashes
// the canonical form assembled from the stored bytes (for strings without
// escapes, as appendStored writes ids, hashes and timestamps, the
// canonical form of a string is its bytes in quotes), on worker
// goroutines. It reports whether the whole trail passed, and then leaves
// the chains' state in c.r as the reference walk would. Anything else (an
// entry in another form, any finding) makes it report false, and Check
// runs the reference walk, which also words the finding.
// TestVerifyFastPathNeverPassesWhatTheReferenceFails holds it to that.
//
// Verification used to cost about 10 µs per entry, most of it decoding the
// stored JSON into strings; issue #5 asks for 300,000 entries/s.
func (c *checker) fast(txn *badger.Txn) (bool, error) {
	ctx := c.ctx
	if c.r.Prev.Seq > 0 {
		// From the mark: each workspace's index is read from its
		// position at the mark on, after the entries.
		ok := c.fastEntries(txn)
		if err := ctx.Err(); err != nil {
			return false, err
		}
		return ok && c.fastTails(txn), nil
	}
	// The local indexes are read while the entries are (one more iterator
	// of the same read-only transaction): reading them after took a third
	// of the time.
	proj := make(chan map[string][]uint64, 1)
	go func() {
		defer func() {
			if recover() != nil { // damaged storage: the reference walk finds it
				proj <- nil
			}
		}()
		proj <- readProjection(ctx, txn)
	}()
	received := false
	defer func() {
		if !received { // fastEntries panicked: let the reader end before the transaction does
			<-proj
		}
	}()
	ok := c.fastEntries(txn)
	indexes := <-proj
	received = true
	if indexes == nil {
		ok = false
	}
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if !ok {
		return false, nil
	}
	for ws, ch := range c.fastLocals {
		if !slices.Equal(indexes[ws], ch.seqs) {
			return false, nil
		}
	}
	return true, nil
}

// fastTails checks, for a check from the mark, that the local index of
// each workspace the entries after the mark moved holds, from its position
// at the mark on, exactly their numbers (derived then looks for positions
// beyond them).
func (c *checker) fastTails(txn *badger.Txn) bool {
	for ws, ch := range c.fastLocals {
		if len(ch.seqs) == 0 {
			continue
		}
		prefix := localPrefix(ws)
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
		i := 0
		for it.Seek(localKey(ws, ch.base+1)); it.Valid() && i < len(ch.seqs); it.Next() {
			if localPosition(it.Item().Key()) != ch.base+uint64(i)+1 {
				break
			}
			if it.Item().Value(func(v []byte) error {
				k, err := groupLen(v)
				if err != nil || i+k > len(ch.seqs) {
					return errFastPath
				}
				for j := range k {
					if groupSeq(v, j) != ch.seqs[i+j] {
						return errFastPath
					}
				}
				i += k
				return nil
			}) != nil {
				i = -1
				break
			}
		}
		it.Close()
		if i != len(ch.seqs) {
			return false
		}
	}
	return true
}

func (c *checker) fastEntries(txn *badger.Txn) bool {
	var (
		prevSeq          uint64
		prevHash, prevID []byte
		prevTS           []byte
		locals           = map[string]*localChain{}
		leaf             [32]byte
	)
	rl := c.r
	if p := rl.Prev; p.Seq > 0 { // from the mark
		prevSeq, prevHash, prevID, prevTS = p.Seq, []byte(p.Hash), []byte(p.ID), []byte(p.Timestamp)
	}
	h := newHashCheck()
	defer h.close()
	tree := newTreeCheck(txn, rl)
	defer tree.close()
	var visits *visitQueue
	if c.opts.Visit != nil {
		visits = newVisitQueue(c.opts.Visit)
		defer visits.close()
	}
	// The segment files' blocks are read ahead of the walk (seglog.Ahead),
	// which otherwise decompressed every block itself.
	ahead := c.opts.Seg.NewAhead(aheadBlocks)
	defer ahead.Close()
	// No prefetching by Badger: it starts a goroutine per item to prefetch its
	// value, and entries are small values kept in the tables themselves,
	// which Value reads without I/O.
	// visit checks entry #seq, its stored value v, and the hash and id
	// kept beside its pointer when hasExtra.
	var seq uint64
	visit := func(v, xLeaf, xID []byte, hasExtra bool) error {
		r, good := scanStored(v)
		if !good || !r.fastable() || string(r.alg) != trail.Algorithm || !bytes.Equal(r.prev, prevHash) || (r.hasPrev != (prevSeq > 0)) ||
			(prevID != nil && (bytes.Compare(r.id, prevID) <= 0 || bytes.Compare(r.ts, prevTS) < 0)) ||
			len(r.entryHash) != len(hashPrefix)+64 || string(r.entryHash[:len(hashPrefix)]) != hashPrefix {
			return errFastPath
		}
		if _, err := hex.Decode(leaf[:], r.entryHash[len(hashPrefix):]); err != nil {
			return errFastPath
		}
		if hasExtra && (!bytes.Equal(xLeaf, leaf[:]) || !bytes.Equal(xID, r.id)) {
			return errFastPath // the reference walk names it
		}
		h.add(&r, r.prev, r.hasPrev, true, r.entryHash)
		if !r.hasWS {
			if len(r.localHash) > 0 || r.hasLocalPrev {
				return errFastPath
			}
		} else {
			last := locals[string(r.ws)]
			if hd, ok := rl.Local[string(r.ws)]; last == nil && ok { // its chain up to the mark
				last = &localChain{hash: []byte(hd.Hash), ts: []byte(hd.Timestamp), id: []byte(hd.ID), base: hd.Seq, terminal: rl.Terminal[string(r.ws)]}
				locals[string(r.ws)] = last
			}
			var lastHash []byte
			if last != nil {
				lastHash = last.hash
			}
			if !bytes.Equal(r.localPrev, lastHash) || r.hasLocalPrev != (last != nil) || len(r.localHash) == 0 {
				return errFastPath
			}
			if last != nil && (last.terminal || bytes.Compare(r.ts, last.ts) <= 0) {
				return errFastPath
			}
			h.add(&r, r.localPrev, r.hasLocalPrev, false, r.localHash)
			if last == nil {
				last = &localChain{}
				locals[string(r.ws)] = last
			}
			last.hash = append(last.hash[:0], r.localHash...)
			last.ts = append(last.ts[:0], r.ts...)
			last.id = append(last.id[:0], r.id...)
			last.seqs = append(last.seqs, seq)
			if string(r.typ) == string(trail.EventWorkspaceStateChanged) && trail.EndsWorkspace(r.body) {
				last.terminal = true
			}
		}
		tree.add(leaf)
		if c.opts.visits(string(r.typ)) {
			visits.add(seq, &r)
		}
		prevHash = append(prevHash[:0], r.entryHash...)
		prevID = append(prevID[:0], r.id...)
		prevTS = append(prevTS[:0], r.ts...)
		return nil
	}
	g := newGlobalIter(txn, badger.IteratorOptions{})
	defer g.close()
	for g.seek(prevSeq + 1); g.valid(); g.next() {
		if prevSeq%256 == 0 && (c.ctx.Err() != nil || h.failed.Load() || tree.failed.Load() || visits.hasFailed()) {
			return false
		}
		ge := g.entry()
		if seq = ge.seq; seq != prevSeq+1 || ge.err != nil {
			return false
		}
		c.res.Examined++
		var err error
		if ge.item != nil {
			err = ahead.ValueExtra(ge.item, func(v, x []byte, hasExtra bool) error {
				if hasExtra && len(x) <= 32 {
					return errFastPath // the reference walk names it (entryExtra)
				}
				if hasExtra {
					return visit(v, x[:32], x[32:], true)
				}
				return visit(v, nil, nil, false)
			})
		} else {
			var v []byte
			if v, err = ahead.Get(ge.ptr); err == nil {
				err = visit(v, ge.leaf, ge.id, true)
			}
		}
		if err != nil {
			return false
		}
		prevSeq = seq
	}
	if !h.wait() || !tree.wait() || !visits.wait() {
		return false
	}
	// The state the reference walk would have left.
	rl.Prev = trail.Head{Seq: prevSeq, Hash: string(prevHash), ID: string(prevID), Timestamp: string(prevTS)}
	for ws, ch := range locals {
		rl.Local[ws] = trail.Head{Seq: ch.base + uint64(len(ch.seqs)), Hash: string(ch.hash), ID: string(ch.id), Timestamp: string(ch.ts)}
		if ch.terminal {
			rl.Terminal[ws] = true
		}
	}
	c.res.Valid, c.res.Last = prevSeq, prevSeq
	c.fastLocals = locals
	return true
}

// pipe hands chunks of work from the iterating goroutine to a goroutine of
// its own, in order, recycling five chunks: the fast check's Merkle tree
// and its visits each run on one (hashCheck spreads its chunks over several
// workers). process handles a chunk and reports whether all of it passed.
// A chunk that fails, or a panic in process (Badger on damaged storage, a
// visitor's), sets failed and the chunks after it are skipped: the
// reference walk then finds the problem and words it.
type pipe[C any] struct {
	chunk   C // being filled by the iterating goroutine
	work    chan C
	free    chan C
	done    chan struct{}
	failed  atomic.Bool
	closed  bool
	process func(C) bool
	reset   func(C) C // empties a chunk for reuse
}

func newPipe[C any](fresh func() C, process func(C) bool, reset func(C) C) *pipe[C] {
	p := &pipe[C]{work: make(chan C, 4), free: make(chan C, 5), done: make(chan struct{}), process: process, reset: reset}
	for range 5 {
		p.free <- fresh()
	}
	p.chunk = <-p.free
	go p.run() // ends when work is closed (close)
	return p
}

func (p *pipe[C]) run() {
	defer close(p.done)
	defer func() {
		if recover() != nil {
			p.failed.Store(true)
			for c := range p.work {
				p.free <- p.reset(c)
			}
		}
	}()
	for c := range p.work {
		if !p.failed.Load() && !p.process(c) {
			p.failed.Store(true)
		}
		p.free <- p.reset(c)
	}
}

// handOver queues the chunk being filled and takes a free one.
func (p *pipe[C]) handOver() {
	p.work <- p.chunk
	p.chunk = <-p.free
}

// last queues the chunk being filled if it holds anything (pending); no
// chunk is filled after it.
func (p *pipe[C]) last(pending bool) {
	if pending {
		p.work <- p.chunk
	}
	var none C
	p.chunk = none
}

// close stops the goroutine once it has processed what it was handed; it
// may be called more than once.
func (p *pipe[C]) close() {
	if !p.closed {
		p.closed = true
		close(p.work)
		<-p.done
	}
}

// visitQueue calls Visit on a goroutine of its own, in the entries' order,
// with the id, event type and body of the entries the walk hands it
// (copied): what the visitor does with them (integrity reads each
// checkpoint_created body) took a fifth of the iterating goroutine's time,
// which bounds the walk.
type visitQueue struct {
	visit func(seq uint64, e Visited)
	*pipe[*visitChunk]
}

// visitChunk holds the entries' parts back to back, each with its number
// and where its parts end in buf.
type visitChunk struct {
	buf   []byte
	items []visitItem
}

type visitItem struct {
	seq                uint64
	idEnd, typEnd, end int
}

func newVisitQueue(visit func(uint64, Visited)) *visitQueue {
	q := &visitQueue{visit: visit}
	q.pipe = newPipe(func() *visitChunk { return &visitChunk{} }, q.visitAll, func(c *visitChunk) *visitChunk {
		c.buf, c.items = c.buf[:0], c.items[:0]
		return c
	})
	return q
}

// visitAll visits the entries of c; it reports true (the walk checked
// each entry before it handed it over).
func (q *visitQueue) visitAll(c *visitChunk) bool {
	start := 0
	for _, it := range c.items {
		q.visit(it.seq, Visited{ID: c.buf[start:it.idEnd], EventType: c.buf[it.idEnd:it.typEnd], Body: c.buf[it.typEnd:it.end]})
		start = it.end
	}
	return true
}

// add queues entry #seq (r's parts, copied).
func (q *visitQueue) add(seq uint64, r *rawStored) {
	c := q.chunk
	c.buf = append(c.buf, r.id...)
	idEnd := len(c.buf)
	c.buf = append(c.buf, r.typ...)
	typEnd := len(c.buf)
	c.buf = append(c.buf, r.body...)
	c.items = append(c.items, visitItem{seq: seq, idEnd: idEnd, typEnd: typEnd, end: len(c.buf)})
	if len(c.items) >= chunkEntries {
		q.handOver()
	}
}

// hasFailed reports whether a visitor panicked (false for a nil queue).
func (q *visitQueue) hasFailed() bool { return q != nil && q.failed.Load() }

// wait hands over the last chunk, waits for the goroutine and reports
// whether no visitor panicked (true for a nil queue).
func (q *visitQueue) wait() bool {
	if q == nil {
		return true
	}
	q.last(q.chunk != nil && len(q.chunk.items) > 0)
	q.close()
	return !q.failed.Load()
}

// treeCheck builds the Merkle tree of the entries on a goroutine of its
// own, from their leaves sent in chunks, comparing every node it completes
// with the stored one (nodeCheck) and, at the signed size, the root.
type treeCheck struct {
	rl    *trail.Rules
	nodes *nodeCheck
	sub   subtrees
	*pipe[[][32]byte]
}

func newTreeCheck(txn *badger.Txn, rl *trail.Rules) *treeCheck {
	t := &treeCheck{rl: rl, nodes: newNodeCheck(txn)}
	t.pipe = newPipe(func() [][32]byte { return make([][32]byte, 0, chunkEntries) }, t.leaves,
		func(c [][32]byte) [][32]byte { return c[:0] })
	return t
}

// leaves appends the leaves of c to the tree and reports whether every
// node it completed, and the root at the signed size, matched.
func (t *treeCheck) leaves(c [][32]byte) bool {
	size, signed := t.rl.Signed()
	return t.sub.append(t.rl.Range, c, size, t.nodes.visit, func() bool { return t.nodes.problem == "" }, func() bool {
		if root, err := t.rl.Range.GetRootHash(nil); err != nil || !bytes.Equal(root, signed) {
			return false
		}
		t.rl.SignedCovered = true
		return true
	})
}

// add queues the next leaf (the entry hash's bytes).
func (t *treeCheck) add(leaf [32]byte) {
	t.chunk = append(t.chunk, leaf)
	if len(t.chunk) == cap(t.chunk) {
		t.handOver()
	}
}

// wait hands over the last chunk, waits for the goroutine and reports
// whether every node and the root matched.
func (t *treeCheck) wait() bool {
	t.last(len(t.chunk) > 0)
	t.close()
	return !t.failed.Load()
}

// close stops the goroutine and closes the node iterators; it may be
// called more than once.
func (t *treeCheck) close() {
	if !t.closed {
		t.pipe.close()
		t.nodes.close()
	}
}

// hashCheck recomputes entry hashes on worker goroutines, one per CPU:
// hashing is most of verification's cost, and unlike the chain links it
// does not depend on the entries before. The iterating goroutine fills
// chunks of preimages with the hashes recorded for them.
type hashCheck struct {
	chunk  *hashChunk
	work   chan *hashChunk
	free   chan *hashChunk
	wg     sync.WaitGroup
	failed atomic.Bool
	closed bool
}

// hashChunk holds preimages back to back, each followed by its recorded
// hash.
type hashChunk struct {
	buf  []byte
	ends [][2]int // end of each preimage and of its recorded hash in buf
}

const chunkEntries = 256

// aheadBlocks is how many blocks of the segment files are read ahead of the
// walk: about 400 checkpoints at 64 clients (their objects, which the
// store check hashes from the same blocks after the walk hands it their
// entries, must still be in seglog's cache of 4 MiB).
const aheadBlocks = 8

func newHashCheck() *hashCheck {
	workers := max(1, goruntime.GOMAXPROCS(0))
	h := &hashCheck{work: make(chan *hashChunk, workers), free: make(chan *hashChunk, 2*workers+1)}
	for range 2*workers + 1 {
		h.free <- &hashChunk{}
	}
	for range workers {
		h.wg.Add(1)
		go h.worker(h.work) // ends when work is closed (wait or close)
	}
	h.chunk = <-h.free
	return h
}

func (h *hashCheck) worker(work <-chan *hashChunk) {
	defer h.wg.Done()
	var hexSum [len(hashPrefix) + 64]byte
	copy(hexSum[:], hashPrefix)
	msgs := make([][]byte, 0, chunkEntries)
	sums := make([][32]byte, chunkEntries)
	for c := range work {
		if !h.failed.Load() {
			// The chunk's preimages are hashed side by side (blake3x).
			msgs = msgs[:0]
			start := 0
			for _, e := range c.ends {
				msgs = append(msgs, c.buf[start:e[0]])
				start = e[1]
			}
			sums = slices.Grow(sums[:0], len(msgs))[:len(msgs)]
			blake3x.Sum256Many(msgs, sums)
			for i, e := range c.ends {
				hex.Encode(hexSum[len(hashPrefix):], sums[i][:])
				if !bytes.Equal(hexSum[:], c.buf[e[0]:e[1]]) {
					h.failed.Store(true)
					break
				}
			}
		}
		c.buf, c.ends = c.buf[:0], c.ends[:0]
		h.free <- c
	}
}

// add queues the check of r's hash in one chain: its preimage with prev as
// prev_hash hashes to want.
func (h *hashCheck) add(r *rawStored, prev []byte, hasPrev, global bool, want []byte) {
	c := h.chunk
	c.buf = r.preimage(c.buf, prev, hasPrev, global)
	end := len(c.buf)
	c.buf = append(c.buf, want...)
	c.ends = append(c.ends, [2]int{end, len(c.buf)})
	if len(c.ends) >= chunkEntries {
		h.work <- c
		h.chunk = <-h.free
	}
}

// wait hands over the last chunk, waits for the workers and reports
// whether every hash matched.
func (h *hashCheck) wait() bool {
	if h.chunk != nil && len(h.chunk.ends) > 0 {
		h.work <- h.chunk
	}
	h.chunk = nil
	h.close()
	return !h.failed.Load()
}

// close stops the workers; it may be called more than once.
func (h *hashCheck) close() {
	if !h.closed {
		h.closed = true
		close(h.work)
		h.wg.Wait()
	}
}

const hashPrefix = "blake3:"

type fastPathError struct{}

func (fastPathError) Error() string { return "trail: not for the fast path" }

var errFastPath error = fastPathError{}

// fastable reports whether the reference check would hash r exactly as
// preimage writes it: strings of printable ASCII, no empty string where the
// reference writes null or leaves the member out, no signature, and a body
// without \u escapes (the reference brings those to canonical form first).
func (r *rawStored) fastable() bool {
	return !r.nonASCII && len(r.id) > 0 && len(r.entryHash) > 0 &&
		(!r.hasWS || len(r.ws) > 0) && (!r.hasPrev || len(r.prev) > 0) &&
		(!r.hasLocalPrev || len(r.localPrev) > 0) && (r.localHash == nil || len(r.localHash) > 0) &&
		r.sig == nil && r.signer == nil && !bytes.Contains(r.body, []byte(`\u`))
}

// preimage appends the canonical form of the entry hashed for one chain:
// with prev as its prev_hash, and with the local_hash member in the global
// chain only. It matches fastHash for entries scanStored accepts and fastable passes.
func (r *rawStored) preimage(b, prev []byte, hasPrev, global bool) []byte {
	b = append(b, `{"actor":"`...)
	b = append(b, r.actor...)
	b = append(b, `","body":`...)
	b = append(b, r.body...)
	b = append(b, `,"event_type":"`...)
	b = append(b, r.typ...)
	b = append(b, `","id":"`...)
	b = append(b, r.id...)
	b = append(b, `","integrity":{"algorithm":"`...)
	b = append(b, r.alg...)
	b = append(b, '"')
	if global && len(r.localHash) > 0 {
		b = append(b, `,"local_hash":"`...)
		b = append(b, r.localHash...)
		b = append(b, '"')
	}
	b = append(b, `},"prev_hash":`...)
	b = appendRawNullable(b, prev, hasPrev)
	b = append(b, `,"timestamp":"`...)
	b = append(b, r.ts...)
	b = append(b, `","workspace":`...)
	b = appendRawNullable(b, r.ws, r.hasWS)
	return append(b, '}')
}

func appendRawNullable(b, s []byte, has bool) []byte {
	if !has {
		return append(b, "null"...)
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// localChain is what the fast path keeps of one workspace's chain.
type localChain struct {
	hash, ts, id []byte   // the last entry's local hash, timestamp and id
	base         uint64   // its entries before the check's first (at the mark)
	seqs         []uint64 // global sequence numbers of its entries from there
	terminal     bool     // the workspace reached a terminal state
}
