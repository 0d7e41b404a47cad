// Package casstore is a content-addressed object store: an object is an
// immutable byte string named by the BLAKE3-256 hash of its content, its
// [Ref].
//
// The package knows nothing about agents, workspaces or messaging. It
// defines the [Ref] value type, small interfaces ([Fetcher], [Putter],
// [Statter], combined as [Store]; [Enumerator] as an optional ability). It
// links no database: a client can check a Ref without linking storage. The
// Badger backend lives in casstore/badgerstore (with PutTxn, GetTxn and
// HasTxn for callers that need an object to commit atomically with their
// own records), the in-memory backend in casstore/memstore and the conformance suite that
// every backend runs lives in casstore/casstoretest.
//
// Invariants:
//
//   - An object's Ref is always RefOf(content); [RefOf] is the only code that
//     computes it.
//   - Objects are never overwritten or deleted through this package. Put of
//     content that is already stored is a no-op that returns the same Ref.
//   - Every read re-hashes the content ([Verify]); a mismatch is reported as a
//     [*CorruptError], which matches [ErrCorrupt] under errors.Is.
//
// # Format
//
// A Ref's text form is "blake3:" followed by exactly 64 lowercase hex digits,
// for example
//
//	blake3:af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262
//
// which is the Ref of the empty object. [Parse] accepts nothing else: no
// uppercase, no other algorithm names, no whitespace. JSON encodes a Ref as
// that string.
//
// In Badger, badgerstore owns the key prefix badgerstore.KeyPrefix ("cas/"). Each
// object is one key-value pair:
//
//	key:   "cas/" + the 32 raw bytes of the BLAKE3-256 sum (36 bytes)
//	value: the raw content bytes, unencoded and uncompressed by this package
//
// No other keys are written under the prefix, and no user metadata, TTL or
// version information is used. Keys sort by raw sum, which is the order
// [Enumerator] reports.
//
// # Caveats
//
//   - Objects are held in memory whole: there is no streaming API. Badger
//     limits value size to ValueLogFileSize on disk and to less than its
//     ValueThreshold (at most 1 MiB) in in-memory mode. badgerstore's Put reports
//     objects over ValueLogFileSize, or of 1 MiB or more in in-memory mode, as
//     [ErrTooLarge]. badgerstore.PutTxn cannot see the options and returns Badger's own
//     error; note that Badger v4.9.6 in in-memory mode panics when a value is
//     exactly ValueThreshold bytes long.
//   - badgerstore.PutTxn keeps a reference to data until the transaction commits or is
//     discarded, as badger.Txn.Set does; callers must not modify it before
//     then.
//   - Verification costs a full hash of every object read. A nil error from
//     Get means the bytes match the Ref, not that they are well-formed for
//     whatever the caller expects.
//   - There is no garbage collection or deletion. Anything that removes keys
//     under that prefix does so outside this package's guarantees.
//   - Badger operations do not block on ctx; methods only check it before
//     starting and, in Enumerate, between objects.
package casstore
