// Package seglog keeps immutable values (checkpoint objects, trail entries)
// out of Badger's LSM tree: each committed batch appends one compressed
// block of values to a segment file, and Badger keeps, under the value's
// own key, a 20-byte pointer to it. An LSM tree rewrites every value it
// holds at each level it moves through; values that never change need not
// be rewritten (docs/performance.md, the segment probe).
//
// # Files
//
// The segments of a database live in the directory "seg" inside Badger's
// directory, named by a decimal number of eight digits: 00000001.seg,
// 00000002.seg, …. A file holds blocks, one after another, from offset 0:
//
//	magic  "WSB1"                        4 bytes
//	clen   length of the body            4 bytes, big-endian
//	rlen   length of the raw block       4 bytes, big-endian
//	crc    CRC-32C of clen, rlen, body   4 bytes, big-endian
//	body   the raw block, zstd-compressed (clen bytes)
//
// The raw block is the batch's values, one after another, with nothing
// between them. A new file starts when the current one has reached
// MaxFile bytes.
//
// # Pointers
//
// A value kept in a segment is set in Badger with user meta Meta and the
// value
//
//	file  4 bytes, big-endian    the segment file's number
//	off   8 bytes, big-endian    the block's offset in it
//	rec   4 bytes, big-endian    the value's offset in the raw block
//	len   4 bytes, big-endian    the value's length
//	extra                         what the value's owner keeps beside the
//	                              pointer (SetExtra), for reads that need
//	                              no more (a trail entry's id and hash)
//
// Values without Meta are Badger's own (data dirs written before segments,
// or small values), so a data dir of an earlier release is read as it is.
//
// # Durability and recovery
//
// The key KeyEnd ("s/e") holds where the segments end (file, offset),
// written in the same Badger transaction as the pointers into the last
// block. A block is written and synced before the transaction that points
// into it is committed, so every pointer Badger holds points at durable
// bytes. What lies past KeyEnd was written for a batch whose transaction
// never committed: Open removes it (the data dir's own writes only; a
// read-only Open leaves it). A segment shorter than KeyEnd says, or
// missing, is damage: Open refuses it with a *DamageError.
//
// # Reading
//
// Value and ValueCopy read a Badger item either way: a pointer is resolved
// from a small cache of recent raw blocks, the block being built (for reads
// through the open transaction), or the file, where the block's checksum is
// verified before it is decompressed.
package seglog
