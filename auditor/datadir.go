package auditor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/casstore"
	"github.com/wacpd/wacpd/trail"
)

// Files and keys of a daemon's data dir that VerifyDataDir reads.
const (
	PublicKeyFile = "trail.pub" // the note verifier key signing tree heads, one line
	DatabaseDir   = "db"        // the Badger database
	keySTH        = "m/sth"     // the latest signed tree head, JSON of trail.TreeHead
)

// VerifyDataDir verifies the data dir of a stopped daemon, read-only: the
// latest signed tree head (Badger key m/sth) with the key in dir/trail.pub,
// then every entry of the trail and every checkpoint object they
// reference, with the checks of Verify. The first sth.size entries must
// recompute the signed root; entries committed after that head was signed
// are checked by their hashes and chains only. Report.Size is the signed
// size, Report.Entries counts every entry.
//
// The key comes from the directory being checked: compare Report.PublicKey
// with the key you trust, or use VerifyDataDirWithKey. A daemon still
// running holds the database: stop it first (Badger refuses to open it).
func VerifyDataDir(dir string) (Report, error) { return VerifyDataDirWithKey(dir, "") }

// VerifyDataDirWithKey is VerifyDataDir with the public key the auditor
// trusts; "" trusts dir/trail.pub.
func VerifyDataDirWithKey(dir, publicKey string) (Report, error) {
	pub, err := os.ReadFile(filepath.Join(dir, PublicKeyFile))
	if err != nil {
		return Report{}, fmt.Errorf("read public key: %w", err)
	}
	db, err := badger.Open(badger.DefaultOptions(filepath.Join(dir, DatabaseDir)).WithReadOnly(true).WithLogger(nil))
	if err != nil {
		return Report{}, fmt.Errorf("open database %s read-only (is the daemon stopped?): %w", filepath.Join(dir, DatabaseDir), err)
	}
	defer db.Close()

	v := newVerifier(publicKey, true)
	var sth trail.TreeHead
	err = db.View(func(txn *badger.Txn) error {
		item, err := txn.Get([]byte(keySTH))
		if err != nil {
			return err
		}
		return item.Value(func(b []byte) error { return json.Unmarshal(b, &sth) })
	})
	switch {
	case errors.Is(err, badger.ErrKeyNotFound):
		v.fail("sth", ViolationSignatureInvalid, "the data dir holds no signed tree head (%s)", keySTH)
		return v.report(), nil
	case err != nil:
		var syntaxErr *json.SyntaxError
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &syntaxErr) || errors.As(err, &typeErr) {
			v.fail("sth", ViolationSignatureInvalid, "undecodable signed tree head: %v", err)
			return v.report(), nil
		}
		return Report{}, fmt.Errorf("read signed tree head: %w", err)
	}
	h := Header{Format: Format, Origin: sth.Origin, PublicKey: strings.TrimSpace(string(pub)), STH: sth}
	if !v.header(h) {
		return v.report(), nil
	}

	log, err := trail.Open(db)
	if err != nil {
		return Report{}, err
	}
	ctx := context.Background()
	after := ""
	for {
		page, next, err := log.Read(ctx, trail.Query{After: after, Limit: trail.MaxLimit})
		if err != nil {
			var syntaxErr *json.SyntaxError
			var typeErr *json.UnmarshalTypeError
			if errors.As(err, &syntaxErr) || errors.As(err, &typeErr) {
				v.fail(fmt.Sprintf("#%d", v.n+1), ViolationHashMismatch, "undecodable entry after %q: %v", after, err)
				return v.report(), nil
			}
			return Report{}, err
		}
		for _, e := range page {
			if !v.entry(e) {
				return v.report(), nil
			}
		}
		if next == "" {
			break
		}
		after = next
	}
	if !v.endEntries() {
		return v.report(), nil
	}

	st := casstore.NewBadger(db)
	seen := map[casstore.Ref]bool{}
	for _, ref := range v.refs {
		if seen[ref.Digest] {
			continue
		}
		seen[ref.Digest] = true
		data, err := st.Get(ctx, ref.Digest)
		switch {
		case errors.Is(err, casstore.ErrNotFound):
			continue // endObjects reports it
		case errors.Is(err, casstore.ErrCorrupt):
			v.objs[ref.Digest] = objInfo{problem: err.Error()}
		case err != nil:
			return Report{}, fmt.Errorf("read object %s: %w", ref.Digest, err)
		default:
			v.objs[ref.Digest] = checkObject(ref.Digest, data)
		}
	}
	v.endObjects()
	return v.report(), nil
}
