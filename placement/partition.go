package placement

import (
	"fmt"
	"hash/fnv"
)

// MaxPartitions is the largest partition count Partition accepts.
const MaxPartitions = 1024

// Partition returns the partition, in 0..n-1, to which the NATS subject
// mapping {{partition(n,1)}} sends a subject whose first wildcard token is
// id: the 32-bit FNV-1a hash of id's bytes, modulo n, as nats-server
// computes it (server/subject_transform.go, getHashPartition). A daemon
// thus knows from a workspace id which partition the server routes its
// requests to.
//
// Partition panics if n is outside 1..MaxPartitions, like an index out of
// range: n is a deployment constant, checked once with CheckPartitions
// where it is configured.
//
// Every string has a partition; but only an id that is a valid subject
// token (not empty, without '.', '*', '>' or white space) can be a token of
// a subject, so only such an id has a server-side counterpart.
func Partition(id string, n int) int {
	if err := CheckPartitions(n); err != nil {
		panic(err)
	}
	h := fnv.New32a()
	h.Write([]byte(id)) // never fails
	return int(h.Sum32() % uint32(n))
}

// CheckPartitions returns an error wrapping ErrPartitionCount unless n is
// in 1..MaxPartitions.
func CheckPartitions(n int) error {
	if n < 1 || n > MaxPartitions {
		return fmt.Errorf("%d partitions: %w", n, ErrPartitionCount)
	}
	return nil
}

// MintInPartition returns a fresh id from mint whose Partition among n is
// p. It draws until one matches, at most 64·n times: with a mint whose ids
// hash uniformly, all of them miss with a probability of about e⁻⁶⁴. Past
// the bound it returns an error wrapping ErrNoMint (mint is not drawing
// varied ids). The ids that miss are dropped.
//
// mint is called from the calling goroutine only.
func MintInPartition(mint func() string, p, n int) (string, error) {
	if err := CheckPartitions(n); err != nil {
		return "", err
	}
	if p < 0 || p >= n {
		return "", fmt.Errorf("partition %d of %d: %w", p, n, ErrPartition)
	}
	draws := 64 * n
	for range draws {
		if id := mint(); Partition(id, n) == p {
			return id, nil
		}
	}
	return "", fmt.Errorf("mint in partition %d of %d: %d draws: %w", p, n, draws, ErrNoMint)
}
