// Package trailtest damages stored trail entries, for tests of detection
// and recovery. It imports nothing of wacpd but the segment files
// (internal/seglog), so runtime's own tests and daemontest (which imports
// runtime) can both use it.
package trailtest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"path/filepath"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/internal/seglog"
)

// EntryKey is the Badger key t/g/<seq>: of stored trail entry #seq when it
// is a key of its own, or of the group whose first entry it is.
func EntryKey(seq uint64) []byte { return binary.BigEndian.AppendUint64([]byte("t/g/"), seq) }

// The trail's keys (docs/formats.md): entry #seq is under t/g/<seq> (user
// meta 0: its stored value; seglog.Meta: a pointer with its hash and id
// beside), or in a group under t/g/<seq of the group's first> (user meta
// metaGroup), whose value holds per entry a pointer (seglog.PtrSize bytes),
// its hash (32), the length of its id (1) and its id.
const metaGroup = 2

// located is where entry #seq is stored.
type located struct {
	key   []byte
	meta  byte
	value []byte // the key's value (a group's records)
	first uint64 // the seq of the key's first entry
	recs  [][]byte
}

// locate finds the key that holds entry #seq.
func locate(txn *badger.Txn, seq uint64) (located, error) {
	it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte("t/g/"), Reverse: true})
	defer it.Close()
	it.Seek(EntryKey(seq))
	if !it.Valid() {
		return located{}, badger.ErrKeyNotFound
	}
	item := it.Item()
	l := located{key: item.KeyCopy(nil), meta: item.UserMeta(), first: binary.BigEndian.Uint64(item.Key()[4:])}
	v, err := item.ValueCopy(nil)
	if err != nil {
		return located{}, err
	}
	l.value = v
	if l.meta != metaGroup {
		if l.first != seq {
			return located{}, badger.ErrKeyNotFound
		}
		return l, nil
	}
	for off := 0; off < len(v); {
		n := seglog.PtrSize + 32 + 1
		if len(v)-off < n || len(v)-off-n < int(v[off+n-1]) {
			return located{}, errors.New("trailtest: a malformed group")
		}
		n += int(v[off+n-1])
		l.recs = append(l.recs, v[off:off+n])
		off += n
	}
	if seq-l.first >= uint64(len(l.recs)) {
		return located{}, badger.ErrKeyNotFound
	}
	return l, nil
}

// HasEntry reports whether entry #seq is stored.
func HasEntry(txn *badger.Txn, seq uint64) (bool, error) {
	_, err := locate(txn, seq)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return false, nil
	}
	return err == nil, err
}

// EntryValue returns a copy of entry #seq's stored value, read through
// seg (an open segment log of the database) when it is a pointer.
func EntryValue(txn *badger.Txn, seg *seglog.Log, seq uint64) ([]byte, error) {
	l, err := locate(txn, seq)
	if err != nil {
		return nil, err
	}
	var ptr []byte
	switch {
	case l.meta == metaGroup:
		ptr = l.recs[seq-l.first][:seglog.PtrSize]
	case l.meta&seglog.Meta != 0:
		ptr = l.value
	default:
		return l.value, nil
	}
	p, err := seglog.DecodePtr(ptr)
	if err != nil {
		return nil, err
	}
	v, err := seg.Get(p)
	return bytes.Clone(v), err
}

// SetEntry stores v as entry #seq's value, in Badger under a key of its
// own; a group that held the entry keeps the entries before it, and those
// after it become a group of their own.
func SetEntry(txn *badger.Txn, seq uint64, v []byte) error {
	if err := cutOut(txn, seq); err != nil {
		return err
	}
	return txn.Set(EntryKey(seq), v)
}

// DeleteEntry removes entry #seq from the stored trail (a group that held
// it is split around it).
func DeleteEntry(txn *badger.Txn, seq uint64) error { return cutOut(txn, seq) }

// cutOut removes entry #seq's key, or its record from its group, leaving
// the entries before and after it where they were.
func cutOut(txn *badger.Txn, seq uint64) error {
	l, err := locate(txn, seq)
	if err != nil {
		return err
	}
	if l.meta != metaGroup {
		return txn.Delete(l.key)
	}
	i := seq - l.first
	if i == 0 {
		if err := txn.Delete(l.key); err != nil {
			return err
		}
	} else if err := txn.SetEntry(badger.NewEntry(l.key, bytes.Join(l.recs[:i], nil)).WithMeta(metaGroup)); err != nil {
		return err
	}
	if after := l.recs[i+1:]; len(after) > 0 {
		return txn.SetEntry(badger.NewEntry(EntryKey(seq+1), bytes.Join(after, nil)).WithMeta(metaGroup))
	}
	return nil
}

// Value returns a copy of item's value in the database in dbDir: read from
// its segment files (dbDir/seg) when Badger holds a pointer.
func Value(dbDir string, item *badger.Item) ([]byte, error) {
	if item.UserMeta()&seglog.Meta == 0 {
		return item.ValueCopy(nil)
	}
	seg, _, err := seglog.Open(filepath.Join(dbDir, seglog.Dir), seglog.Pos{}, seglog.Options{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer seg.Close()
	return seg.ValueCopy(item)
}

// StoredValue returns a copy of entry #seq's stored value in the database
// in dbDir, read from its segment files (dbDir/seg) when Badger holds a
// pointer.
func StoredValue(dbDir string, txn *badger.Txn, seq uint64) ([]byte, error) {
	seg, _, err := seglog.Open(filepath.Join(dbDir, seglog.Dir), seglog.Pos{}, seglog.Options{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer seg.Close()
	return EntryValue(txn, seg, seq)
}

// ReplaceEntry returns an update of the database in dbDir that replaces
// entry #seq's stored value with what fn makes of it, kept in Badger itself
// (SetEntry).
func ReplaceEntry(dbDir string, seq uint64, fn func(v []byte) ([]byte, error)) func(*badger.Txn) error {
	return func(txn *badger.Txn) error {
		v, err := StoredValue(dbDir, txn, seq)
		if err != nil {
			return err
		}
		if v, err = fn(v); err != nil {
			return err
		}
		return SetEntry(txn, seq, v)
	}
}

// FlipBody returns an update of the database in dbDir that flips one byte
// inside the body of stored entry #seq: the value (written back into
// Badger itself) stays JSON, but the entry no longer hashes to its
// entry_hash.
func FlipBody(dbDir string, seq uint64) func(*badger.Txn) error {
	return ReplaceEntry(dbDir, seq, func(v []byte) ([]byte, error) {
		i := bytes.Index(v, []byte(`"body":{"`))
		if i < 0 {
			return nil, errors.New("no body in the stored entry")
		}
		v[i+len(`"body":{"`)] ^= 0x01
		return v, nil
	})
}
