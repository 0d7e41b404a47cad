package envstore

import (
	"encoding/json"
	"fmt"

	"github.com/dgraph-io/badger/v4"

	"github.com/wacpd/wacpd/envelope"
	"github.com/wacpd/wacpd/internal/seglog"
)

// Unproven returns, in id order, up to max stored envelopes with ids after
// after (all with "") whose record carries no integrity proof: the records
// of a release before proofs, which the engine proves once (package
// runtime, integrity_env.go).
func Unproven(txn *seglog.Txn, after string, max int) ([]envelope.Envelope, error) {
	var out []envelope.Envelope
	it := txn.NewIterator(badger.IteratorOptions{Prefix: recordPrefix, PrefetchValues: false})
	defer it.Close()
	start := recordPrefix
	if after != "" {
		start = append(recordKey(after), 0)
	}
	for it.Seek(start); it.Valid() && len(out) < max; it.Next() {
		var env envelope.Envelope
		item := it.Item()
		err := txn.Value(item, func(v []byte) error { return json.Unmarshal(v, &env) })
		if err != nil {
			return nil, fmt.Errorf("decode envelope %s: %w", item.Key()[len(recordPrefix):], err)
		}
		if env.Integrity == nil {
			out = append(out, env)
		}
	}
	return out, nil
}
