package traillog

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/y"
	"github.com/transparency-dev/merkle/compact"

	"github.com/wacpd/wacpd/internal/seglog"
	"github.com/wacpd/wacpd/trail"
)

// CheckOptions says what Check compares the stored trail with.
type CheckOptions struct {
	// SignedSize and SignedRoot are the latest signed tree head: the Merkle
	// root of the first SignedSize entries must be SignedRoot. Zero: none.
	SignedSize uint64
	SignedRoot []byte
	// Full checks every entry. Otherwise Check trusts the entries a
	// previous check passed (the mark MarkChecked left) and starts after
	// them; without a usable mark it checks everything.
	Full bool
	// Visit, when set, is called with each entry of the valid prefix that
	// the check read, in order. When the accelerated check gives way to
	// the reference walk, the calls start again from the first entry read:
	// a visitor that sees seq again drops what it kept from seq on.
	Visit func(seq uint64, e Visited)
	// VisitEvent, when set, limits the calls of Visit to entries of that
	// event type (the others are not decoded for it).
	VisitEvent trail.EventType
	// Seg is the database's segment files (nil: none).
	Seg *seglog.Log

	reference bool // tests: skip the accelerated check
}

// Visited is what Visit is given of an entry. Its slices are valid during
// the call only (the check's buffers): a visitor copies what it keeps.
type Visited struct {
	ID, EventType, Body []byte
}

// visits reports whether Visit is called with an entry of event type typ.
func (o CheckOptions) visits(typ string) bool {
	return o.Visit != nil && (o.VisitEvent == "" || typ == string(o.VisitEvent))
}

// CheckResult is the outcome of Check: the longest prefix of the stored
// global trail that passes every check, and what is wrong after it.
type CheckResult struct {
	// From is where the check started: entries #1 … #From passed an
	// earlier check and were not read again (0 for a full check).
	From uint64
	// Examined counts the entries read.
	Examined uint64
	// Valid is the length of the valid prefix: entries #1 … #Valid pass
	// every check.
	Valid uint64
	// Last is the highest entry number the trail holds or its trail.Head claims
	// (Last > Valid when something is wrong with the entries).
	Last uint64
	// FirstBad names entry #Valid+1 ("#N", with its id when it could be
	// read); empty when every entry passed. BadSeq and BadID are its
	// parts.
	FirstBad  string
	BadSeq    uint64
	BadID     string
	Violation trail.Violation
	Detail    string
	// Derived names the first record derived from the entries (a chain
	// head, an index, a Merkle node) that disagrees with the valid prefix;
	// empty when none does. DerivedAt says where: the key, or the
	// workspace whose local index it is. Derived records are rebuilt by
	// Repair.
	Derived   string
	DerivedAt string
	// SignedCovered reports whether the valid prefix covers the signed tree
	// trail.Head passed to Check and hashes to its root. It is true when no trail.Head
	// was passed.
	SignedCovered bool
	// Workspaces counts the workspace chains in the valid prefix.
	Workspaces int

	derivedLocal bool // Derived is about a workspace's local index

	// The chains' state at the end of the valid prefix, for MarkChecked.
	global   trail.Head
	local    map[string]trail.Head
	terminal map[string]bool
	rng      *compact.Range
}

// OK reports whether the stored trail is exactly its valid prefix with
// every derived record in place.
func (r CheckResult) OK() bool { return r.Violation == "" && r.Derived == "" && r.Valid == r.Last }

// Verdict returns the result as the reply of a verification
// (audit.trail.verify): the first violation, or else the first derived
// record that disagrees: chain_broken at the workspace for a local index
// (the workspace's trail as read through it is not the global trail
// filtered to it), index_mismatch for the others.
func (r CheckResult) Verdict() trail.VerifyResult {
	switch {
	case r.Violation != "":
		where := r.BadID
		if where == "" {
			where = fmt.Sprintf("#%d", r.BadSeq)
		}
		return trail.VerifyResult{Entries: r.Valid, FirstBad: where, Violation: r.Violation, Detail: r.Detail}
	case r.Derived != "" && r.derivedLocal:
		// The workspace's trail, as it is read through its index, is not
		// the global trail filtered to it.
		return trail.VerifyResult{Entries: r.Valid, FirstBad: r.DerivedAt, Violation: trail.ViolationChainBroken, Detail: r.Derived}
	case r.Derived != "":
		return trail.VerifyResult{Entries: r.Valid, FirstBad: r.DerivedAt, Violation: trail.ViolationIndexMismatch, Detail: r.Derived}
	}
	return trail.VerifyResult{OK: true, Entries: r.Valid}
}

// Check verifies the trail stored in db, trusting no trail.Head or index: it
// walks the global entries from #1 (or from the mark a previous check
// left, see CheckOptions.Full) and applies the trail's rule set to each
// (rules: hashes, both chain kinds, per-workspace timestamps, nothing after
// a terminal state, the stored local_prev_hash, the Merkle root at the
// signed size). It stops at the first entry that fails: the entries before
// it are the valid prefix. It also compares what is derived from the valid
// entries with the stored records: the global and local heads, the local
// indexes, every stored Merkle node (and no record the layout does not
// have, layout.go).
//
// A full check first runs an accelerated implementation of the same rules
// over the stored bytes (checkFast); when that does not pass the trail,
// the reference walk runs and words the finding.
//
// A problem in the data is a result, not an error; an error means the check
// could not run. Damaged storage that makes Badger fail (a panic or a
// checksum error) is a result too: ViolationUnreadable at the entry the
// check had reached.
func Check(ctx context.Context, db *badger.DB, opts CheckOptions) (CheckResult, error) {
	var res CheckResult
	done := false
	err := view(db, "check trail", func(txn *badger.Txn) error {
		var err error
		res, err = CheckTxn(ctx, txn, opts)
		done = err == nil
		return err
	})
	var de *DamageError
	if errors.As(err, &de) && done {
		// Badger failed closing the transaction after the check (an
		// iterator over a damaged block it could not close): the
		// result stands, but the storage is damaged.
		if res.Violation != trail.ViolationUnreadable {
			c := newChecker(ctx, opts)
			c.res, c.r.Prev.Seq = res, res.Valid
			res = c.damaged(de)
		}
		return res, nil
	}
	if errors.As(err, &de) {
		return newChecker(ctx, opts).damaged(de), nil
	}
	return res, err
}

// CheckTxn is Check on the snapshot of txn, a read-only transaction, for
// a caller that checks other records against the same snapshot.
func CheckTxn(ctx context.Context, txn *badger.Txn, opts CheckOptions) (res CheckResult, err error) {
	c := newChecker(ctx, opts)
	defer func() {
		if p := recover(); p != nil {
			res, err = c.damaged(&DamageError{Op: "check trail", Panic: p}), nil
		}
	}()
	err = c.run(txn)
	var de *DamageError
	switch {
	case errors.As(err, &de):
		return c.damaged(de), nil
	case err != nil && errors.Is(err, y.ErrChecksumMismatch):
		return c.damaged(&DamageError{Op: "check trail", Err: err}), nil
	case err != nil:
		return CheckResult{}, fmt.Errorf("check trail: %w", err)
	}
	c.res.global, c.res.local, c.res.terminal, c.res.rng = c.r.Prev, c.r.Local, c.r.Terminal, c.r.Range
	c.res.Workspaces = len(c.r.Local)
	return c.res, nil
}

// run runs the check from entry #1 or from the mark: the fast path, then
// the reference walk when the fast path does not pass the trail.
func (c *checker) run(txn *badger.Txn) error {
	if !c.opts.Full {
		c.resume(txn)
	}
	if !c.opts.reference {
		ok, err := c.fast(txn)
		if err != nil {
			return err
		}
		if ok {
			c.end(txn)
			return c.derived(txn)
		}
		*c = *newChecker(c.ctx, c.opts)
		if !c.opts.Full {
			c.resume(txn)
		}
	}
	if err := c.entries(txn); err != nil {
		return err
	}
	c.end(txn)
	return c.derived(txn)
}

// damaged returns the result for storage that Badger failed to read: the
// valid prefix so far, then ViolationUnreadable.
func (c *checker) damaged(de *DamageError) CheckResult {
	c.res.Violation, c.res.Derived, c.res.DerivedAt, c.res.derivedLocal = "", "", "", false
	c.fail(&trail.Finding{Seq: c.r.Prev.Seq + 1, Violation: trail.ViolationUnreadable, Detail: de.Error()})
	c.res.Valid = c.r.Prev.Seq
	c.res.Last = max(c.res.Last, c.res.Valid+1)
	c.res.SignedCovered = c.r.SignedCovered && c.res.Valid >= c.opts.SignedSize
	c.res.Workspaces = len(c.r.Local)
	return c.res
}

func newChecker(ctx context.Context, opts CheckOptions) *checker {
	return &checker{ctx: ctx, opts: opts, r: trail.NewRules(opts.SignedSize, opts.SignedRoot)}
}

type checker struct {
	ctx  context.Context
	opts CheckOptions
	res  CheckResult
	r    *trail.Rules // the chains' state at the end of the valid prefix

	fastLocals map[string]*localChain // what the fast path read of each workspace's chain
}

func (c *checker) fail(f *trail.Finding) {
	c.res.FirstBad, c.res.BadSeq, c.res.BadID = f.Where(), f.Seq, f.ID
	c.res.Violation, c.res.Detail = f.Violation, f.Detail
}

func (c *checker) derivedFail(where, format string, args ...any) {
	if c.res.Derived == "" {
		c.res.Derived, c.res.DerivedAt = fmt.Sprintf(format, args...), where
	}
}

// localFail is derivedFail for workspace ws's local index.
func (c *checker) localFail(ws, format string, args ...any) {
	if c.res.Derived == "" {
		c.derivedFail(ws, format, args...)
		c.res.derivedLocal = true
	}
}

// entries walks the global entries after the valid prefix found so far,
// with the stored Merkle nodes level by level, until the
// first bad entry.
func (c *checker) entries(txn *badger.Txn) error {
	g := newGlobalIter(txn, badger.IteratorOptions{PrefetchValues: true, PrefetchSize: 256})
	defer g.close()
	nodes := newNodeCheck(txn)
	defer nodes.close()
	locals := localIndexes{txn: txn, its: map[string]*localCursor{}}
	defer locals.close()
	for g.seek(c.r.Prev.Seq + 1); g.valid(); g.next() {
		if err := c.ctx.Err(); err != nil {
			return err
		}
		ge := g.entry()
		seq := ge.seq
		c.res.Examined++
		want := c.r.Prev.Seq + 1
		if seq != want {
			c.fail(trail.NewFinding(want, "", trail.ViolationChainBroken, "entry #%d is missing (the next stored entry is #%d)", want, seq))
			break
		}
		var s stored
		if err := ge.value(c.opts.Seg, func(v []byte) (err error) { s, err = readStored(v); return err }); err != nil {
			c.fail(trail.NewFinding(seq, "", trail.ViolationHashMismatch, "undecodable entry: %v", err))
			break
		}
		e := s.Entry
		if f := c.r.Next(seq, e, s.LocalPrev, nodes.visit); f != nil {
			c.fail(f)
			break
		}
		c.extra(ge, e)
		if c.opts.visits(string(e.EventType)) {
			c.opts.Visit(seq, Visited{ID: []byte(e.ID), EventType: []byte(e.EventType), Body: e.Body})
		}
		if e.Workspace != "" {
			c.localIndex(&locals, seq, e.Workspace)
		}
		c.res.Valid = seq
	}
	if nodes.problem != "" {
		c.derivedFail(nodes.where, "%s", nodes.problem)
	}
	if c.res.Violation == "" {
		locals.ends(c)
	}
	c.res.Last = c.res.Valid
	if c.res.Violation != "" {
		// Find the last entry stored beyond the valid prefix.
		if last, _ := lastStored(txn); last > 0 {
			c.res.Last = max(c.res.Last, last)
		}
	}
	return nil
}

// end compares the trail trail.Head with the valid prefix and settles whether the
// signed tree trail.Head is covered.
func (c *checker) end(txn *badger.Txn) {
	var h trail.Head
	switch err := getJSON(txn, keyHead, &h); {
	case errors.Is(err, badger.ErrKeyNotFound):
		if c.r.Prev.Seq > 0 {
			c.derivedFail(string(keyHead), "the trail trail.Head is missing")
		}
	case err != nil:
		c.derivedFail(string(keyHead), "undecodable trail head: %v", err)
	default:
		if h.Seq > c.res.Last {
			c.res.Last = h.Seq
			if c.res.Violation == "" {
				c.fail(trail.NewFinding(c.res.Valid+1, "", trail.ViolationChainBroken, "the trail trail.Head says %d entries, the trail holds %d", h.Seq, c.res.Valid))
			}
		}
		if h != c.r.Prev {
			c.derivedFail(string(keyHead), "trail trail.Head %d %s, valid prefix ends at %d %s", h.Seq, h.Hash, c.r.Prev.Seq, c.r.Prev.Hash)
		}
	}
	c.res.SignedCovered = c.r.SignedCovered
	if c.opts.SignedSize > 0 && c.res.Valid < c.opts.SignedSize {
		c.res.SignedCovered = false
	}
}

// nodeCheck compares the Merkle nodes the entries complete with the stored
// ones, reading each level's nodes in order with one iterator.
type nodeCheck struct {
	txn            *badger.Txn
	levels         map[uint]*badger.Iterator
	key            []byte // reused
	where, problem string // the first node that disagrees
}

func newNodeCheck(txn *badger.Txn) *nodeCheck {
	return &nodeCheck{txn: txn, levels: map[uint]*badger.Iterator{}}
}

func (n *nodeCheck) close() {
	for _, it := range n.levels {
		it.Close()
	}
}

func (n *nodeCheck) fail(id compact.NodeID, format string, args ...any) {
	if n.problem == "" {
		n.where = fmt.Sprintf("t/m/(%d,%d)", id.Level, id.Index)
		n.problem = fmt.Sprintf("Merkle node (%d,%d) ", id.Level, id.Index) + fmt.Sprintf(format, args...)
	}
}

// visit is a compact.VisitFn: node id of the entries' tree has hash.
// Nodes below minNodeLevel are not stored.
func (n *nodeCheck) visit(id compact.NodeID, hash []byte) {
	if id.Level < minNodeLevel {
		return
	}
	n.key = binary.BigEndian.AppendUint64(append(append(n.key[:0], prefixNode...), byte(id.Level)), id.Index)
	want := n.key
	it, ok := n.levels[id.Level]
	if !ok {
		it = n.txn.NewIterator(badger.IteratorOptions{Prefix: append(bytes.Clone(prefixNode), byte(id.Level))})
		n.levels[id.Level] = it // closed by close, even if Seek panics
		it.Seek(want)
	}
	if !it.Valid() || !bytes.Equal(it.Item().Key(), want) {
		n.fail(id, "is missing")
		return // the level's nodes are contiguous: the iterator waits for a later one
	}
	if err := it.Item().Value(func(v []byte) error {
		if !bytes.Equal(v, hash) {
			n.fail(id, "is %x, the entries give %x", v, hash)
		}
		return nil
	}); err != nil {
		n.fail(id, "%v", err)
	}
	it.Next()
}

// extra checks the entry hash and id kept beside the pointer of entry
// #seq, e, in the segments (the Merkle tree's low nodes and the search by
// id read them).
func (c *checker) extra(ge *gEntry, e trail.Entry) {
	if c.res.Derived != "" {
		return
	}
	hash, id, ok, err := ge.extra()
	if !ok {
		return
	}
	leaf, lerr := trail.LeafData(e)
	if err != nil || lerr != nil || !bytes.Equal(hash, leaf) || id != e.ID {
		c.derivedFail(string(bytes.Clone(ge.key)), "entry #%d: beside its pointer %x %q, the entry is %s %q (%v)", ge.seq, hash, id, e.Integrity.EntryHash, e.ID, err)
	}
}

// localIndexes reads the local indexes of the workspaces a walk meets, each
// with a cursor of its own that moves on with the workspace's entries
// (positions 1, 2, … in key order, a group of them per key: local.go): a
// step instead of a lookup in every level of the tree per entry. Past
// maxLocalIterators workspaces it looks positions up.
type localIndexes struct {
	txn    *badger.Txn
	its    map[string]*localCursor
	looked map[string]bool // workspaces met past maxLocalIterators
}

// maxLocalIterators bounds the iterators a walk keeps open.
const maxLocalIterators = 1024

// seqAt returns the global seq under position n of ws's local index.
func (l *localIndexes) seqAt(ws string, n uint64) (uint64, error) {
	c, ok := l.its[ws]
	if !ok {
		if len(l.its) >= maxLocalIterators {
			if l.looked == nil {
				l.looked = map[string]bool{}
			}
			l.looked[ws] = true
			return localSeqAt(l.txn, ws, n)
		}
		c = &localCursor{it: l.txn.NewIterator(badger.IteratorOptions{Prefix: localPrefix(ws)})}
		l.its[ws] = c
	}
	return c.seqAt(l.txn, ws, n)
}

// ends checks, once the walk has met every entry, that the key holding
// each workspace's last position ends there and that no key follows it.
// A workspace looked up without a cursor (past maxLocalIterators) is looked
// up once more.
func (l *localIndexes) ends(c *checker) {
	for ws, h := range c.r.Local {
		if l.looked[ws] {
			if first, v, err := localGroupAt(l.txn, ws, h.Seq); err == nil && first+uint64(len(v)/8)-1 != h.Seq {
				c.localFail(ws, "local index of %s goes beyond its %d entries", ws, h.Seq)
			}
			continue
		}
		cur, ok := l.its[ws]
		if !ok || cur.first == 0 {
			continue // not met since the mark
		}
		if cur.end() > h.Seq {
			c.localFail(ws, "local index of %s goes beyond its %d entries", ws, h.Seq)
			continue
		}
		if cur.it.Next(); cur.it.Valid() {
			if at := localPosition(cur.it.Item().Key()); at <= h.Seq {
				c.localFail(ws, "local index of %s has a key at position %d, within the key at %d", ws, at, cur.first)
			} else {
				c.localFail(ws, "local index of %s goes beyond its %d entries", ws, h.Seq)
			}
		}
	}
}

func (l *localIndexes) close() {
	for _, c := range l.its {
		c.it.Close()
	}
}

// localIndex checks that entry #seq, the latest of workspace ws, has its
// position in the workspace's local index.
func (c *checker) localIndex(locals *localIndexes, seq uint64, ws string) {
	n := c.r.Local[ws].Seq
	got, err := locals.seqAt(ws, n)
	switch {
	case err != nil:
		c.localFail(ws, "local index of %s lacks position %d: %v", ws, n, err)
	case got != seq:
		c.localFail(ws, "local index of %s position %d is #%d, want #%d", ws, n, got, seq)
	}
}

// derived compares the local heads with the chains, and looks for index
// positions and Merkle nodes beyond the valid prefix.
func (c *checker) derived(txn *badger.Txn) error {
	if c.res.Violation != "" {
		return nil // Repair rebuilds everything derived anyway
	}
	heads := 0
	lit := newLocalsReverse(txn)
	defer lit.Close()
	g := newGlobalIter(txn, badger.IteratorOptions{})
	defer g.close()
	if err := storedHeads(txn, func(ws string, h trail.Head, err error) error {
		heads++
		if c.res.Derived != "" {
			return nil
		}
		// A stored head is the workspace's head at some position (since
		// layout 4, usually its first: localHeads derives the later ones):
		// its last, or one before, as the entry there gives it.
		last := c.r.Local[ws]
		want := last
		if err == nil && h.Seq >= 1 && h.Seq < last.Seq {
			var seq uint64
			if seq, err = localSeqIn(lit, ws, h.Seq); err == nil {
				want, err = headIn(g, c.opts.Seg, ws, h.Seq, seq)
			}
		}
		if err != nil || h != want {
			c.derivedFail(string(prefixHeadWS)+ws, "local trail.Head of %s is %+v, the entries give %+v at position %d of %d", ws, h, want, want.Seq, last.Seq)
		}
		return nil
	}); err != nil {
		return err
	}
	if heads != len(c.r.Local) {
		c.derivedFail(string(prefixHeadWS), "%d local heads stored, the entries give %d", heads, len(c.r.Local))
	}
	// Nothing beyond each workspace's last local position, nor a local
	// index of a workspace with no entries.
	it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixLocal})
	defer it.Close()
	for it.Rewind(); it.Valid(); {
		wsb, ok := splitLocalKey(it.Item().Key())
		if !ok {
			c.derivedFail(string(it.Item().KeyCopy(nil)), "malformed local index key %q", it.Item().Key()[len(prefixLocal):])
			it.Next()
			continue
		}
		ws := string(wsb)
		h, ok := c.r.Local[ws]
		if !ok {
			c.localFail(ws, "local index of %s, which has no entries", ws)
			it.Seek(localKey(ws, 1<<64-1))
			it.Next()
			continue
		}
		// (The key holding the last position ends there: the walk's
		// localIndexes.ends, or the fast path's projection.)
		it.Seek(localKey(ws, h.Seq+1))
		if it.Valid() && bytes.HasPrefix(it.Item().Key(), localPrefix(ws)) {
			c.localFail(ws, "local index of %s goes beyond its %d entries", ws, h.Seq)
			it.Seek(localKey(ws, 1<<64-1))
			it.Next()
		}
	}
	// Nothing beyond the last node of each level: a tree of n leaves has
	// n>>l nodes at level l, of which those below minNodeLevel are not
	// stored; nor layout 1's id index once the data dir is of layout 2
	// (a layout-1 dir, read-only here, keeps records nothing reads).
	layout, err := layoutOf(txn)
	if err != nil {
		c.derivedFail(string(keyLayout), "%v", err)
		return nil
	}
	n := c.res.Valid
	if layout >= 2 && hasPrefix(txn, prefixID) {
		c.derivedFail(string(prefixID), "an id index (t/i/), which layout %d does not have", layout)
	}
	for l := range 64 {
		first := n >> l
		if l < minNodeLevel {
			if layout < 2 {
				continue
			}
			first = 0
		}
		k := nodeKey(compact.NewNodeID(uint(l), first))
		stray := func() bool {
			node := txn.NewIterator(badger.IteratorOptions{Prefix: k[:len(prefixNode)+1]})
			defer node.Close()
			node.Seek(k)
			return node.Valid()
		}()
		if stray {
			c.derivedFail(fmt.Sprintf("t/m/(%d,%d)", l, first), "Merkle node beyond the %d entries at level %d, or below level %d", n, l, minNodeLevel)
			break
		}
	}
	return nil
}

// readStored decodes the value stored under t/g/<seq> for Check and
// Repair (decodeStored: the direct parser, encoding/json for older data,
// whose escaped <, > and & are brought back to the canonical body).
func readStored(v []byte) (stored, error) { return decodeStored(v) }

// hasPrefix reports whether txn holds a key with prefix p.
func hasPrefix(txn *badger.Txn, p []byte) bool {
	it := txn.NewIterator(badger.IteratorOptions{Prefix: p})
	defer it.Close()
	it.Rewind()
	return it.Valid()
}
