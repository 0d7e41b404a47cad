// Package latest reads the latest version of each key under a prefix in a
// Badger transaction, for keys that many transactions rewrite.
//
// Badger's iterator steps through every version of a key on its way to
// the next key, and it keeps at least one item ready beyond the one it is
// at. A key that every batch rewrites (the trail's local heads, the
// checkpoint chains' registers) has a version per batch in the memtables
// and the level-0 tables until a compaction drops them, tens of thousands
// after a load: reading the local heads of two workspaces that way took a
// verify 4-12 ms, alone on a core at its end (issue 13's thirteenth
// session). Each lists every version instead, so that the iterator's item
// ready ahead is the key's next version, and seeks past a key's older
// versions.
package latest

import "github.com/dgraph-io/badger/v4"

// Each calls fn with the latest version of each key under prefix that
// txn sees, in key order; a key whose latest version is deleted or expired
// is skipped. The item is valid only during the call. Each stops at fn's
// first error and returns it.
func Each(txn *badger.Txn, prefix []byte, fn func(item *badger.Item) error) error {
	it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix, AllVersions: true})
	defer it.Close()
	var past []byte // the least key after the item's
	for it.Rewind(); it.Valid(); it.Seek(past) {
		item := it.Item()
		past = append(item.KeyCopy(past[:0]), 0)
		if item.IsDeletedOrExpired() {
			continue
		}
		if err := fn(item); err != nil {
			return err
		}
	}
	return nil
}
