package traillog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/trail"
)

// Verify checks the stored trail. Without ws it is Check with every entry
// read (CheckOptions.Full) as a verdict (CheckResult.Verdict): the trail's
// whole rule set, the heads, the indexes and the Merkle nodes; it does not
// know the signed tree trail.Head (the engine's verification passes it to Check).
// With ws it checks only that workspace's chain, read through its local
// index, with the local rules (local prev_hash, local_hash, timestamps,
// nothing after a terminal state). It stops at the first violation. An
// error means the check could not run.
func (l *Log) Verify(ctx context.Context, ws string) (trail.VerifyResult, error) {
	if ws == "" {
		res, err := Check(ctx, l.db, CheckOptions{Full: true, Seg: l.seg})
		if err != nil {
			return trail.VerifyResult{}, fmt.Errorf("verify trail: %w", err)
		}
		return res.Verdict(), nil
	}
	var res trail.VerifyResult
	err := view(l.db, "verify trail", func(txn *badger.Txn) error { return verifyLocal(ctx, l, txn, ws, &res) })
	var de *DamageError
	if errors.As(err, &de) {
		fail(&res, ws, trail.ViolationUnreadable, "%v", de)
		err = nil
	}
	if err != nil {
		return trail.VerifyResult{}, fmt.Errorf("verify trail: %w", err)
	}
	if res.Violation == "" {
		res.OK = true
	}
	return res, nil
}

// readProjection reads every local index (t/w/<ws>/<n> -> global sequence
// numbers: local.go): each workspace's global sequence numbers, in local
// order. A key out of place (not at the position after the last of the key
// before) or a malformed value puts a 0, which no entry has, in its
// workspace's list: the list then differs from the entries'. It returns nil
// if ctx ends first.
func readProjection(ctx context.Context, txn *badger.Txn) map[string][]uint64 {
	out := map[string][]uint64{}
	it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixLocal}) // small values: no prefetching
	defer it.Close()
	var ws []byte
	var seqs []uint64
	n := 0
	for it.Rewind(); it.Valid(); it.Next() {
		if n++; n%4096 == 0 && ctx.Err() != nil {
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
		if localPosition(it.Item().Key()) != uint64(len(seqs))+1 {
			seqs = append(seqs, 0)
		}
		_ = it.Item().Value(func(v []byte) error {
			k, err := groupLen(v)
			if err != nil {
				seqs = append(seqs, 0)
				return nil
			}
			for i := range k {
				seqs = append(seqs, groupSeq(v, i))
			}
			return nil
		})
	}
	if ws != nil {
		out[string(ws)] = seqs
	}
	return out
}

// verifyLocal checks workspace ws's chain with the local rules
// (rules.localNext).
func verifyLocal(ctx context.Context, l *Log, txn *badger.Txn, ws string, res *trail.VerifyResult) error {
	r := trail.NewRules(0, nil)
	err := l.scan(ctx, txn, ws, 0, func(s stored) bool {
		if s.Entry.Workspace != ws {
			fail(res, s.Entry.ID, trail.ViolationChainBroken, "entry of %q in the local trail of %q", s.Entry.Workspace, ws)
			return false
		}
		if f := r.LocalNext(0, s.Entry, s.LocalPrev); f != nil {
			fail(res, f.ID, f.Violation, "%s", f.Detail)
			return false
		}
		res.Entries++
		return true
	})
	// A missing or undecodable entry is a finding, as in Check, not a
	// failure to run the check.
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.Is(err, badger.ErrKeyNotFound):
		fail(res, ws, trail.ViolationChainBroken, "local trail of %s lists an entry missing from the global trail", ws)
		return nil
	case errors.Is(err, ErrLocalIndex):
		fail(res, ws, trail.ViolationChainBroken, "%v", err)
		return nil
	case errors.As(err, &syntaxErr) || errors.As(err, &typeErr) || errors.Is(err, errNotStored):
		fail(res, ws, trail.ViolationHashMismatch, "undecodable entry in the local trail of %s: %v", ws, err)
		return nil
	}
	return err
}

func fail(r *trail.VerifyResult, id string, v trail.Violation, format string, args ...any) {
	r.FirstBad, r.Violation, r.Detail = id, v, fmt.Sprintf(format, args...)
}
