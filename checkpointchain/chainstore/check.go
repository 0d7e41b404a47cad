package chainstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/casstore"
	"github.com/wacpd/wacpd/casstore/badgerstore"
	"github.com/wacpd/wacpd/checkpointchain"
	"github.com/wacpd/wacpd/internal/strictjson"
)

// Claim is what the trail says of one checkpoint: its checkpoint_created
// entry (Entry is the entry's id).
type Claim struct {
	Entry     string
	ID        string
	Workspace string
	Type      string
	Status    string
	Parent    string // "" for the first of its chain
	Digest    casstore.Ref
}

// StoreProblem is the first record CheckStore found that contradicts the
// claims.
type StoreProblem struct {
	Key    string // the record: "k/c/<id>", "k/w/<ws>/<n>", "k/h/<ws>", or the object's digest
	Entry  string // the claim's entry, when the problem is about a claimed checkpoint
	Object bool   // the object itself is wrong: missing, corrupt or another checkpoint
	// Missing is set with Object when the object is not stored at all.
	Missing bool
	Detail  string
}

// CheckStore compares everything the package stores (the "k/" records and
// the objects they name) with claims, the checkpoints the trail records in
// trail order: for each claim, the index k/c/<id> names its workspace, its
// 1-based position in that workspace's chain and its digest; the order
// record k/w/<ws>/<n> names it; its object is stored, hashes to the digest
// and decodes to that checkpoint (id, workspace, type, status) whose parent
// is the previous checkpoint of its chain; each workspace's register
// k/h/<ws> is {head, count, last_final} of its claims; and no "k/" record
// is left that no claim accounts for. It returns the first problem, nil
// when there is none. An error means the check could not run.
func CheckStore(txn *badger.Txn, claims []Claim) (*StoreProblem, error) {
	chains := map[string]checkpointchain.Chain{}
	claimed := map[string]bool{}
	prevs := make([]checkpointchain.Chain, len(claims))
	for i, cl := range claims {
		prevs[i] = chains[cl.Workspace]
		chains[cl.Workspace] = prevs[i].Append(checkpointchain.Checkpoint{ID: cl.ID, Status: cl.Status})
		claimed[cl.ID] = true
	}
	if p, err := checkClaims(txn, claims, prevs); p != nil || err != nil {
		return p, err
	}
	// The registers.
	for ws, want := range chains {
		k := string(prefixHead) + ws
		var got checkpointchain.Chain
		if p := getRecord(txn, k, &got); p != nil {
			return p, nil
		}
		if got != want {
			return &StoreProblem{Key: k, Detail: fmt.Sprintf("chain register of %s is %+v, the trail gives %+v", ws, got, want)}, nil
		}
	}
	// Nothing the claims do not account for.
	it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte("k/")})
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		k := it.Item().Key()
		switch {
		case bytes.HasPrefix(k, prefixHead):
			if _, ok := chains[string(k[len(prefixHead):])]; !ok {
				return &StoreProblem{Key: string(k), Detail: fmt.Sprintf("chain register of %s, which the trail gives no checkpoint", k[len(prefixHead):])}, nil
			}
		case bytes.HasPrefix(k, prefixIndex):
			if !claimed[string(k[len(prefixIndex):])] {
				return &StoreProblem{Key: string(k), Detail: fmt.Sprintf("index of checkpoint %s, which the trail does not record", k[len(prefixIndex):])}, nil
			}
		case bytes.HasPrefix(k, prefixOrder):
			rest := k[len(prefixOrder):]
			if len(rest) < 9 || rest[len(rest)-9] != '/' {
				return &StoreProblem{Key: string(k), Detail: fmt.Sprintf("malformed chain order key %q", k)}, nil
			}
			ws, n := string(rest[:len(rest)-9]), binary.BigEndian.Uint64(rest[len(rest)-8:])
			if n == 0 || n > chains[ws].Count {
				return &StoreProblem{Key: string(k), Detail: fmt.Sprintf("chain order of %s holds position %d, the trail gives it %d checkpoints", ws, n, chains[ws].Count)}, nil
			}
		default:
			return &StoreProblem{Key: string(k), Detail: fmt.Sprintf("unknown checkpoint record %q", k)}, nil
		}
	}
	return nil, nil
}

// claimWorkers is how many goroutines checkClaims reads and hashes with.
var claimWorkers = max(1, runtime.GOMAXPROCS(0))

// checkClaims checks every claim (claims[i] the next of a chain that is
// prevs[i] so far) and returns the problem of the first claim that has
// one. The claims are independent, so they are checked by claimWorkers
// goroutines, each on every claimWorkers-th claim, reading through txn
// together: a read-only Badger transaction's reads are safe to share.
// Badger panics on some damaged blocks; a worker's panic is raised again
// in the caller's goroutine, where the caller can recover it as it could
// when the claims were checked there.
func checkClaims(txn *badger.Txn, claims []Claim, prevs []checkpointchain.Chain) (*StoreProblem, error) {
	type found struct {
		at       int
		p        *StoreProblem
		err      error
		panicked any
	}
	results := make([]found, claimWorkers)
	var wg sync.WaitGroup
	for w := range claimWorkers {
		results[w].at = len(claims)
		wg.Go(func() {
			i := w
			defer func() {
				if v := recover(); v != nil {
					results[w] = found{at: i, panicked: v}
				}
			}()
			for ; i < len(claims); i += claimWorkers {
				if p, err := checkClaim(txn, claims[i], prevs[i]); p != nil || err != nil {
					results[w] = found{at: i, p: p, err: err}
					return
				}
			}
		})
	}
	wg.Wait()
	first := found{at: len(claims)}
	for _, r := range results {
		if r.at < first.at {
			first = r
		}
	}
	if first.panicked != nil {
		panic(first.panicked)
	}
	return first.p, first.err
}

// checkClaim checks the records and the object of one claimed checkpoint,
// the next of a chain that is prev so far.
func checkClaim(txn *badger.Txn, cl Claim, prev checkpointchain.Chain) (*StoreProblem, error) {
	n := prev.Count + 1
	k := string(prefixIndex) + cl.ID
	var ix indexEntry
	if p := getRecord(txn, k, &ix); p != nil {
		p.Entry = cl.Entry
		return p, nil
	}
	if ix.Workspace != cl.Workspace || ix.N != n || ix.Digest != cl.Digest {
		return &StoreProblem{Key: k, Entry: cl.Entry, Detail: fmt.Sprintf("index of checkpoint %s says %s #%d %s, the trail %s #%d %s",
			cl.ID, ix.Workspace, ix.N, ix.Digest, cl.Workspace, n, cl.Digest)}, nil
	}
	ok := string(orderKey(cl.Workspace, n))
	item, err := txn.Get([]byte(ok))
	switch {
	case errors.Is(err, badger.ErrKeyNotFound):
		return &StoreProblem{Key: orderName(cl.Workspace, n), Entry: cl.Entry, Detail: fmt.Sprintf("chain order of %s lacks position %d (%s)", cl.Workspace, n, cl.ID)}, nil
	case err != nil:
		return nil, err
	}
	id, err := item.ValueCopy(nil)
	if err != nil {
		return nil, err
	}
	if string(id) != cl.ID {
		return &StoreProblem{Key: orderName(cl.Workspace, n), Entry: cl.Entry, Detail: fmt.Sprintf("chain order of %s position %d is %q, the trail %s", cl.Workspace, n, id, cl.ID)}, nil
	}
	b, err := badgerstore.GetTxn(txn, cl.Digest)
	switch {
	case errors.Is(err, casstore.ErrNotFound):
		return &StoreProblem{Key: cl.Digest.String(), Entry: cl.Entry, Object: true, Missing: true, Detail: fmt.Sprintf("checkpoint %s: no object %s", cl.ID, cl.Digest)}, nil
	case errors.Is(err, casstore.ErrCorrupt):
		return &StoreProblem{Key: cl.Digest.String(), Entry: cl.Entry, Object: true, Detail: fmt.Sprintf("checkpoint %s: %v", cl.ID, err)}, nil
	case err != nil:
		return nil, err
	}
	c, err := checkpointchain.DecodeIdentity(b)
	if err != nil {
		return &StoreProblem{Key: cl.Digest.String(), Entry: cl.Entry, Object: true, Detail: fmt.Sprintf("checkpoint %s: object %s: %v", cl.ID, cl.Digest, err)}, nil
	}
	if c.ID != cl.ID || c.Workspace != cl.Workspace || c.Type != cl.Type || c.Status != cl.Status || c.Parent != cl.Parent || c.Parent != prev.Head {
		return &StoreProblem{Key: cl.Digest.String(), Entry: cl.Entry, Object: true, Detail: fmt.Sprintf(
			"object %s holds checkpoint %s of %s (%s, %s, parent %q), the trail says %s of %s (%s, %s, parent %q; chain head %q)",
			cl.Digest, c.ID, c.Workspace, c.Type, c.Status, c.Parent, cl.ID, cl.Workspace, cl.Type, cl.Status, cl.Parent, prev.Head)}, nil
	}
	return nil, nil
}

// getRecord reads the JSON record under key k into v; a missing or
// undecodable record is a problem.
func getRecord(txn *badger.Txn, k string, v any) *StoreProblem {
	item, err := txn.Get([]byte(k))
	if err != nil {
		return &StoreProblem{Key: k, Detail: fmt.Sprintf("record %s: %v", k, err)}
	}
	if err := item.Value(func(b []byte) error { return strictjson.DecodeFields(b, v) }); err != nil {
		return &StoreProblem{Key: k, Detail: fmt.Sprintf("record %s: %v", k, err)}
	}
	return nil
}

// orderName prints an order key: k/w/<ws>/<n>.
func orderName(ws string, n uint64) string { return fmt.Sprintf("%s%s/%d", prefixOrder, ws, n) }
