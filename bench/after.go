package bench

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/integrity"
	"github.com/wacpd/wacpd/internal/dbupkeep"
	"github.com/wacpd/wacpd/internal/seglog"
)

// After the load, with the in-process daemon: how long a restart on the
// data dir it left takes, and what the store holds per checkpoint.

// AfterReport is measured once the load and the verification are over.
type AfterReport struct {
	// Restart is from the start of a new daemon on the stopped daemon's
	// data dir to its first answer (system.info to the coordinator).
	Restart time.Duration `json:"restart_ns"`
	Store   StoreReport   `json:"store"`
}

// StoreReport is the daemon's Badger database (the data dir's db/, not the
// signal stream's JetStream files) after the daemon stopped.
type StoreReport struct {
	Checkpoints int `json:"checkpoints"` // the load's, which the figures per checkpoint divide by
	// Keys is the number of live keys after compaction; KeysByPrefix
	// splits them by their prefix up to the second '/' (or the first
	// for keys with one).
	Keys         int64            `json:"keys"`
	KeysByPrefix map[string]int64 `json:"keys_by_prefix"`
	// BytesBefore is the database on disk as the daemon left it; Bytes
	// after a full compaction (Badger's Flatten), which took Compaction.
	BytesBefore int64 `json:"bytes_before_compaction"`
	// Read is how long reading the store once took before the compaction:
	// every block of every table read from its file, its checksum checked
	// and decompressed, on all cores (integrity.VerifyTables, the storage
	// step of a full verify). No verify that checks the storage is
	// faster: VerifyReport.Bound.
	Read       time.Duration `json:"read_ns"`
	Bytes      int64         `json:"bytes"`
	Compaction time.Duration `json:"compaction_ns"`

	KeysPerCheckpoint  float64 `json:"keys_per_checkpoint"`
	BytesPerCheckpoint float64 `json:"bytes_per_checkpoint"`
}

// restartTime starts a daemon on dir (a stopped daemon's data dir) and
// returns it with the time to its first answer. The caller stops it.
func restartTime(ctx context.Context, dir string, memoryLimit int64) (*inProcess, time.Duration, error) {
	t0 := time.Now()
	d, err := startDaemon(ctx, dir, memoryLimit)
	if err != nil {
		return nil, 0, fmt.Errorf("restart: %w", err)
	}
	coord, err := dialCoordinator(ctx, dialer{url: d.url, token: d.token})
	if err != nil {
		d.stop()
		return nil, 0, fmt.Errorf("restart: %w", err)
	}
	coord.Close()
	return d, time.Since(t0), nil
}

// measureStore opens the database of the data dir dir (its daemon
// stopped), compacts it fully and counts its keys and bytes.
func measureStore(dir string, checkpoints int) (r StoreReport, err error) {
	dbdir := filepath.Join(dir, "db")
	r = StoreReport{Checkpoints: checkpoints, KeysByPrefix: map[string]int64{}}
	if r.BytesBefore, err = diskUsage(dbdir); err != nil {
		return r, err
	}
	db, err := badger.Open(dbupkeep.Options(dbdir))
	if err != nil {
		return r, fmt.Errorf("open %s: %w", dbdir, err)
	}
	defer func() {
		if cerr := db.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("close %s: %w", dbdir, cerr)
		}
		if err == nil {
			r.Bytes, err = diskUsage(dbdir)
			r.BytesPerCheckpoint = ratio(float64(r.Bytes), float64(checkpoints))
		}
	}()
	t0 := time.Now()
	if where, detail, err := integrity.VerifyTables(context.Background(), db); err != nil || detail != "" {
		return r, fmt.Errorf("read %s: %s %s %v", dbdir, where, detail, err)
	}
	if err := readSegments(db, dbdir); err != nil {
		return r, err
	}
	r.Read = time.Since(t0)
	t0 = time.Now()
	if err := db.Flatten(2); err != nil {
		return r, fmt.Errorf("compact %s: %w", dbdir, err)
	}
	r.Compaction = time.Since(t0)
	err = db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			r.Keys++
			r.KeysByPrefix[keyPrefix(it.Item().Key())]++
		}
		return nil
	})
	r.KeysPerCheckpoint = ratio(float64(r.Keys), float64(checkpoints))
	return r, err
}

// readSegments reads and checks every block of the segment files of db,
// in dbdir/seg (seglog.Log.Verify).
func readSegments(db *badger.DB, dbdir string) error {
	end, err := seglog.End(db)
	if err != nil {
		return fmt.Errorf("read the segments' end: %w", err)
	}
	seg, _, err := seglog.Open(filepath.Join(dbdir, seglog.Dir), end, seglog.Options{ReadOnly: true})
	if err != nil {
		return err
	}
	defer seg.Close()
	if _, err := seg.Verify(context.Background(), end); err != nil {
		return fmt.Errorf("read segments: %w", err)
	}
	return nil
}

// keyPrefix is the prefix of k that names its kind (docs/formats.md, the
// key layout): a one-letter prefix with its short second part ("t/g/"),
// or the first part ("cas/", "w/"), or all of k if it has no '/'.
func keyPrefix(k []byte) string {
	i := bytes.IndexByte(k, '/')
	if i < 0 {
		return string(k)
	}
	if j := bytes.IndexByte(k[i+1:], '/'); i == 1 && j >= 0 && j <= 2 {
		return string(k[:i+1+j+1])
	}
	return string(k[:i+1])
}
