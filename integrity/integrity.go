package integrity

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/casstore"
	"github.com/wacpd/wacpd/checkpointchain/chainstore"
	"github.com/wacpd/wacpd/internal/seglog"
	"github.com/wacpd/wacpd/internal/strictjson"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/trail/traillog"
)

// Options says what Check compares the database with and how much it reads.
type Options struct {
	// SignedSize and SignedRoot are the latest signed tree head (0: none).
	SignedSize uint64
	SignedRoot []byte
	// Full reads everything: every trail entry, Badger's checksums and the
	// checkpoint store. Otherwise only the trail's entries after the mark
	// of the previous check are read (traillog.CheckOptions.Full).
	Full bool
	// Seg is the database's segment files (nil: none, values are all in
	// Badger).
	Seg *seglog.Log
	// Opened is what NoteOpen noted when the caller opened the database
	// (nil: nothing): the storage step skips what the process wrote since
	// when none of it went to Badger's value log.
	Opened *Opened
}

// Step names the part of Check that found a problem.
type Step string

// The steps of Check, in order.
const (
	StepStorage     Step = "storage"
	StepTrail       Step = "trail"
	StepCheckpoints Step = "checkpoints"
)

// Report is the outcome of Check.
type Report struct {
	OK          bool
	Entries     uint64 // trail entries that passed (the valid prefix)
	Workspaces  int    // workspace chains among them
	Checkpoints int    // checkpoints whose records and objects were checked
	Objects     int    // distinct objects among them

	// Step, FirstBad, Violation and Detail describe the first problem.
	// FirstBad is where it is: an entry ("#N (id)"), a key, a workspace
	// (its local index), an object's digest or a Badger table file.
	// BadEntry is the trail entry it concerns, when there is one (the entry
	// id, or "#N" for an entry that could not be read).
	Step      Step
	FirstBad  string
	BadEntry  string
	Violation trail.Violation
	Detail    string

	// Trail is the trail's part of the check, for Repair (runtime
	// recovery) and MarkChecked.
	Trail traillog.CheckResult
}

// Verdict returns the report as the reply of audit.trail.verify.
func (r Report) Verdict() trail.VerifyResult {
	if r.OK {
		return trail.VerifyResult{OK: true, Entries: r.Entries}
	}
	return trail.VerifyResult{Entries: r.Entries, FirstBad: r.Where(), Violation: r.Violation, Detail: r.Detail}
}

// Where names the problem's place as a verdict does: the entry it concerns
// (its id, or "#N"), or for a derived record or damaged storage the record
// (a key, a workspace's index) or the table file.
func (r Report) Where() string {
	if r.BadEntry != "" && r.Violation != trail.ViolationIndexMismatch && r.Violation != trail.ViolationUnreadable {
		return r.BadEntry
	}
	return r.FirstBad
}

func (r *Report) fail(step Step, where, entry string, v trail.Violation, format string, args ...any) {
	r.OK, r.Step, r.FirstBad, r.BadEntry, r.Violation, r.Detail = false, step, where, entry, v, fmt.Sprintf(format, args...)
}

// Check verifies db (see the package documentation for what, in which
// order). A problem in the data is a Report with OK false; an error means
// the check could not run (ctx ended, for example).
func Check(ctx context.Context, db *badger.DB, opts Options) (Report, error) {
	if !opts.Full {
		return check(ctx, db, opts)
	}
	// The storage check reads what the others read too, but apart from
	// them: it runs beside them, and its finding comes first.
	type found struct{ where, detail string }
	st := make(chan found, 1)
	go func() {
		where, detail := storage(ctx, db, opts.Seg, opts.Opened)
		st <- found{where, detail}
	}()
	rep, err := check(ctx, db, opts)
	if f := <-st; f.detail != "" {
		if err := ctx.Err(); err != nil {
			return Report{}, err
		}
		rep = Report{OK: true}
		rep.fail(StepStorage, f.where, "", trail.ViolationUnreadable, "%s", f.detail)
		return rep, nil
	}
	return rep, err
}

// check is Check after the storage step.
func check(ctx context.Context, db *badger.DB, opts Options) (Report, error) {
	rep := Report{OK: true}
	w := &claimWalk{}
	topts := traillog.CheckOptions{SignedSize: opts.SignedSize, SignedRoot: opts.SignedRoot, Full: opts.Full, Seg: opts.Seg}
	if opts.Full {
		topts.Visit, topts.VisitEvent = w.visit, trail.EventCheckpointCreated
	}
	var (
		res traillog.CheckResult
		p   *chainstore.StoreProblem
	)
	// One snapshot for the trail and the checkpoint store: on a running
	// daemon both grow in the same transactions. The store check takes
	// each claim as the walk visits its entry, and checks its object while
	// the block it is in, read for the entry, is in memory.
	err := safe(func() error {
		return db.View(func(txn *badger.Txn) error {
			if opts.Full {
				w.sc = chainstore.NewStoreCheck(txn, opts.Seg)
				defer w.sc.Close()
			}
			var err error
			if res, err = traillog.CheckTxn(ctx, txn, topts); err != nil || !opts.Full || !res.OK() || w.bad != nil {
				return err
			}
			p, err = w.sc.Finish()
			return err
		})
	})
	if d, ok := err.(*damage); ok {
		rep.fail(StepCheckpoints, "k/", "", trail.ViolationUnreadable, "checkpoint store: %v", d)
		return rep, nil
	}
	if err != nil {
		return Report{}, fmt.Errorf("integrity check: %w", err)
	}
	rep.Trail, rep.Entries, rep.Workspaces = res, res.Valid, res.Workspaces
	switch {
	case res.Violation != "":
		entry := res.BadID
		if entry == "" {
			entry = fmt.Sprintf("#%d", res.BadSeq)
		}
		rep.fail(StepTrail, res.FirstBad, entry, res.Violation, "%s", res.Detail)
		return rep, nil
	case res.Derived != "":
		v := res.Verdict()
		rep.fail(StepTrail, res.DerivedAt, "", v.Violation, "%s", res.Derived)
		return rep, nil
	case res.Valid != res.Last:
		rep.fail(StepTrail, fmt.Sprintf("#%d", res.Valid+1), "", trail.ViolationChainBroken, "the trail holds %d entries, %d of them valid", res.Last, res.Valid)
		return rep, nil
	case !res.SignedCovered:
		rep.fail(StepTrail, fmt.Sprintf("#%d", res.Valid+1), "", trail.ViolationChainBroken, "the trail ends after %d entries; the signed tree head signs %d", res.Valid, opts.SignedSize)
		return rep, nil
	case !opts.Full:
		return rep, nil
	case w.bad != nil:
		bad := w.bad
		rep.fail(StepCheckpoints, fmt.Sprintf("#%d (%s)", bad.seq, bad.id), bad.id, trail.ViolationHashMismatch, "checkpoint_created: %v", bad.err)
		return rep, nil
	case p != nil:
		v := trail.ViolationIndexMismatch
		switch {
		case p.Missing:
			v = trail.ViolationMissingObject
		case p.Object:
			v = trail.ViolationHashMismatch
		}
		rep.fail(StepCheckpoints, p.Key, p.Entry, v, "%s", p.Detail)
		return rep, nil
	}
	rep.Checkpoints, rep.Objects = len(w.seqs), w.sc.Objects()
	return rep, nil
}

// claimWalk takes the claims of the checkpoint_created entries the
// trail's walk visits (traillog.CheckOptions.Visit) into sc, until one
// names no checkpoint (bad).
type claimWalk struct {
	sc   *chainstore.StoreCheck // set before the walk
	seqs []uint64               // seqs[i]: the trail position of sc's claim i
	bad  *claimError
}

// visit takes entry e at trail position seq. A walk that starts again
// visits a position again: what was taken from there on is dropped.
func (w *claimWalk) visit(seq uint64, e traillog.Visited) {
	keep := len(w.seqs)
	for keep > 0 && w.seqs[keep-1] >= seq {
		keep--
	}
	if keep < len(w.seqs) { // the walk started again
		w.seqs = w.seqs[:keep]
		kept := w.sc.Claims()[:keep]
		w.sc.Reset()
		for _, c := range kept {
			w.sc.Add(c)
		}
	}
	if w.bad != nil && w.bad.seq >= seq {
		w.bad = nil
	}
	if string(e.EventType) != string(trail.EventCheckpointCreated) || w.bad != nil {
		return
	}
	cl, err := claimOf(string(e.ID), e.Body)
	if err != nil {
		w.bad = &claimError{seq: seq, id: string(e.ID), err: err}
		return
	}
	w.seqs = append(w.seqs, seq)
	w.sc.Add(cl)
}

// claimError is a checkpoint_created entry whose body names no checkpoint.
type claimError struct {
	seq uint64
	id  string
	err error
}

// claimOf reads what the checkpoint_created entry id, of body, says of
// its checkpoint.
func claimOf(id string, body []byte) (chainstore.Claim, error) {
	b, ok := claimFields(body)
	if !ok {
		var err error
		if b, err = claimFull(body); err != nil {
			return chainstore.Claim{}, err
		}
	}
	d, err := casstore.Parse(b.digest)
	if err != nil {
		return chainstore.Claim{}, fmt.Errorf("digest: %w", err)
	}
	if b.id == "" {
		return chainstore.Claim{}, fmt.Errorf("no checkpoint_id")
	}
	cl := chainstore.Claim{Entry: id, ID: b.id, Workspace: b.workspace, Type: b.typ, Status: b.status, Digest: d}
	if b.hasParent {
		cl.Parent = b.parent
	}
	return cl, nil
}

// claimBody is the part of a checkpoint_created body claimOf reads.
type claimBody struct {
	id, workspace, typ, status, digest, parent string
	hasParent                                  bool
}

// claimFull reads body with the full decoder.
func claimFull(body []byte) (claimBody, error) {
	var full struct {
		CheckpointID string  `json:"checkpoint_id"`
		Workspace    string  `json:"workspace"`
		Type         string  `json:"type"`
		Status       string  `json:"status"`
		Parent       *string `json:"parent"`
		Digest       string  `json:"digest"`
	}
	if err := strictjson.DecodeFields(body, &full); err != nil {
		return claimBody{}, err
	}
	b := claimBody{full.CheckpointID, full.Workspace, full.Type, full.Status, full.Digest, "", full.Parent != nil}
	if full.Parent != nil {
		b.parent = *full.Parent
	}
	return b, nil
}

// claimFields reads body as the daemon writes it (strictjson.ScanObject),
// and reports false for any other form, which claimOf then decodes in
// full (FuzzClaimOf holds the two to the same result).
func claimFields(body []byte) (b claimBody, ok bool) {
	ok = true
	var vals [6][]byte // checkpoint_id, workspace, type, status, digest, parent: slices of body
	if !strictjson.ScanObject(body, func(name, value []byte, kind strictjson.Kind) {
		var to *[]byte
		switch string(name) {
		case "checkpoint_id":
			to = &vals[0]
		case "workspace":
			to = &vals[1]
		case "type":
			to = &vals[2]
		case "status":
			to = &vals[3]
		case "digest":
			to = &vals[4]
		case "parent":
			if kind == strictjson.KindNull {
				return
			}
			to, b.hasParent = &vals[5], true
		default:
			return
		}
		if kind != strictjson.KindString {
			ok = false
			return
		}
		*to = value
	}) || !ok {
		return claimBody{}, false
	}
	// One allocation for the claim's strings, which live as long as it.
	strictjson.Strings([]*string{&b.id, &b.workspace, &b.typ, &b.status, &b.digest, &b.parent}, vals[:])
	return b, true
}

// storage checks Badger's own checksums of every table block and reads
// back every value kept in the value log (the others are in the table
// blocks just checked, or in memtables). It returns where the first damage
// is and what it is ("" when there is none).
//
// Values are in the value log only when an entry of a table or a memtable
// points there. The table check reads every entry of the tables it was
// given (db.Tables) and notes the keys of those that do; their latest
// versions are looked up. What it did not read is newer than every entry
// it read: memtables, and tables flushed from them meanwhile, hold
// versions above the largest of those tables' (Badger's versions only
// grow), and a table a compaction writes meanwhile holds the entries of
// tables it read (the same pointers) and of newer ones. So the merged
// iterator is asked only for versions above that largest one
// (IteratorOptions.SinceTs): for a running daemon, about what its
// memtables hold instead of every key of the database; and not even those
// when the daemon wrote them all itself, none to the value log (Opened,
// which says why that is sound). For a database opened read-only without
// memtables (an offline check without write-ahead logs to replay) nothing
// is newer. When a table's entries
// could not all be read (a table a compaction removed before the check
// read it, or one that stops early), every key is read through the merged
// iterator instead.
func storage(ctx context.Context, db *badger.DB, seg *seglog.Log, opened *Opened) (where, detail string) {
	ptrs := &pointers{}
	if where, detail, err := verifyTables(ctx, db, ptrs); detail != "" || err != nil {
		if err != nil {
			return "", "" // ctx ended: Check returns its error
		}
		return where, detail
	}
	if where, detail := verifySegments(ctx, db, seg); detail != "" {
		return where, detail
	}
	var at []byte
	threshold := db.Opts().ValueThreshold
	err := safe(func() error {
		return db.View(func(txn *badger.Txn) error {
			since := uint64(0) // every version
			if !ptrs.partial {
				if err := readKeys(ctx, txn, ptrs.keys, threshold, &at); err != nil {
					return err
				}
				if tablesOnly(db) || opened.covers(db, ptrs.maxVersion) {
					return nil
				}
				since = ptrs.maxVersion
			}
			it := txn.NewIterator(badger.IteratorOptions{AllVersions: false, SinceTs: since})
			defer it.Close()
			for it.Rewind(); it.Valid(); it.Next() {
				if err := ctx.Err(); err != nil {
					return err
				}
				if it.Item().ValueSize() < threshold {
					continue
				}
				at = it.Item().KeyCopy(at[:0])
				if err := readValue(it.Item()); err != nil {
					return err
				}
			}
			return nil
		})
	})
	if err != nil {
		return fmt.Sprintf("key %q", at), fmt.Sprintf("badger: read the value of %q: %v", at, err)
	}
	return "", ""
}

// badgerPrefix starts Badger's internal keys, which its iterator skips.
var badgerPrefix = []byte("!badger!")

// readKeys is storage's read of every key through the merged iterator for
// only keys (in key order): it reads the value of each key's latest
// version when that is of at least threshold bytes, as the iterator gives
// it (not deleted or expired, not one of Badger's internal keys). It sets
// at to the key it reads.
func readKeys(ctx context.Context, txn *badger.Txn, keys [][]byte, threshold int64, at *[]byte) error {
	for _, k := range keys {
		if err := ctx.Err(); err != nil {
			return err
		}
		if bytes.HasPrefix(k, badgerPrefix) {
			continue
		}
		*at = k
		item, err := txn.Get(k)
		if errors.Is(err, badger.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		if item.ValueSize() < threshold {
			continue
		}
		if err := readValue(item); err != nil {
			return err
		}
	}
	return nil
}

// errValueLost is a value Badger could not read from its value log.
var errValueLost = errors.New("no value: badger could not read it from the value log (damaged or missing)")

// readValue reads item's value. Badger's Item.Value does not return the
// error of a value-log read that fails (a value that fails its checksum,
// a file that is gone): it logs it and gives the function a nil value
// (Badger v4.9.6, Item.yieldItemValue). A value it reads is never nil
// when ValueSize is above 0 (a slice of the entry it read), so nil there
// is the failure; a value of 0 bytes would be nil either way.
func readValue(item *badger.Item) error {
	return item.Value(func(v []byte) error {
		if v == nil && item.ValueSize() > 0 {
			return errValueLost
		}
		return nil
	})
}

// tablesOnly reports whether every entry db can give is in a table no
// process changes: db is opened read-only (Badger compacts nothing then)
// and has no write-ahead log of a memtable to replay (a .mem file).
func tablesOnly(db *badger.DB) bool {
	opts := db.Opts()
	if !opts.ReadOnly || opts.InMemory {
		return false
	}
	mems, err := filepath.Glob(filepath.Join(opts.Dir, "*.mem"))
	return err == nil && len(mems) == 0
}

// verifySegments reads and checks every block of the segment files up to
// the end the database records (seglog.Log.Verify).
func verifySegments(ctx context.Context, db *badger.DB, seg *seglog.Log) (where, detail string) {
	if seg == nil {
		return "", ""
	}
	end, err := seglog.End(db)
	if err != nil {
		return string(seglog.KeyEnd), fmt.Sprintf("the segments' end: %v", err)
	}
	_, err = seg.Verify(ctx, end)
	var de *seglog.DamageError
	switch {
	case errors.As(err, &de):
		return filepath.Base(de.File), err.Error()
	case err != nil && ctx.Err() == nil:
		return seg.Dir(), err.Error()
	}
	return "", ""
}

// damage is a panic inside Badger, recovered.
type damage struct{ v any }

func (d *damage) Error() string { return fmt.Sprintf("badger panicked: %v", d.v) }

// safe runs f and turns a panic in it into a *damage.
func safe(f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &damage{p}
		}
	}()
	return f()
}
