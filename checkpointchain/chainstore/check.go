package chainstore

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"sync"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/casstore"
	"github.com/wacpd/wacpd/checkpointchain"
	"github.com/wacpd/wacpd/internal/latest"
	"github.com/wacpd/wacpd/internal/seglog"
	"github.com/wacpd/wacpd/internal/strictjson"
)

// Claim is what the trail says of one checkpoint: its checkpoint_created
// entry (Entry is the entry's id).
type Claim struct {
	Entry     string
	ID        string
	Workspace string
	Type      string
	Status    string
	Parent    string // "" for the first of its chain
	Digest    casstore.Ref
}

// StoreProblem is the first record CheckStore found that contradicts the
// claims.
type StoreProblem struct {
	Key    string // the record: "k/c/<id>", "k/w/<ws>/<n>", "k/h/<ws>", or the object's digest
	Entry  string // the claim's entry, when the problem is about a claimed checkpoint
	Object bool   // the object itself is wrong: missing, corrupt or another checkpoint
	// Missing is set with Object when the object is not stored at all.
	Missing bool
	Detail  string
}

// CheckStore compares everything the package stores (the "k/" records and
// the objects they name) with claims, the checkpoints the trail records in
// trail order: for each claim, the index k/c/<id> names its workspace, its
// 1-based position in that workspace's chain and its digest; the order
// record k/w/<ws>/<n> names it; its object is stored, hashes to the digest
// and decodes to that checkpoint (id, workspace, type, status) whose parent
// is the previous checkpoint of its chain; each workspace's register
// k/h/<ws> is {head, count, last_final} of its claims up to some position,
// with the last_final of them all; and no "k/" record
// is left that no claim accounts for. It returns the first problem, nil
// when there is none: the first claim's in trail order (its index, then its
// order record, then its object), then a register's (by workspace), then
// the first record in key order that nothing accounts for. An error means
// the check could not run.
//
// It reads the records and objects in key order, each once (a scan of
// "k/" and scans of parts of "cas/", on goroutines of their own), rather
// than looking each claim's up: a point read finds and decompresses a
// block per record, a scan each block once. Objects kept in seg's segment
// files are then read in the files' order, each block once. Badger panics
// on some damaged blocks; a scan's panic is raised again in the caller's
// goroutine, where the caller can recover it.
func CheckStore(txn *badger.Txn, seg *seglog.Log, claims []Claim) (*StoreProblem, error) {
	c := newStore(txn, seg, false)
	for _, cl := range claims {
		c.Add(cl)
	}
	return c.Finish()
}

// StoreCheck is CheckStore in steps, for a caller that reads the claims
// from the trail: NewStoreCheck, Add for each claim in trail order (from
// one goroutine), Finish. With segment files, Add checks each claim's
// object at once when it can, from the block the caller has just read the
// claim's trail entry from (seglog's cache still holds it: the objects of a
// batch and its entries share a block; until NewStoreCheck's scan of cas/
// is done, Add looks the object's pointer up); Finish checks the others, from
// where NewStoreCheck's one scan of cas/ found them (or, for an object not
// in the segment files, a lookup), and scans only k/ again. Reading
// the objects only at the end decoded every block of the segment files a
// second time (a tenth of a full check's time, docs/performance.md).
type StoreCheck struct {
	*storeCheck
	txn *badger.Txn
	seg *seglog.Log
	// Located is closed once locs holds the pointer of every object kept
	// in the segment files (in digest order); panicked is a panic of that
	// scan, raised again by Finish.
	located  chan struct{}
	locs     *locIndex
	panicked any
	early    bool        // Add checks objects
	ready    bool        // located has been seen closed (Add's goroutine)
	batch    objectBatch // Add's objects waiting to be hashed (Add's goroutine)
}

// NewStoreCheck starts a check of what txn holds; with seg, it starts
// finding where the objects kept in seg are, on a goroutine of its own.
func NewStoreCheck(txn *badger.Txn, seg *seglog.Log) *StoreCheck { return newStore(txn, seg, true) }

func newStore(txn *badger.Txn, seg *seglog.Log, early bool) *StoreCheck {
	c := &StoreCheck{storeCheck: newStoreCheck(), txn: txn, seg: seg, located: make(chan struct{}), early: early && seg != nil}
	if !c.early {
		close(c.located)
		return c
	}
	hold := testHooks.locate
	go func() {
		defer close(c.located)
		defer func() { c.panicked = recover() }()
		if hold != nil {
			<-hold
		}
		c.locs = locate(txn)
	}()
	return c
}

// testHooks.locate, in tests, holds back the scan of cas/ of the
// StoreChecks started while it is set, until it is closed.
var testHooks struct{ locate chan struct{} }

// Add adds the next claim in trail order and, when its object is in a
// block seglog has in memory, checks it.
func (c *StoreCheck) Add(cl Claim) {
	i := c.add(cl)
	if !c.early || c.seenObject[i] {
		return
	}
	if !c.ready {
		select {
		case <-c.located:
			c.ready = true
		default:
		}
	}
	var ptr seglog.Ptr
	var ok bool
	switch {
	case c.ready && c.panicked != nil:
		return
	case c.ready:
		ptr, ok = c.locs.find(cl.Digest)
	default:
		// locate is still reading cas/: the object's pointer is looked
		// up. Left to Finish, 500-1,500 objects of a one-client load's
		// verify were read again from their blocks, one block at a time.
		ptr, ok = c.lookup(cl.Digest)
	}
	if !ok {
		return // Finish finds it, or reports it missing
	}
	c.seenObject[i] = true // Finish takes it from locs if it is not checked here
	b, cached := c.seg.Cached(ptr)
	if !cached {
		return
	}
	c.batch.add(c.storeCheck, i, b)
	c.checked[i] = true
}

// Claims returns the claims added since NewStoreCheck or the last Reset,
// in order (a caller whose walk starts again keeps those before where it
// starts from): the StoreCheck's own, which the caller must not change.
func (c *StoreCheck) Claims() []Claim { return c.claims }

// Objects returns the number of distinct objects the claims added name.
func (c *StoreCheck) Objects() int { return len(c.byRef) }

// Reset forgets the claims added so far: the caller's walk of the trail
// starts again.
func (c *StoreCheck) Reset() {
	c.storeCheck = newStoreCheck()
	c.batch.drop() // its claims were the old check's
}

// Close waits for the goroutine NewStoreCheck started, which reads txn:
// call it before txn ends, whether or not Finish was called.
func (c *StoreCheck) Close() { <-c.located }

// Finish checks what Add left and returns the first problem, as
// CheckStore does.
func (c *StoreCheck) Finish() (*StoreProblem, error) {
	c.batch.flush(c.storeCheck)
	<-c.located
	if c.panicked != nil {
		panic(c.panicked)
	}
	if c.unordered {
		c.byID = make(map[string]int, len(c.claims))
		for i, cl := range c.claims {
			c.byID[cl.ID] = i
		}
	}
	parts := max(1, runtime.GOMAXPROCS(0))
	c.pointed = make([][]pointed, parts)
	scans := []func() error{func() error { return c.scanRecords(c.txn) }}
	if c.locs != nil {
		// locate read cas/ already: the objects Add did not check are
		// found in what it read, or looked up.
		scans = append(scans, c.findObjects)
	} else {
		for i := range parts {
			lo, hi := 256*i/parts, 256*(i+1)/parts
			scans = append(scans, func() error { return c.scanObjects(c.txn, i, byte(lo), hi) })
		}
	}
	if err := runAll(scans); err != nil {
		return nil, err
	}
	if err := c.readPointed(c.seg, parts); err != nil {
		return nil, err
	}
	return c.result(), nil
}

// storeCheck is the state of one CheckStore.
type storeCheck struct {
	claims []Claim
	prevs  []checkpointchain.Chain // prevs[i]: claims[i]'s chain before it
	chains map[string]*chainOf     // by workspace
	byRef  map[casstore.Ref]int
	// The claims' ids ascend (the daemon's ids grow with time), unless
	// unordered; then byID finds a claim by id (made by Finish). Otherwise
	// the index records, read in key order, are matched to the claims in
	// order (idNext: the first claim not yet matched).
	unordered bool
	byID      map[string]int
	idNext    int

	// Set by the scans: the records scan writes seenIndex, seenOrder and
	// the fields after mu; an objects scan the seenObject of the claims
	// whose digests it covers.
	seenIndex, seenOrder, seenObject []bool
	checked                          []bool      // the object was checked by StoreCheck.Add
	pointed                          [][]pointed // by objects scan: claimed objects in segments
	problems                         []rankedProblem
	mu                               sync.Mutex
	heads                            map[string]bool
	register                         *StoreProblem // first register problem in key order
	extra                            *StoreProblem // first record in key order no claim accounts for
}

// rankedProblem is a claim's problem: rank says which of its checks it
// comes from (index, order, object), so the claim's first is kept.
type rankedProblem struct {
	claim, rank int
	p           *StoreProblem
}

// chainOf is a workspace's chain as the claims give it, and its claims in
// chain order.
type chainOf struct {
	chain checkpointchain.Chain
	order []int
}

func newStoreCheck() *storeCheck {
	return &storeCheck{chains: map[string]*chainOf{}, byRef: map[casstore.Ref]int{}, heads: map[string]bool{}}
}

// add adds the next claim in trail order and returns its index.
func (c *storeCheck) add(cl Claim) int {
	i := len(c.claims)
	if i == cap(c.claims) {
		// Doubled: append grows a long slice by a quarter, and a verify of
		// a one-client load copied its claims about five times their size
		// (a tenth of what it allocated).
		c.claims = slices.Grow(c.claims, max(1024, i))
		c.prevs = slices.Grow(c.prevs, max(1024, i))
	}
	c.claims = append(c.claims, cl)
	if i > 0 && cl.ID <= c.claims[i-1].ID {
		c.unordered = true
	}
	ch := c.chains[cl.Workspace]
	if ch == nil {
		ch = &chainOf{}
		c.chains[cl.Workspace] = ch
	}
	c.prevs = append(c.prevs, ch.chain)
	ch.chain = ch.chain.Append(checkpointchain.Checkpoint{ID: cl.ID, Status: cl.Status})
	ch.order = append(ch.order, i)
	c.seenIndex, c.seenOrder = append(c.seenIndex, false), append(c.seenOrder, false)
	c.seenObject, c.checked = append(c.seenObject, false), append(c.checked, false)
	if j, dup := c.byRef[cl.Digest]; dup {
		// Two checkpoints cannot have one object (each holds its id).
		c.seenObject[i] = true
		c.fail(i, 2, &StoreProblem{Key: cl.Digest.String(), Object: true, Detail: fmt.Sprintf(
			"checkpoint %s claims object %s, which checkpoint %s claims too", cl.ID, cl.Digest, c.claims[j].ID)})
		return i
	}
	c.byRef[cl.Digest] = i
	return i
}

func (c *storeCheck) fail(claim, rank int, p *StoreProblem) {
	p.Entry = c.claims[claim].Entry
	c.mu.Lock()
	c.problems = append(c.problems, rankedProblem{claim, rank, p})
	c.mu.Unlock()
}

// scanRecords reads every "k/" record in key order, in three parts side
// by side: the indexes (k/c/, and any other record before k/h/), the
// chains' registers (k/h/) and the order records (k/w/, and any other
// record after the registers). It ran alone on one core at the end of a
// verify. Registers are rewritten (with each final checkpoint, and by
// builds before issue 13's seventeenth session with every batch): they are
// read with latest.Each, not stepped through version by version.
func (c *storeCheck) scanRecords(txn *badger.Txn) error {
	var extras [3]*StoreProblem
	afterHeads := append(bytes.Clone(prefixHead[:len(prefixHead)-1]), prefixHead[len(prefixHead)-1]+1)
	err := runAll([]func() error{
		func() error { return c.scanRecordRange(txn, []byte("k/"), prefixHead, &extras[0]) },
		func() error {
			return latest.Each(txn, prefixHead, func(item *badger.Item) error {
				return item.Value(func(v []byte) error { c.head(string(item.Key()), v, &extras[1]); return nil })
			})
		},
		func() error { return c.scanRecordRange(txn, afterHeads, nil, &extras[2]) },
	})
	c.extra = cmp.Or(extras[0], extras[1], extras[2])
	return err
}

// scanRecordRange reads the "k/" records from the key from on, up to to
// (nil: all), in key order; extra is set to the first record of the range
// no claim accounts for.
func (c *storeCheck) scanRecordRange(txn *badger.Txn, from, to []byte, extra **StoreProblem) error {
	it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte("k/")})
	defer it.Close()
	for it.Seek(from); it.Valid(); it.Next() {
		k := it.Item().Key()
		if to != nil && bytes.Compare(k, to) >= 0 {
			break
		}
		var err error
		switch {
		case bytes.HasPrefix(k, prefixIndex):
			err = it.Item().Value(func(v []byte) error { c.index(string(k), v, extra); return nil })
		case bytes.HasPrefix(k, prefixOrder):
			err = it.Item().Value(func(v []byte) error { c.orderRecord(k, v, extra); return nil })
		case bytes.HasPrefix(k, prefixHead):
			err = it.Item().Value(func(v []byte) error { c.head(string(k), v, extra); return nil })
		default:
			unaccounted(extra, &StoreProblem{Key: string(k), Detail: fmt.Sprintf("unknown checkpoint record %q", k)})
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// unaccounted keeps the first record no claim accounts for in *extra.
func unaccounted(extra **StoreProblem, p *StoreProblem) {
	if *extra == nil {
		*extra = p
	}
}

// index checks the index record k/c/<id> (value v).
func (c *storeCheck) index(k string, v []byte, extra **StoreProblem) {
	id := k[len(prefixIndex):]
	i, ok := c.claimOf(id)
	if !ok {
		unaccounted(extra, &StoreProblem{Key: k, Detail: fmt.Sprintf("index of checkpoint %s, which the trail does not record", id)})
		return
	}
	c.seenIndex[i] = true
	cl, n := c.claims[i], c.prevs[i].Count+1
	if indexIs(v, cl.Workspace, n, cl.Digest) {
		return
	}
	var ix indexEntry
	if err := strictjson.DecodeFields(v, &ix); err != nil {
		c.fail(i, 0, &StoreProblem{Key: k, Detail: fmt.Sprintf("record %s: %v", k, err)})
		return
	}
	if ix.Workspace != cl.Workspace || ix.N != n || ix.Digest != cl.Digest {
		c.fail(i, 0, &StoreProblem{Key: k, Detail: fmt.Sprintf("index of checkpoint %s says %s #%d %s, the trail %s #%d %s",
			cl.ID, ix.Workspace, ix.N, ix.Digest, cl.Workspace, n, cl.Digest)})
	}
}

// claimOf returns the index of the claim of checkpoint id. Without byID
// the claims' ids ascend and index asks in key order, so in the claims'
// order: the claims before the one asked for have no index record.
func (c *storeCheck) claimOf(id string) (int, bool) {
	if c.byID != nil {
		i, ok := c.byID[id]
		return i, ok
	}
	j := c.idNext
	for j < len(c.claims) && c.claims[j].ID < id {
		j++
	}
	c.idNext = j
	return j, j < len(c.claims) && c.claims[j].ID == id
}

// indexIs reports whether v is, byte for byte, the index record Put
// writes for position n of workspace ws's chain and digest d
// (encoding/json's form), so that it holds them; false leaves index to
// decode v in full (FuzzIndexIs holds the two to the same result). Only a
// name json writes as it is (printable ASCII but for " \ < > &) is
// compared so.
func indexIs(v []byte, ws string, n uint64, d casstore.Ref) bool {
	var buf [160]byte
	b, ok := appendIndex(buf[:0], ws, n, d)
	return ok && bytes.Equal(v, b)
}

// appendIndex appends the index record of position n of workspace ws's
// chain and digest d as encoding/json writes indexEntry, when ws is a name
// json writes as it is (printable ASCII but for " \ < > &); ok is false
// otherwise, and b is returned as it was.
func appendIndex(b []byte, ws string, n uint64, d casstore.Ref) (_ []byte, ok bool) {
	for i := range len(ws) {
		switch c := ws[i]; {
		case c < 0x20 || c > 0x7e, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return b, false
		}
	}
	b = append(b, `{"workspace":"`...)
	b = append(b, ws...)
	b = append(b, `","n":`...)
	b = strconv.AppendUint(b, n, 10)
	b = append(b, `,"digest":"`...)
	b, _ = d.AppendText(b)
	return append(b, `"}`...), true
}

// orderRecord checks the chain order record k/w/<ws>/<n> (value v).
func (c *storeCheck) orderRecord(k, v []byte, extra **StoreProblem) {
	rest := k[len(prefixOrder):]
	if len(rest) < 9 || rest[len(rest)-9] != '/' {
		unaccounted(extra, &StoreProblem{Key: string(k), Detail: fmt.Sprintf("malformed chain order key %q", k)})
		return
	}
	ws, n := string(rest[:len(rest)-9]), binary.BigEndian.Uint64(rest[len(rest)-8:])
	var chain []int
	if ch := c.chains[ws]; ch != nil {
		chain = ch.order
	}
	if n == 0 || n > uint64(len(chain)) {
		unaccounted(extra, &StoreProblem{Key: string(k), Detail: fmt.Sprintf("chain order of %s holds position %d, the trail gives it %d checkpoints", ws, n, len(chain))})
		return
	}
	i := chain[n-1]
	c.seenOrder[i] = true
	if cl := c.claims[i]; string(v) != cl.ID {
		c.fail(i, 1, &StoreProblem{Key: orderName(ws, n), Detail: fmt.Sprintf("chain order of %s position %d is %q, the trail %s", ws, n, v, cl.ID)})
	}
}

// head checks the register k/h/<ws> (value v).
func (c *storeCheck) head(k string, v []byte, extra **StoreProblem) {
	ws := k[len(prefixHead):]
	ch, ok := c.chains[ws]
	if !ok {
		unaccounted(extra, &StoreProblem{Key: k, Detail: fmt.Sprintf("chain register of %s, which the trail gives no checkpoint", ws)})
		return
	}
	c.heads[ws] = true
	if c.register != nil {
		return
	}
	var got checkpointchain.Chain
	if err := strictjson.DecodeFields(v, &got); err != nil {
		c.register = &StoreProblem{Key: k, Detail: fmt.Sprintf("record %s: %v", k, err)}
		return
	}
	// The register is the chain at some position (written with the first
	// checkpoint and each final one), with the chain's last_final.
	want := ch.chain
	if got.Count >= 1 && got.Count < uint64(len(ch.order)) {
		want = c.prevs[ch.order[got.Count]] // the chain before the next one
	}
	if got != want || got.LastFinal != ch.chain.LastFinal {
		c.register = &StoreProblem{Key: k, Detail: fmt.Sprintf("chain register of %s is %+v, the trail gives %+v at position %d of %d, last final %q",
			ws, got, want, want.Count, ch.chain.Count, ch.chain.LastFinal)}
	}
}

// result returns the first problem the scans found or left (a claim's
// record or object they did not find), in CheckStore's order.
func (c *storeCheck) result() *StoreProblem {
	first := rankedProblem{claim: len(c.claims)}
	for _, p := range c.problems {
		if p.claim < first.claim || p.claim == first.claim && p.rank < first.rank {
			first = p
		}
	}
	for i := range c.claims[:first.claim] {
		if p := c.missing(i); p != nil {
			return p
		}
	}
	if first.p != nil {
		if p := c.missing(first.claim); p != nil && c.rank(p) < first.rank {
			return p
		}
		return first.p
	}
	wss := make([]string, 0, len(c.chains))
	for ws := range c.chains {
		if !c.heads[ws] {
			wss = append(wss, ws)
		}
	}
	if len(wss) > 0 {
		k := string(prefixHead) + slices.Min(wss)
		return &StoreProblem{Key: k, Detail: fmt.Sprintf("record %s: %v", k, badger.ErrKeyNotFound)}
	}
	if c.register != nil {
		return c.register
	}
	return c.extra
}

// missing returns the problem of claim i's first record or object the
// scans did not find, nil when they found all three.
func (c *storeCheck) missing(i int) *StoreProblem {
	cl, n := c.claims[i], c.prevs[i].Count+1
	switch {
	case !c.seenIndex[i]:
		k := string(prefixIndex) + cl.ID
		return &StoreProblem{Key: k, Entry: cl.Entry, Detail: fmt.Sprintf("record %s: %v", k, badger.ErrKeyNotFound)}
	case !c.seenOrder[i]:
		return &StoreProblem{Key: orderName(cl.Workspace, n), Entry: cl.Entry, Detail: fmt.Sprintf("chain order of %s lacks position %d (%s)", cl.Workspace, n, cl.ID)}
	case !c.seenObject[i]:
		return &StoreProblem{Key: cl.Digest.String(), Entry: cl.Entry, Object: true, Missing: true, Detail: fmt.Sprintf("checkpoint %s: no object %s", cl.ID, cl.Digest)}
	}
	return nil
}

// rank is the rank of a problem missing returned.
func (c *storeCheck) rank(p *StoreProblem) int {
	switch {
	case p.Object:
		return 2
	case bytes.HasPrefix([]byte(p.Key), prefixIndex):
		return 0
	}
	return 1
}

// runAll runs each of fns on a goroutine of its own and returns the first
// error (in fns' order); a panic in one is raised again in the caller's
// goroutine once all have returned.
func runAll(fns []func() error) error {
	errs := make([]error, len(fns))
	panics := make([]any, len(fns))
	var wg sync.WaitGroup
	for i, f := range fns {
		wg.Go(func() {
			defer func() { panics[i] = recover() }()
			errs[i] = f()
		})
	}
	wg.Wait()
	for _, p := range panics {
		if p != nil {
			panic(p)
		}
	}
	return errors.Join(errs...)
}

// orderName prints an order key: k/w/<ws>/<n>.
func orderName(ws string, n uint64) string { return fmt.Sprintf("%s%s/%d", prefixOrder, ws, n) }
