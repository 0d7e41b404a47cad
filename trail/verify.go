package trail

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// VerifyResult is the outcome of Verify.
type VerifyResult struct {
	OK        bool      `json:"ok"`
	Entries   uint64    `json:"entries"`
	FirstBad  string    `json:"first_bad,omitempty"`
	Violation Violation `json:"violation,omitempty"`
	Detail    string    `json:"detail,omitempty"`
}

// Verify recomputes every entry hash and checks both chain kinds: the global
// chain in global order, and each workspace's chain, whose entries must be
// exactly the global entries of that workspace in the same order (the
// projection invariant). With ws set it checks only that workspace's chain.
// It stops at the first violation. An error means the check could not run.
func (l *Log) Verify(ctx context.Context, ws string) (VerifyResult, error) {
	var res VerifyResult
	err := l.db.View(func(txn *badger.Txn) error {
		if ws != "" {
			return verifyLocal(ctx, l, txn, ws, &res)
		}
		return verifyGlobal(ctx, l, txn, &res)
	})
	if err != nil {
		return VerifyResult{}, fmt.Errorf("verify trail: %w", err)
	}
	if res.Violation == "" {
		res.OK = true
	}
	return res, nil
}

func (r *VerifyResult) fail(id string, v Violation, format string, args ...any) {
	r.FirstBad, r.Violation, r.Detail = id, v, fmt.Sprintf(format, args...)
}

func verifyGlobal(ctx context.Context, l *Log, txn *badger.Txn, res *VerifyResult) error {
	// The local indexes are read while the fast path runs (one more
	// iterator of the same read-only transaction): reading them after it
	// took a third of the time.
	proj := make(chan map[string][]uint64, 1)
	go func() { proj <- readProjection(ctx, txn) }()
	n, localSeqs, ok := verifyGlobalFast(ctx, txn)
	indexes := <-proj
	if err := ctx.Err(); err != nil {
		return err
	}
	if ok {
		res.Entries = n
		checkProjection(indexes, localSeqs, res)
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return verifyGlobalRef(ctx, txn, res)
}

// verifyGlobalRef is the reference check of the global trail: it decodes
// every entry and words the first finding.
func verifyGlobalRef(ctx context.Context, txn *badger.Txn, res *VerifyResult) error {
	prev := head{}
	locals := map[string]head{}
	localSeqs := map[string][]uint64{}
	it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixGlobal, PrefetchValues: true, PrefetchSize: 256})
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		if err := ctx.Err(); err != nil {
			return err
		}
		seq := binary.BigEndian.Uint64(it.Item().Key()[len(prefixGlobal):])
		var s stored
		if err := it.Item().Value(func(v []byte) (err error) { s, err = decodeStored(v); return err }); err != nil {
			res.fail(fmt.Sprintf("#%d", seq), ViolationHashMismatch, "undecodable entry: %v", err)
			return nil
		}
		e := s.Entry
		switch {
		case seq != prev.Seq+1:
			res.fail(e.ID, ViolationChainBroken, "entry #%d follows #%d", seq, prev.Seq)
			return nil
		case e.PrevHash != prev.Hash:
			res.fail(e.ID, ViolationChainBroken, "prev_hash %q, previous entry hash %q", e.PrevHash, prev.Hash)
			return nil
		case prev.ID != "" && (e.ID <= prev.ID || e.Timestamp < prev.Timestamp):
			res.fail(e.ID, ViolationChainBroken, "entry not after %s", prev.ID)
			return nil
		}
		if !checkHash(e, e.Integrity.EntryHash, res) {
			return nil
		}
		if e.Workspace != "" {
			lh := locals[e.Workspace]
			local := s.local()
			if local.PrevHash != lh.Hash {
				res.fail(e.ID, ViolationChainBroken, "local prev_hash %q, previous local hash %q", local.PrevHash, lh.Hash)
				return nil
			}
			if !checkHash(local, local.Integrity.EntryHash, res) {
				return nil
			}
			locals[e.Workspace] = head{Seq: lh.Seq + 1, Hash: local.Integrity.EntryHash}
			localSeqs[e.Workspace] = append(localSeqs[e.Workspace], seq)
		} else if e.Integrity.LocalHash != "" {
			res.fail(e.ID, ViolationHashMismatch, "system-level entry carries a local_hash")
			return nil
		}
		prev = head{Seq: seq, Hash: e.Integrity.EntryHash, ID: e.ID, Timestamp: e.Timestamp}
		res.Entries++
	}
	var h head
	if err := getJSON(txn, keyHead, &h); err == nil || prev.Seq > 0 {
		if h.Seq != prev.Seq || h.Hash != prev.Hash {
			res.fail(prev.ID, ViolationChainBroken, "trail head says %d entries ending %q, found %d ending %q", h.Seq, h.Hash, prev.Seq, prev.Hash)
			return nil
		}
	}
	indexes := readProjection(ctx, txn)
	if err := ctx.Err(); err != nil {
		return err
	}
	checkProjection(indexes, localSeqs, res)
	return nil
}

// readProjection reads every local index (t/w/<ws>/<n> -> global sequence
// number): each workspace's global sequence numbers, in local order. It
// returns nil if ctx ends first.
func readProjection(ctx context.Context, txn *badger.Txn) map[string][]uint64 {
	out := map[string][]uint64{}
	it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixLocal, PrefetchValues: true})
	defer it.Close()
	var ws []byte
	var seqs []uint64
	for it.Rewind(); it.Valid(); it.Next() {
		if len(seqs)%4096 == 0 && ctx.Err() != nil {
			return nil
		}
		kws, ok := splitLocalKey(it.Item().Key())
		if !ok {
			continue // not an index key
		}
		if !bytes.Equal(kws, ws) {
			if ws != nil {
				out[string(ws)] = seqs
			}
			ws, seqs = bytes.Clone(kws), nil
		}
		var seq uint64
		_ = it.Item().Value(func(v []byte) error { seq = binary.BigEndian.Uint64(v); return nil })
		seqs = append(seqs, seq)
	}
	if ws != nil {
		out[string(ws)] = seqs
	}
	return out
}

// checkProjection compares each workspace's local index (indexes, from
// readProjection) with the global entries of that workspace (localSeqs).
func checkProjection(indexes, localSeqs map[string][]uint64, res *VerifyResult) {
	for ws, seqs := range localSeqs {
		idx := indexes[ws]
		for i, seq := range idx {
			if i >= len(seqs) || seqs[i] != seq {
				res.fail(ws, ViolationChainBroken, "local trail of %s differs from the global trail at position %d", ws, i+1)
				return
			}
		}
		if len(idx) != len(seqs) {
			res.fail(ws, ViolationChainBroken, "local trail of %s has %d entries, global trail %d", ws, len(idx), len(seqs))
			return
		}
	}
}

func verifyLocal(ctx context.Context, l *Log, txn *badger.Txn, ws string, res *VerifyResult) error {
	prev := ""
	err := l.scan(ctx, txn, ws, 0, func(s stored) bool {
		if s.Entry.Workspace != ws {
			res.fail(s.Entry.ID, ViolationChainBroken, "entry of %q in the local trail of %q", s.Entry.Workspace, ws)
			return false
		}
		local := s.local()
		if local.PrevHash != prev {
			res.fail(local.ID, ViolationChainBroken, "local prev_hash %q, previous local hash %q", local.PrevHash, prev)
			return false
		}
		if !checkHash(local, local.Integrity.EntryHash, res) {
			return false
		}
		prev = local.Integrity.EntryHash
		res.Entries++
		return true
	})
	// A missing or undecodable entry is a finding, as in verifyGlobal, not a
	// failure to run the check.
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.Is(err, badger.ErrKeyNotFound):
		res.fail(ws, ViolationChainBroken, "local trail of %s lists an entry missing from the global trail", ws)
		return nil
	case errors.As(err, &syntaxErr) || errors.As(err, &typeErr) || errors.Is(err, errNotStored):
		res.fail(ws, ViolationHashMismatch, "undecodable entry in the local trail of %s: %v", ws, err)
		return nil
	}
	return err
}

// checkHash recomputes an entry's hash. It writes the canonical form
// directly (fastHash), which also treats a body that is not in canonical
// form as tampering: the daemon only ever stores canonical bodies.
func checkHash(e Entry, want string, res *VerifyResult) bool {
	got := fastHash(e)
	if got != want {
		res.fail(e.ID, ViolationHashMismatch, "entry hashes to %s, recorded %s", got, want)
		return false
	}
	return true
}
