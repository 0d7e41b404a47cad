// Package seglog keeps immutable values (checkpoint objects, trail entries)
// out of Badger's LSM tree, and is the log of the engine's batches: each
// batch appends one block to a segment file, holding its values and the
// redo record of every write it makes to Badger, and Badger keeps, under a
// value's own key, a 20-byte pointer to it. An LSM tree rewrites every
// value it holds at each level it moves through; values that never change
// need not be rewritten (docs/performance-history.md, the segment probe). And the
// block's sync is the batch's only one: Badger writes without syncing.
//
// # Files
//
// The segments of a database live in the directory "seg" inside Badger's
// directory, named by a decimal number of eight digits: 00000001.seg,
// 00000002.seg, …. A file holds blocks, one after another, from offset 0:
//
//	magic  "WSB2" (or "WSB3", below)     4 bytes
//	clen   length of the body            4 bytes, big-endian
//	rlen   length of the raw values      4 bytes, big-endian
//	crc    CRC-32C of clen, rlen, body   4 bytes, big-endian
//	body   clen bytes:
//	  vlen   length of the values' frame  4 bytes, big-endian
//	  the raw values, zstd-compressed (vlen bytes; none without values)
//	  the redo record, S2-compressed, block format (the rest; none if
//	  it is empty)
//
// The raw values are the batch's values, one after another, with nothing
// between them. The redo record is the batch's writes to Badger, the last
// of each key only (Txn), the pointers to the block's values included; not
// the end (KeyEnd), which the block's place gives. A reader of values
// decompresses the first frame only. A block of format 3 (magic "WSB3")
// is one of format 2 whose values are compressed with S2 (block format)
// instead: Seal writes every block in format 3 (S2 compresses several
// times as fast as zstd, which took a large share of the committer's CPU;
// Log.zstdFrom). Builds before 2026-11-26 wrote format 2 from 16 KiB of
// values, and format 3 below. A block of format 1 (magic "WSB1",
// written by earlier builds, when Badger synced its own writes) has for
// its body the raw values, compressed, and no redo record. A new file
// starts when the current one has reached MaxFile bytes.
//
// # Pointers
//
// A value kept in a segment is set in Badger with user meta Meta and the
// value
//
//	file  4 bytes, big-endian    the segment file's number
//	off   8 bytes, big-endian    the block's offset in it
//	rec   4 bytes, big-endian    the value's offset in the raw values
//	len   4 bytes, big-endian    the value's length
//	extra                         what the value's owner keeps beside the
//	                              pointer (SetValueExtra), for reads that
//	                              need no more (a trail entry's id and hash)
//
// Values without Meta are Badger's own (data dirs written before segments,
// or small values), so a data dir of an earlier release is read as it is.
//
// # Durability and recovery
//
// The key KeyEnd ("s/e") holds where the segments end (file, offset),
// written in the same Badger transaction as the batch's writes. A block is
// written and synced before its transaction commits, and the batch is
// answered once Badger has taken the transaction, without a sync of its
// own: the block is the batch's durable record. Badger keeps a prefix of
// its commits across a crash (it replays its write-ahead log up to the
// first torn entry), so KeyEnd says which blocks it holds. At the next
// start Open finds the whole blocks past KeyEnd (header, length and
// checksum hold) and cuts off what a crash tore (a torn block, the zeros
// written ahead); Replay then redoes each whole block's writes in Badger,
// in order, with KeyEnd moved past it, and syncs. The engine also replays
// after a failed batch whose block was written (its degraded mode), so
// that the state it reloads is the one a restart would find. A segment
// shorter than KeyEnd says, or missing, is damage: Open refuses it with a
// *DamageError. A read-only Open (an offline verify) reads up to KeyEnd and
// leaves what lies past it.
//
// Every write of a batch must go through its Txn: a write on the
// *badger.Txn underneath is not in the redo record, and a crash that lost
// Badger's unsynced writes would lose it (runtime's
// TestRedoAfterBadgerLosesItsWrites compares the database after a redo
// with the one before the crash, key for key). Writes outside the batches
// (the engine's start, its signed tree heads) sync Badger themselves. A
// value of MaxInline bytes or more is refused in Badger's tree: Badger
// would keep it in its value log, whose bytes a crash can lose while the
// tree keeps pointing at them.
//
// # Reading
//
// Value and ValueCopy read a Badger item either way: a pointer is resolved
// from a small cache of recent raw blocks, the block being built (for reads
// through the open transaction), or the file, where the block's checksum is
// verified before it is decompressed.
package seglog
