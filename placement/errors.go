package placement

import "errors"

// These errors can be returned by the functions and methods of placement.
// Test with errors.Is.
var (
	// ErrPartitionCount is returned for a partition count outside
	// 1..MaxPartitions.
	ErrPartitionCount = errors.New("placement: partition count out of range 1..1024")
	// ErrPartition is returned for a partition outside 0..n-1 (or, for a
	// lease, outside 0..MaxPartitions-1).
	ErrPartition = errors.New("placement: partition out of range")
	// ErrNoMint is returned by MintInPartition when no drawn id fell in the
	// partition within its bound of draws.
	ErrNoMint = errors.New("placement: no minted id fell in the partition")

	// ErrHeld is returned by Acquire when another holder's lease has not
	// expired, or when another writer won the race for the record.
	ErrHeld = errors.New("placement: lease held by another holder")
	// ErrNotLease is returned by Acquire when the stored value is not a
	// lease this package writes: the partition is refused, never taken over.
	ErrNotLease = errors.New("placement: stored value is not a lease")
	// ErrTaken is returned when another writer changed the lease record
	// under its holder (a compare-and-set failed): a successor took the
	// lease, or someone deleted or overwrote the record.
	ErrTaken = errors.New("placement: lease taken by another writer")
	// ErrLapsed is returned when a lease's validity ran out before it was
	// renewed.
	ErrLapsed = errors.New("placement: lease lapsed before it was renewed")
	// ErrReleased is returned for a lease its holder released.
	ErrReleased = errors.New("placement: lease released")
)
