package trail

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
	"github.com/transparency-dev/merkle/compact"
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
	// Last is the highest entry number the trail holds or its head claims
	// (Last > Valid when something is wrong with the entries).
	Last uint64
	// FirstBad names entry #Valid+1 ("#N", with its id when it could be
	// read); empty when every entry passed.
	FirstBad  string
	Violation Violation
	Detail    string
	// Derived names the first record derived from the entries (a chain
	// head, an index, a Merkle node) that disagrees with the valid prefix;
	// empty when none does. Derived records are rebuilt by Repair.
	Derived string
	// SignedCovered reports whether the valid prefix covers the signed tree
	// head passed to Check and hashes to its root. It is true when no head
	// was passed.
	SignedCovered bool

	// The chains' state at the end of the valid prefix, for MarkChecked.
	global   head
	local    map[string]head
	terminal map[string]bool
	rng      *compact.Range
}

// OK reports whether the stored trail is exactly its valid prefix with
// every derived record in place.
func (r CheckResult) OK() bool { return r.Violation == "" && r.Derived == "" && r.Valid == r.Last }

// The two terminal states of WACP Workspace §4: no local trail has entries
// after its workspace_state_changed to one of them (Recovery §3.1).
var terminalStates = map[string]bool{"closed": true, "failed": true}

// Check verifies the trail stored in db before it is opened, trusting no
// head or index: it walks the global entries from #1 (or from the mark a
// previous check left, see CheckOptions.Full) and checks each one's hash,
// the global chain (prev_hash, increasing ids, non-decreasing timestamps),
// its workspace's chain (local prev_hash and local_hash), strictly
// increasing timestamps in each workspace and no local entry after the
// workspace's terminal transition (Recovery §3.1), and at the signed size
// the Merkle root. It stops at the first entry that fails: the entries
// before it are the valid prefix. It also compares what is derived from
// the valid entries it read (the global and local heads, the id and local
// indexes, the Merkle nodes) with the stored records.
//
// A problem in the data is a result, not an error; an error means the check
// could not run.
func Check(ctx context.Context, db *badger.DB, opts CheckOptions) (CheckResult, error) {
	var c *checker
	err := db.View(func(txn *badger.Txn) error {
		c = newChecker(ctx, opts)
		if !opts.Full {
			c.resume(txn)
		}
		if err := c.entries(txn); err != nil {
			return err
		}
		return c.derived(txn)
	})
	if err != nil {
		return CheckResult{}, fmt.Errorf("check trail: %w", err)
	}
	c.res.global, c.res.rng = c.prev, c.rng
	return c.res, nil
}

func newChecker(ctx context.Context, opts CheckOptions) *checker {
	return &checker{ctx: ctx, opts: opts, rng: rangeFactory.NewEmptyRange(0),
		res: CheckResult{local: map[string]head{}, terminal: map[string]bool{}, SignedCovered: opts.SignedSize == 0}}
}

type checker struct {
	ctx  context.Context
	opts CheckOptions
	res  CheckResult    // res.local and res.terminal are the chains' state
	prev head           // the global head of the valid prefix
	rng  *compact.Range // the Merkle tree of the valid prefix
}

func (c *checker) fail(seq uint64, id string, v Violation, format string, args ...any) {
	c.res.FirstBad = fmt.Sprintf("#%d", seq)
	if id != "" {
		c.res.FirstBad += " (" + id + ")"
	}
	c.res.Violation, c.res.Detail = v, fmt.Sprintf(format, args...)
}

func (c *checker) derivedFail(format string, args ...any) {
	if c.res.Derived == "" {
		c.res.Derived = fmt.Sprintf(format, args...)
	}
}

// entries walks the global entries after the valid prefix found so far,
// with the id index in step and the Merkle nodes level by level, until the
// first bad entry.
func (c *checker) entries(txn *badger.Txn) error {
	it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixGlobal, PrefetchValues: true, PrefetchSize: 256})
	defer it.Close()
	ids := txn.NewIterator(badger.IteratorOptions{Prefix: prefixID})
	defer ids.Close()
	levels := map[uint]*badger.Iterator{}
	defer func() {
		for _, l := range levels {
			l.Close()
		}
	}()
	positioned := false // ids, at the first entry read
	for it.Seek(globalKey(c.prev.Seq + 1)); it.Valid(); it.Next() {
		if err := c.ctx.Err(); err != nil {
			return err
		}
		seq := binary.BigEndian.Uint64(it.Item().Key()[len(prefixGlobal):])
		c.res.Examined++
		if seq != c.prev.Seq+1 {
			c.fail(c.prev.Seq+1, "", ViolationChainBroken, "entry #%d is missing (the next stored entry is #%d)", c.prev.Seq+1, seq)
			break
		}
		var s stored
		if err := it.Item().Value(func(v []byte) (err error) { s, err = readStored(v); return err }); err != nil {
			c.fail(seq, "", ViolationHashMismatch, "undecodable entry: %v", err)
			break
		}
		ok, extend := c.entry(seq, s, c.prev)
		if !ok {
			break
		}
		e := s.Entry
		if !c.tree(txn, levels, seq, e) {
			break
		}
		extend()
		if !positioned {
			ids.Seek(append(bytes.Clone(prefixID), e.ID...))
			positioned = true
		}
		c.index(ids, seq, e.ID)
		if e.Workspace != "" {
			c.localIndex(txn, seq, e.Workspace)
		}
		c.prev = head{Seq: seq, Hash: e.Integrity.EntryHash, ID: e.ID, Timestamp: e.Timestamp}
		c.res.Valid = seq
	}
	c.res.Last = c.res.Valid
	if c.res.Violation != "" {
		// Find the last entry stored beyond the valid prefix, keys only.
		last := txn.NewIterator(badger.IteratorOptions{Prefix: prefixGlobal, Reverse: true})
		defer last.Close()
		last.Seek(append(bytes.Clone(prefixGlobal), 0xff))
		if last.Valid() {
			c.res.Last = max(c.res.Last, binary.BigEndian.Uint64(last.Item().Key()[len(prefixGlobal):]))
		}
	} else {
		if !positioned {
			ids.Seek(append(append(bytes.Clone(prefixID), c.prev.ID...), 0))
		}
		if ids.Valid() {
			c.derivedFail("id index holds %s, which is not an entry of the valid trail", ids.Item().Key()[len(prefixID):])
		}
	}
	var h head
	switch err := getJSON(txn, keyHead, &h); {
	case errors.Is(err, badger.ErrKeyNotFound):
		if c.prev.Seq > 0 {
			c.derivedFail("the trail head is missing")
		}
	case err != nil:
		c.derivedFail("undecodable trail head: %v", err)
	default:
		if h.Seq > c.res.Last {
			c.res.Last = h.Seq
			if c.res.Violation == "" {
				c.fail(c.res.Valid+1, "", ViolationChainBroken, "the trail head says %d entries, the trail holds %d", h.Seq, c.res.Valid)
			}
		}
		if h != c.prev {
			c.derivedFail("trail head %d %s, valid prefix ends at %d %s", h.Seq, h.Hash, c.prev.Seq, c.prev.Hash)
		}
	}
	if c.opts.SignedSize > 0 && c.res.Valid < c.opts.SignedSize {
		c.res.SignedCovered = false
	}
	return nil
}

// entry checks one decoded entry against the valid prefix before it. When
// it passes, extend adds it to the local chains.
func (c *checker) entry(seq uint64, s stored, prev head) (ok bool, extend func()) {
	e := s.Entry
	switch {
	case e.PrevHash != prev.Hash:
		c.fail(seq, e.ID, ViolationChainBroken, "prev_hash %q, previous entry hash %q", e.PrevHash, prev.Hash)
		return false, nil
	case prev.ID != "" && (e.ID <= prev.ID || e.Timestamp < prev.Timestamp):
		c.fail(seq, e.ID, ViolationChainBroken, "entry not after %s", prev.ID)
		return false, nil
	}
	if got := fastHash(e); got != e.Integrity.EntryHash {
		c.fail(seq, e.ID, ViolationHashMismatch, "entry hashes to %s, recorded %s", got, e.Integrity.EntryHash)
		return false, nil
	}
	if e.Workspace == "" {
		if e.Integrity.LocalHash != "" {
			c.fail(seq, e.ID, ViolationHashMismatch, "system-level entry carries a local_hash")
			return false, nil
		}
		return true, func() {}
	}
	ws := e.Workspace
	lh := c.res.local[ws]
	local := s.local()
	switch {
	case local.PrevHash != lh.Hash:
		c.fail(seq, e.ID, ViolationChainBroken, "local prev_hash %q, previous local hash %q", local.PrevHash, lh.Hash)
		return false, nil
	case fastHash(local) != local.Integrity.EntryHash:
		c.fail(seq, e.ID, ViolationHashMismatch, "local view hashes to %s, recorded %s", fastHash(local), local.Integrity.EntryHash)
		return false, nil
	case lh.Timestamp != "" && e.Timestamp <= lh.Timestamp:
		c.fail(seq, e.ID, ViolationNotMonotonic, "timestamp %s not after %s, the previous entry of workspace %s", e.Timestamp, lh.Timestamp, ws)
		return false, nil
	case c.res.terminal[ws]:
		c.fail(seq, e.ID, ViolationAfterTerminal, "local entry of workspace %s after its terminal state", ws)
		return false, nil
	}
	return true, func() {
		if e.EventType == EventWorkspaceStateChanged {
			var body struct {
				ToState string `json:"to_state"`
			}
			if json.Unmarshal(e.Body, &body) == nil && terminalStates[body.ToState] {
				c.res.terminal[ws] = true
			}
		}
		c.res.local[ws] = head{Seq: lh.Seq + 1, Hash: local.Integrity.EntryHash, ID: e.ID, Timestamp: e.Timestamp}
	}
}

// tree adds entry #seq to the Merkle tree, compares every node it completes
// with the stored one, and at the signed size compares the root.
func (c *checker) tree(txn *badger.Txn, levels map[uint]*badger.Iterator, seq uint64, e Entry) bool {
	leaf, err := LeafData(e)
	if err != nil {
		c.fail(seq, e.ID, ViolationHashMismatch, "entry_hash: %v", err)
		return false
	}
	err = c.rng.Append(Hasher{}.HashLeaf(leaf), func(id compact.NodeID, hash []byte) {
		want := nodeKey(id)
		it, ok := levels[id.Level]
		if !ok {
			it = txn.NewIterator(badger.IteratorOptions{Prefix: append(bytes.Clone(prefixNode), byte(id.Level))})
			it.Seek(want)
			levels[id.Level] = it
		}
		if !it.Valid() || !bytes.Equal(it.Item().Key(), want) {
			c.derivedFail("Merkle node (%d,%d) is missing", id.Level, id.Index)
			return // the level's nodes are contiguous: the iterator waits for a later one
		}
		if err := it.Item().Value(func(v []byte) error {
			if !bytes.Equal(v, hash) {
				c.derivedFail("Merkle node (%d,%d) is %x, the entries give %x", id.Level, id.Index, v, hash)
			}
			return nil
		}); err != nil {
			c.derivedFail("Merkle node (%d,%d): %v", id.Level, id.Index, err)
		}
		it.Next()
	})
	if err != nil {
		c.fail(seq, e.ID, ViolationHashMismatch, "merkle tree: %v", err)
		return false
	}
	if seq == c.opts.SignedSize {
		root, err := c.rng.GetRootHash(nil)
		if err != nil {
			c.fail(seq, e.ID, ViolationRootMismatch, "merkle root: %v", err)
			return false
		}
		if !bytes.Equal(root, c.opts.SignedRoot) {
			c.fail(seq, e.ID, ViolationRootMismatch, "the first %d entries hash to root %s, the signed tree head says %s",
				seq, FormatHash(root), FormatHash(c.opts.SignedRoot))
			return false
		}
		c.res.SignedCovered = true
	}
	return true
}

// index checks the id index entry of entry #seq: ids increase with seq, so
// the index is walked in step with the entries.
func (c *checker) index(ids *badger.Iterator, seq uint64, id string) {
	want := append(bytes.Clone(prefixID), id...)
	for ids.Valid() && bytes.Compare(ids.Item().Key(), want) < 0 {
		c.derivedFail("id index holds %s, which is not an entry of the valid trail", ids.Item().Key()[len(prefixID):])
		ids.Next()
	}
	if !ids.Valid() || !bytes.Equal(ids.Item().Key(), want) {
		c.derivedFail("id index lacks entry #%d (%s)", seq, id)
		return
	}
	if err := ids.Item().Value(func(v []byte) error {
		if len(v) != 8 || binary.BigEndian.Uint64(v) != seq {
			c.derivedFail("id index maps %s to %x, want #%d", id, v, seq)
		}
		return nil
	}); err != nil {
		c.derivedFail("id index %s: %v", id, err)
	}
	ids.Next()
}

// localIndex checks that entry #seq, the latest of workspace ws, has its
// position in the workspace's local index.
func (c *checker) localIndex(txn *badger.Txn, seq uint64, ws string) {
	n := c.res.local[ws].Seq
	item, err := txn.Get(localKey(ws, n))
	if err != nil {
		c.derivedFail("local index of %s lacks position %d: %v", ws, n, err)
		return
	}
	if err := item.Value(func(v []byte) error {
		if len(v) != 8 || binary.BigEndian.Uint64(v) != seq {
			c.derivedFail("local index of %s position %d is %x, want #%d", ws, n, v, seq)
		}
		return nil
	}); err != nil {
		c.derivedFail("local index of %s position %d: %v", ws, n, err)
	}
}

// derived compares the local heads with the chains, and looks for index
// positions and Merkle nodes beyond the valid prefix.
func (c *checker) derived(txn *badger.Txn) error {
	if c.res.Violation != "" {
		return nil // Repair rebuilds everything derived anyway
	}
	heads := 0
	it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixHeadWS, PrefetchValues: true})
	for it.Rewind(); it.Valid(); it.Next() {
		heads++
		ws := string(it.Item().Key()[len(prefixHeadWS):])
		var h head
		if err := it.Item().Value(func(v []byte) error { return json.Unmarshal(v, &h) }); err != nil || h != c.res.local[ws] {
			c.derivedFail("local head of %s is %+v, the entries give %+v", ws, h, c.res.local[ws])
		}
	}
	it.Close()
	if heads != len(c.res.local) {
		c.derivedFail("%d local heads stored, the entries give %d", heads, len(c.res.local))
	}
	// Nothing beyond each workspace's last local position, nor a local
	// index of a workspace with no entries.
	it = txn.NewIterator(badger.IteratorOptions{Prefix: prefixLocal})
	defer it.Close()
	for it.Rewind(); it.Valid(); {
		wsb, ok := splitLocalKey(it.Item().Key())
		if !ok {
			c.derivedFail("malformed local index key %q", it.Item().Key()[len(prefixLocal):])
			it.Next()
			continue
		}
		ws := string(wsb)
		h, ok := c.res.local[ws]
		if !ok {
			c.derivedFail("local index of %s, which has no entries", ws)
			it.Seek(localKey(ws, 1<<64-1))
			it.Next()
			continue
		}
		it.Seek(localKey(ws, h.Seq+1))
		if it.Valid() && bytes.HasPrefix(it.Item().Key(), localKey(ws, 0)[:len(prefixLocal)+len(ws)+1]) {
			c.derivedFail("local index of %s goes beyond its %d entries", ws, h.Seq)
			it.Seek(localKey(ws, 1<<64-1))
			it.Next()
		}
	}
	// Nothing beyond the last node of each level: a tree of n leaves has
	// n>>l nodes at level l.
	n := c.res.Valid
	for l := range 64 {
		k := nodeKey(compact.NewNodeID(uint(l), n>>l))
		node := txn.NewIterator(badger.IteratorOptions{Prefix: k[:len(prefixNode)+1]})
		node.Seek(k)
		stray := node.Valid()
		node.Close()
		if stray {
			c.derivedFail("Merkle node beyond the %d entries at level %d", n, l)
			break
		}
	}
	return nil
}

// readStored decodes the value stored under t/g/<seq> for Check and
// Repair (decodeStored: the direct parser, encoding/json for older data,
// whose escaped <, > and & are brought back to the canonical body).
func readStored(v []byte) (stored, error) { return decodeStored(v) }
