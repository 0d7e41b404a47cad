package traillog

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/dgraph-io/badger/v4"
	"github.com/transparency-dev/merkle/compact"

	"github.com/wacpd/wacpd/internal/canon"
	"github.com/wacpd/wacpd/internal/latest"
	"github.com/wacpd/wacpd/internal/seglog"
	"github.com/wacpd/wacpd/trail"
)

// Key layout (prefix "t/"); see doc.go.
var (
	prefixGlobal = []byte("t/g/") // t/g/<seq:8BE> -> stored entry
	prefixLocal  = []byte("t/w/") // t/w/<ws>/<wsseq:8BE> -> <seq:8BE>… (local.go)
	keyHead      = []byte("t/h/g")
	prefixHeadWS = []byte("t/h/w/") // t/h/w/<ws> -> trail.Head
	prefixNode   = []byte("t/m/")   // t/m/<level:1><index:8BE> -> Merkle node hash (perfect subtrees of level >= minNodeLevel only)
)

// appendHead writes h as encoding/json would (it is read with getJSON), without
// reflection: every append writes two heads.
func appendHead(b []byte, h trail.Head) []byte {
	b = append(b, `{"seq":`...)
	b = strconv.AppendUint(b, h.Seq, 10)
	b = append(b, `,"hash":`...)
	b = canon.AppendString(b, h.Hash)
	if h.ID != "" {
		b = append(b, `,"id":`...)
		b = canon.AppendString(b, h.ID)
	}
	if h.Timestamp != "" {
		b = append(b, `,"timestamp":`...)
		b = canon.AppendString(b, h.Timestamp)
	}
	return append(b, '}')
}

// stored is the value under t/g/<seq>: the global view of the entry plus the
// previous hash of its local chain, from which the local view is rebuilt.
type stored struct {
	Entry     trail.Entry `json:"entry"`
	LocalPrev string      `json:"local_prev_hash,omitempty"`
}

// Log is the trail of one run in Badger. Appends go through a Batch inside
// the caller's transaction; Log keeps the committed chain heads in memory.
type Log struct {
	db  *badger.DB
	seg *seglog.Log // where the entries' bytes are (nil: in Badger)

	mu     sync.Mutex // guards global, local and rng
	global trail.Head
	local  map[string]trail.Head
	rng    *compact.Range // the Merkle tree of the global trail, as a compact range [0, global.Seq)
}

// Event is what a caller appends: the runtime assigns ID and Timestamp.
type Event struct {
	ID        string
	Timestamp string
	Workspace string // "" for a system-level event
	Actor     string
	Type      trail.EventType
	Body      any // encodes to a JSON object
}

// Open loads the chain heads from db. New entries' bytes go to seg's
// segment files (in Badger itself when seg is nil).
func Open(db *badger.DB, seg *seglog.Log) (*Log, error) {
	l := &Log{db: db, seg: seg}
	if err := l.Reload(); err != nil {
		return nil, err
	}
	return l, nil
}

// storedHeads calls fn with each workspace's local head as stored in txn
// (t/h/w/<ws>, read with latest.Each: builds of layout 3 rewrote them
// with every batch), or the error decoding it; it stops at fn's first
// error. Since layout 4 a head is written only by the batch that gives its
// workspace its first entry (and by Repair): it may be behind the
// workspace's chain, and localHeads gives the head itself.
func storedHeads(txn *badger.Txn, fn func(ws string, h trail.Head, err error) error) error {
	return latest.Each(txn, prefixHeadWS, func(item *badger.Item) error {
		var h trail.Head
		err := item.Value(func(v []byte) error { return json.Unmarshal(v, &h) })
		return fn(string(item.Key()[len(prefixHeadWS):]), h, err)
	})
}

// localHeads returns each workspace's local head: its stored head
// (storedHeads, which says which workspaces have a trail), or, when the
// workspace's local index goes past it, the head of its last position there,
// from that entry (its local hash, id and timestamp). The stored heads are
// checked against the entries by Check (derived), and the local index too;
// a head derived from an entry that cannot be read is an error that names
// it.
func localHeads(txn *badger.Txn, seg *seglog.Log) (map[string]trail.Head, error) {
	local := make(map[string]trail.Head)
	it := newLocalsReverse(txn)
	defer it.Close()
	g := newGlobalIter(txn, badger.IteratorOptions{})
	defer g.close()
	err := storedHeads(txn, func(ws string, h trail.Head, err error) error {
		if err != nil {
			return fmt.Errorf("local head of %s: %w", ws, err)
		}
		n, seq, err := lastLocalIn(it, ws)
		if err != nil {
			return fmt.Errorf("local head of %s: local index: %w", ws, err)
		}
		if n > h.Seq {
			if h, err = headIn(g, seg, ws, n, seq); err != nil {
				return err
			}
		}
		local[ws] = h
		return nil
	})
	return local, err
}

// headIn returns workspace ws's local head at its position n, entry #seq,
// with g, a walk of the global trail moved to each entry asked for.
func headIn(g *globalIter, seg *seglog.Log, ws string, n, seq uint64) (trail.Head, error) {
	g.seek(seq)
	if !g.valid() || g.entry().seq != seq {
		return trail.Head{}, fmt.Errorf("local head of %s: position %d is entry #%d: %w", ws, n, seq, badger.ErrKeyNotFound)
	}
	var s stored
	if err := g.entry().value(seg, func(v []byte) (err error) { s, err = readStored(v); return err }); err != nil {
		return trail.Head{}, fmt.Errorf("local head of %s: position %d, entry #%d: %w", ws, n, seq, err)
	}
	if s.Entry.Workspace != ws {
		return trail.Head{}, fmt.Errorf("local head of %s: position %d is entry #%d, of workspace %q", ws, n, seq, s.Entry.Workspace)
	}
	return trail.Head{Seq: n, Hash: s.Entry.Integrity.LocalHash, ID: s.Entry.ID, Timestamp: s.Entry.Timestamp}, nil
}

// Reload reads the committed chain heads and Merkle tree from the database
// again, after a write whose outcome is unknown (it failed, but may have
// reached the disk). No batch may be open.
func (l *Log) Reload() error {
	var global trail.Head
	var local map[string]trail.Head
	err := view(l.db, "read trail", func(txn *badger.Txn) (err error) {
		if err := getJSON(txn, keyHead, &global); err != nil && !errors.Is(err, badger.ErrKeyNotFound) {
			return err
		}
		local, err = localHeads(txn, l.seg)
		return err
	})
	if err != nil {
		return fmt.Errorf("open trail: %w", err)
	}
	l.mu.Lock()
	l.global, l.local = global, local
	l.mu.Unlock()
	rng, err := l.loadRange()
	if err != nil {
		return fmt.Errorf("open trail: merkle tree: %w", err)
	}
	l.mu.Lock()
	l.rng = rng
	l.mu.Unlock()
	return nil
}

// Len returns the number of committed entries in the global trail.
func (l *Log) Len() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.global.Seq
}

// Last returns the ID and timestamp of the last committed entry ("" when empty).
func (l *Log) Last() (id, timestamp string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.global.ID, l.global.Timestamp
}

// LocalLen returns the number of committed entries in workspace ws's trail.
func (l *Log) LocalLen(ws string) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.local[ws].Seq
}

// Batch stages entries in one Badger transaction. Entries appended to a batch
// chain onto each other; Flush writes the chains' heads once all are
// appended, and the Log's heads move only when Commit is called after the
// transaction committed. A batch is used by one goroutine. Batches are
// committed in the order they were started; a batch started with
// NewBatchAfter continues one whose transaction is still being written.
type Batch struct {
	log     *Log
	parent  *Batch // the batch this one continues, until Detach
	txn     *seglog.Txn
	global  trail.Head
	local   map[string]trail.Head // heads touched by this batch
	born    []string              // the workspaces this batch gave their first entry
	groups  localGroups           // the local index positions of this batch's entries
	group   pendingGroup          // the records of this batch's entries (global.go)
	rng     *compact.Range        // the Merkle tree including this batch's entries
	entries []trail.Entry
	// unflushed: entries were appended since the last Flush.
	unflushed bool
	// scratch is where Append encodes an entry's stored form, which the
	// segment files' block copies: a buffer per entry, grown as it was
	// encoded, was 5.7 KB of the 31 KB the commit path allocated per
	// checkpoint at 64 agents.
	scratch []byte
}

// maxScratch bounds the buffer a Batch keeps for its entries' stored forms.
const maxScratch = 64 << 10

// NewBatch starts a batch writing into txn.
func (l *Log) NewBatch(txn *seglog.Txn) *Batch {
	l.mu.Lock()
	defer l.mu.Unlock()
	return &Batch{log: l, txn: txn, global: l.global, local: make(map[string]trail.Head), groups: localGroups{}, rng: cloneRange(l.rng)}
}

// NewBatchAfter starts a batch writing into txn that continues prev, whose
// transaction has been submitted but may not have committed yet: its
// entries follow prev's. Commit prev before this batch; if prev fails,
// drop this batch too.
func (l *Log) NewBatchAfter(prev *Batch, txn *seglog.Txn) *Batch {
	return &Batch{log: l, parent: prev, txn: txn, global: prev.global, local: make(map[string]trail.Head), groups: localGroups{}, rng: cloneRange(prev.rng)}
}

// Detach forgets the batch this one continues, once that batch committed
// (the Log then holds its heads).
func (b *Batch) Detach() { b.parent = nil }

func (b *Batch) localHead(ws string) trail.Head {
	if h, ok := b.local[ws]; ok {
		return h
	}
	if b.parent != nil {
		return b.parent.localHead(ws)
	}
	b.log.mu.Lock()
	defer b.log.mu.Unlock()
	return b.log.local[ws]
}

// Append validates ev against the registry, links it into the global chain and
// its workspace's chain, and writes it into the batch's transaction. It
// returns the entry in its global view.
func (b *Batch) Append(ev Event) (trail.Entry, error) {
	body, err := trail.EncodeBody(ev.Type, ev.Body)
	if err != nil {
		return trail.Entry{}, err
	}
	if ev.ID == "" || ev.Timestamp == "" || ev.Actor == "" {
		return trail.Entry{}, fmt.Errorf("append %s: %w: id, timestamp and actor are required", ev.Type, trail.ErrBodyInvalid)
	}
	if b.global.ID != "" && (ev.ID <= b.global.ID || ev.Timestamp < b.global.Timestamp) {
		return trail.Entry{}, fmt.Errorf("append %s: %w: id %s at %s after %s at %s",
			ev.Type, ErrOrder, ev.ID, ev.Timestamp, b.global.ID, b.global.Timestamp)
	}
	e := trail.Entry{ID: ev.ID, Timestamp: ev.Timestamp, Workspace: ev.Workspace, Actor: ev.Actor,
		EventType: ev.Type, Body: body, Integrity: trail.Integrity{Algorithm: trail.Algorithm}}
	var lh trail.Head
	if ev.Workspace != "" {
		lh = b.localHead(ev.Workspace)
		e.PrevHash = lh.Hash
		e.Integrity.LocalHash = trail.HashCanonical(e) // body is canonical: Hash(e) without re-parsing
	}
	localPrev := e.PrevHash
	e.PrevHash = b.global.Hash
	e.Integrity.EntryHash = trail.HashCanonical(e)

	seq := b.global.Seq + 1
	leaf, err := trail.LeafData(e)
	if err != nil {
		return trail.Entry{}, err
	}
	var nodeErr error
	if err := b.rng.Append(trail.Hasher{}.HashLeaf(leaf), func(id compact.NodeID, hash []byte) {
		if nodeErr == nil && id.Level >= minNodeLevel {
			nodeErr = b.txn.Set(nodeKey(id), hash)
		}
	}); err != nil || nodeErr != nil {
		return trail.Entry{}, fmt.Errorf("append %s: merkle tree: %w", ev.Type, errors.Join(err, nodeErr))
	}
	val := appendStored(b.scratch[:0], stored{Entry: e, LocalPrev: localPrev})
	if cap(val) <= maxScratch {
		b.scratch = val // addEntry copies it (or clones it for Badger)
	}
	// Beside the pointer, the entry hash and the id: the Merkle tree's low
	// nodes and the search by id read them without the segments. In the
	// segment files, the batch's entries are one key's group (global.go).
	if err := b.addEntry(seq, val, leaf, e.ID); err != nil {
		return trail.Entry{}, fmt.Errorf("append %s: %w", ev.Type, err)
	}
	b.global = trail.Head{Seq: seq, Hash: e.Integrity.EntryHash, ID: e.ID, Timestamp: e.Timestamp}
	if ev.Workspace != "" {
		if lh.Seq == 0 {
			b.born = append(b.born, ev.Workspace)
		}
		lh = trail.Head{Seq: lh.Seq + 1, Hash: e.Integrity.LocalHash, ID: e.ID, Timestamp: e.Timestamp}
		if err := b.groups.add(b.txn, ev.Workspace, lh.Seq, seq); err != nil {
			return trail.Entry{}, fmt.Errorf("append %s: %w", ev.Type, err)
		}
		b.local[ev.Workspace] = lh
	}
	b.entries = append(b.entries, e)
	b.unflushed = true
	return e, nil
}

// addEntry stores entry #seq (its stored value val, hash leaf and id): in
// the batch's group when the values go to the segment files, else under a
// key of its own.
func (b *Batch) addEntry(seq uint64, val, leaf []byte, id string) error {
	ptr, ok := b.txn.Add(val)
	if !ok || len(id) == 0 || len(id) > 255 {
		extra := append(append(make([]byte, 0, len(leaf)+len(id)), leaf...), id...)
		if ok { // an id a record cannot hold: a key of its own
			return b.txn.SetEntry(badger.NewEntry(globalKey(seq), append(ptr, extra...)).WithMeta(seglog.Meta))
		}
		return b.txn.SetValueExtra(globalKey(seq), bytes.Clone(val), extra) // Badger keeps it: not Append's scratch
	}
	g := &b.group
	if g.n > 0 && (g.n == maxEntryGroup || g.first+uint64(g.n) != seq) {
		if err := b.flushGroup(); err != nil {
			return err
		}
		*g = pendingGroup{}
	}
	if g.n == 0 {
		g.first, g.b = seq, make([]byte, 0, 128)
	}
	g.add(appendRecord(g.b, ptr, leaf, id))
	return nil
}

// flushGroup sets the group's key to its records so far.
func (b *Batch) flushGroup() error {
	return b.group.set(b.txn, globalKey(b.group.first), metaGroup)
}

// Flush writes the global head, the local index positions of the batch's
// entries (one key per workspace: local.go) and the local head of each
// workspace the batch gave its first entry into its transaction: call it
// once every entry is appended, before the transaction commits (Append does
// not write them: it wrote them for every entry, each overwriting the last,
// a fifth of an append's time). It may be called more than once; an append
// after it needs another. A workspace's later heads are not written (layout
// 4): Open derives them from its local index (localHeads). Rewriting them
// with every batch was 1.1 of the 6.9 keys given to Badger per checkpoint
// at 64 agents.
func (b *Batch) Flush() error {
	if !b.unflushed {
		return nil
	}
	if err := b.flushGroup(); err != nil {
		return fmt.Errorf("trail entries: %w", err)
	}
	if err := b.groups.write(b.txn); err != nil {
		return fmt.Errorf("trail local index: %w", err)
	}
	buf := make([]byte, 0, 256)
	if err := b.txn.Set(keyHead, appendHead(buf, b.global)); err != nil {
		return fmt.Errorf("trail heads: %w", err)
	}
	for _, ws := range b.born {
		if err := b.txn.Set(append(bytes.Clone(prefixHeadWS), ws...), appendHead(make([]byte, 0, 256), b.local[ws])); err != nil {
			return fmt.Errorf("trail heads: %w", err)
		}
	}
	b.unflushed = false
	return nil
}

// Seq returns the global seq of the batch's last entry (of the committed
// trail's last, before the batch's first append).
func (b *Batch) Seq() uint64 { return b.global.Seq }

// Entries returns the entries appended so far, in order.
func (b *Batch) Entries() []trail.Entry { return b.entries }

// Commit moves the Log's heads to the batch's. Call it only after the
// transaction committed successfully; after a failed commit, drop the batch.
func (b *Batch) Commit() {
	b.log.mu.Lock()
	defer b.log.mu.Unlock()
	b.log.global = b.global
	b.log.rng = b.rng
	for ws, h := range b.local {
		b.log.local[ws] = h
	}
}

func u64(n uint64) []byte { return binary.BigEndian.AppendUint64(nil, n) }

func globalKey(seq uint64) []byte {
	return binary.BigEndian.AppendUint64(bytes.Clone(prefixGlobal), seq)
}

func localKey(ws string, n uint64) []byte {
	k := append(bytes.Clone(prefixLocal), ws...)
	k = append(k, '/')
	return binary.BigEndian.AppendUint64(k, n)
}

// splitLocalKey returns the workspace of a local index key (what localKey
// writes; its 8-byte position may hold a '/'), or ok false for a key of
// another form.
func splitLocalKey(key []byte) (ws []byte, ok bool) {
	k, found := bytes.CutPrefix(key, prefixLocal)
	if !found || len(k) < 9 || k[len(k)-9] != '/' {
		return nil, false
	}
	return k[:len(k)-9], true
}

func setJSON(txn *badger.Txn, key []byte, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return txn.Set(key, b)
}

func getJSON(txn *badger.Txn, key []byte, v any) error {
	item, err := txn.Get(key)
	if err != nil {
		return err
	}
	return item.Value(func(b []byte) error { return json.Unmarshal(b, v) })
}
