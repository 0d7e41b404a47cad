package coldstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/trail"
	"github.com/wacpd/wacpd/trail/traillog"
)

// prefixRecord is the compaction records' key prefix: tc/<workspace> → the
// id of the workspace's trail_compacted entry.
var prefixRecord = []byte("tc/")

// Key returns the compaction record's key of workspace ws.
func Key(ws string) []byte { return append(append([]byte{}, prefixRecord...), ws...) }

// Compacted reports whether txn holds a compaction record for ws.
func Compacted(txn *badger.Txn, ws string) (bool, error) {
	_, err := txn.Get(Key(ws))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return false, nil
	}
	return err == nil, err
}

// Records returns every compaction record in txn: workspace → the id of
// its trail_compacted entry.
func Records(txn *badger.Txn) (map[string]string, error) {
	out := map[string]string{}
	it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixRecord, PrefetchValues: true})
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		v, err := it.Item().ValueCopy(nil)
		if err != nil {
			return nil, err
		}
		out[string(it.Item().Key()[len(prefixRecord):])] = string(v)
	}
	return out, nil
}

// LocalTrail returns workspace ws's entries in trail order (global view).
func LocalTrail(ctx context.Context, l *traillog.Log, ws string) ([]trail.Entry, error) {
	var out []trail.Entry
	after := ""
	for {
		page, next, err := l.Read(ctx, trail.Query{Workspace: ws, After: after, Limit: trail.MaxLimit})
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if next == "" {
			return out, nil
		}
		after = next
	}
}

// Finding is what Verify found wrong.
type Finding struct {
	Where   string // an archive's file (cold/<hex>.zst), an entry id or a record key
	Missing bool   // the archive is not there
	Detail  string
}

// Verify checks the cold tier of a trail against its log: every
// trail_compacted entry has its record and every record its entry; each
// summary is the one Plan gives for its workspace's local trail in the
// log (counts, range, archive_hash); and each archive in dir (the
// database directory's cold/) is there and decompresses to exactly the
// lines Plan gives, so it holds the archived entries byte for byte. It
// returns nil when all holds; an error means the check could not run.
func Verify(ctx context.Context, db *badger.DB, l *traillog.Log, dir string) (*Finding, error) {
	var recs map[string]string
	if err := db.View(func(txn *badger.Txn) (err error) { recs, err = Records(txn); return err }); err != nil {
		return nil, fmt.Errorf("read compaction records: %w", err)
	}
	var entries []trail.Entry
	after := ""
	for {
		page, next, err := l.Read(ctx, trail.Query{EventType: trail.EventTrailCompacted, After: after, Limit: trail.MaxLimit})
		if err != nil {
			return nil, fmt.Errorf("read trail_compacted entries: %w", err)
		}
		entries = append(entries, page...)
		if next == "" {
			break
		}
		after = next
	}
	seen := map[string]bool{}
	for _, e := range entries {
		s, err := ParseSummary(e.Body)
		if err != nil {
			return &Finding{Where: e.ID, Detail: err.Error()}, nil
		}
		if recs[s.Workspace] != e.ID {
			return &Finding{Where: e.ID, Detail: fmt.Sprintf("workspace %s's compaction record names %q, not this trail_compacted entry", s.Workspace, recs[s.Workspace])}, nil
		}
		seen[s.Workspace] = true
		local, err := LocalTrail(ctx, l, s.Workspace)
		if err != nil {
			return nil, fmt.Errorf("read workspace %s's trail: %w", s.Workspace, err)
		}
		raw, want := Plan(s.Workspace, local)
		if s != want {
			return &Finding{Where: e.ID, Detail: fmt.Sprintf("the summary %+v is not the log's %+v", s, want)}, nil
		}
		got, err := ReadRaw(dir, s.Hash)
		switch {
		case errors.Is(err, ErrNotFound):
			return &Finding{Where: Name(s.Hash), Missing: true, Detail: fmt.Sprintf("the archive of workspace %s (%s) is missing", s.Workspace, e.ID)}, nil
		case errors.Is(err, ErrCorrupt):
			return &Finding{Where: Name(s.Hash), Detail: err.Error()}, nil
		case err != nil:
			return nil, err
		case string(got) != string(raw): // hashes alike, so never in practice
			return &Finding{Where: Name(s.Hash), Detail: "the archive's entries are not the log's"}, nil
		}
	}
	for ws, id := range recs {
		if !seen[ws] {
			return &Finding{Where: string(Key(ws)), Detail: fmt.Sprintf("a compaction record names %s, which is no trail_compacted entry", id)}, nil
		}
	}
	return nil, nil
}
