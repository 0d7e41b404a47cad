// Package datadir verifies the data dir of a stopped daemon offline
// (Verify), or those of the daemons of one deployment as a set
// (VerifySet), and lists a data dir's quarantined trail entries
// (Quarantine). It opens the Badger database read-only, so it is apart
// from package auditor, which verifies bundles and proofs and links no
// storage. Its tests are with package auditor's, whose fixtures they
// share; VerifySet's run the real daemon, in cmd/wacp.
package datadir

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/auditor"
	"github.com/wacpd/wacpd/integrity"
	"github.com/wacpd/wacpd/internal/dbupkeep"
	"github.com/wacpd/wacpd/internal/seglog"
	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/trail/coldstore"
	"github.com/wacpd/wacpd/trail/traillog"
)

// Files and keys of a daemon's data dir that Verify reads.
const (
	PublicKeyFile = "trail.pub" // the note verifier key signing tree heads, one line
	DatabaseDir   = "db"        // the Badger database
	keySTH        = "m/sth"     // the latest signed tree head, JSON of trail.TreeHead
)

// Verify verifies the data dir of a stopped daemon, read-only: the
// latest signed tree head (Badger key m/sth) with the key in dir/trail.pub,
// then the database with integrity.Check, the verifier the daemon runs at
// start and for audit.trail.verify: Badger's checksums of every table
// block, every trail entry (the rule set of Verify plus the stored
// local_prev_hash), the heads, indexes and Merkle nodes against the
// entries, the first sth.size entries against the signed root, and the
// checkpoint store (index, chain order, registers, and every object
// against its digest). Entries committed after that head was signed are
// checked by their hashes and chains only. Report.Size is the signed size,
// Report.Entries counts every entry.
//
// Damage is a Report with OK false that says where (FirstBad: an entry, a
// key, an object's digest or a Badger table file), never a panic: Badger's
// panics on damaged files are recovered (violation unreadable). An error
// means the check could not run, for example because Badger refused to
// open the database (its own checksums of its manifest and table indexes
// are checked when it opens them; the error names the file).
//
// The key comes from the directory being checked: compare Report.PublicKey
// with the key you trust, or use VerifyWithKey. A daemon still
// running holds the database: stop it first (Badger refuses to open it).
func Verify(dir string) (auditor.Report, error) { return VerifyWithKey(dir, "") }

// VerifyWithKey is Verify with the public key the auditor
// trusts; "" trusts dir/trail.pub.
func VerifyWithKey(dir, publicKey string) (auditor.Report, error) {
	return verify(dir, publicKey, nil)
}

// verify is VerifyWithKey, which also calls read, when set, with the trail
// once dir verified.
func verify(dir, publicKey string, read func(*traillog.Log) error) (auditor.Report, error) {
	pub, err := os.ReadFile(filepath.Join(dir, PublicKeyFile))
	if err != nil {
		return auditor.Report{}, fmt.Errorf("read public key: %w", err)
	}
	var rep auditor.Report
	fail := func(where string, kind auditor.Violation, format string, args ...any) (auditor.Report, error) {
		rep.OK, rep.FirstBad, rep.Violation, rep.Detail = false, where, kind, fmt.Sprintf(format, args...)
		return rep, nil
	}
	path := filepath.Join(dir, DatabaseDir)
	db, err := openReadOnly(path)
	var dmg *openDamage
	switch {
	case errors.As(err, &dmg):
		return fail(dmg.where, auditor.ViolationUnreadable, "%v", dmg)
	case err != nil:
		return auditor.Report{}, fmt.Errorf("open database %s read-only (is the daemon stopped?): %w", path, err)
	}
	defer db.Close()

	var sth trail.TreeHead
	err = safeView(db, func(txn *badger.Txn) error {
		item, err := txn.Get([]byte(keySTH))
		if err != nil {
			return err
		}
		return item.Value(func(b []byte) error { return json.Unmarshal(b, &sth) })
	})
	switch {
	case errors.As(err, &dmg):
		return fail("sth", auditor.ViolationUnreadable, "%v", dmg)
	case errors.Is(err, badger.ErrKeyNotFound):
		return fail("sth", auditor.ViolationSignatureInvalid, "the data dir holds no signed tree head (%s)", keySTH)
	case err != nil:
		var syntaxErr *json.SyntaxError
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &syntaxErr) || errors.As(err, &typeErr) {
			return fail("sth", auditor.ViolationSignatureInvalid, "undecodable signed tree head: %v", err)
		}
		return auditor.Report{}, fmt.Errorf("read signed tree head: %w", err)
	}
	h := auditor.Header{Format: auditor.Format, Origin: sth.Origin, PublicKey: strings.TrimSpace(string(pub)), STH: sth}
	if rep = auditor.VerifyHeader(h, publicKey); !rep.OK {
		return rep, nil
	}
	root, err := trail.HashBytes(sth.Root)
	if err != nil {
		return fail("sth", auditor.ViolationSignatureInvalid, "root: %v", err)
	}
	// The segment files (db/seg), read-only: a tail past the end the
	// database records is left as it is and not read.
	var end seglog.Pos
	if err := safeView(db, func(txn *badger.Txn) (err error) { end, err = seglog.ReadEnd(txn); return err }); err != nil {
		return fail(string(seglog.KeyEnd), auditor.ViolationUnreadable, "the segments' end: %v", err)
	}
	seg, _, err := seglog.Open(filepath.Join(path, seglog.Dir), end, seglog.Options{ReadOnly: true})
	var sd *seglog.DamageError
	switch {
	case errors.As(err, &sd):
		return fail(filepath.Base(sd.File), auditor.ViolationUnreadable, "%v", err)
	case err != nil:
		return auditor.Report{}, err
	}
	defer seg.Close()
	res, err := integrity.Check(context.Background(), db, integrity.Options{Full: true, SignedSize: sth.Size, SignedRoot: root, Seg: seg})
	if err != nil {
		return auditor.Report{}, err
	}
	rep.Entries, rep.Objects, rep.Workspaces = int(res.Entries), res.Objects, res.Workspaces
	if !res.OK {
		rep.OK, rep.Violation, rep.Detail = false, auditor.Violation(res.Violation), res.Detail
		rep.FirstBad = res.Where() // an entry; a record, a workspace's index or a table file
		if res.Violation == trail.ViolationRootMismatch {
			rep.FirstBad = "sth"
		}
		return rep, nil
	}
	l, err := traillog.Open(db, seg)
	if err != nil {
		return auditor.Report{}, fmt.Errorf("open trail: %w", err)
	}
	if rep, err = verifyCold(db, l, path, rep); err != nil || !rep.OK || read == nil {
		return rep, err
	}
	return rep, read(l)
}

// verifyCold checks the cold tier (coldstore.Verify: every compaction's
// summary against the log, and its archive in db/cold against both) once
// the trail itself verified.
func verifyCold(db *badger.DB, l *traillog.Log, path string, rep auditor.Report) (auditor.Report, error) {
	f, err := coldstore.Verify(context.Background(), db, l, filepath.Join(path, coldstore.Dir))
	if err != nil {
		return auditor.Report{}, err
	}
	if f != nil {
		rep.OK, rep.FirstBad, rep.Detail = false, f.Where, f.Detail
		rep.Violation = auditor.ViolationHashMismatch
		if f.Missing {
			rep.Violation = auditor.ViolationMissingObject
		}
	}
	return rep, nil
}

// openDamage is damage found while opening the database: a table that
// fails its checks, or a panic inside Badger, recovered.
type openDamage struct {
	where string // the file
	v     any
}

func (d *openDamage) Error() string { return fmt.Sprint(d.v) }

// openReadOnly opens the database at path read-only, with the engine's
// options (dbupkeep.Options): Badger checks each table block's checksum
// when it reads it and each value-log value's, so damage is an error, not
// wrong data. A panic inside Badger is returned as an *openDamage.
func openReadOnly(path string) (db *badger.DB, err error) {
	opts := dbupkeep.Options(path).WithReadOnly(true)
	// Badger opens the tables on goroutines of its own, where a damaged
	// table's panic ends the process: check what it reads of them (each
	// index and last block) here first. Every other block is read by the
	// check's storage step (integrity.VerifyTables) on this process's
	// goroutines, where a panic is recovered; read-only, Badger compacts
	// nothing, so none of its own goroutines reads them.
	if where, detail := integrity.CheckTableFiles(path, opts, false); detail != "" {
		return nil, &openDamage{where: where, v: detail}
	}
	defer func() {
		if p := recover(); p != nil {
			db, err = nil, &openDamage{where: DatabaseDir, v: fmt.Sprintf("badger panicked: %v", p)}
		}
	}()
	return badger.Open(opts)
}

// safeView is db.View with a panic inside Badger returned as an
// *openDamage.
func safeView(db *badger.DB, fn func(*badger.Txn) error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &openDamage{where: "sth", v: fmt.Sprintf("badger panicked: %v", p)}
		}
	}()
	return db.View(fn)
}
