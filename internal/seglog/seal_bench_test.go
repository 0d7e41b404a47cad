package seglog

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkSeal seals the block of a batch shaped like one checkpoint at one
// client: three trail entries and an object in the block (one with 1 KiB of
// random payload), and fifteen writes to Badger besides the pointers.
func BenchmarkSeal(b *testing.B) {
	r := openRig(b, b.TempDir(), Options{})
	rnd := rand.New(rand.NewPCG(1, 2))
	payload := make([]byte, 1024)
	for i := range payload {
		payload[i] = byte('a' + rnd.IntN(26))
	}
	entry := []byte(fmt.Sprintf(`{"entry":{"actor":"agent","body":{"checkpoint_id":"01M8A3QHS7J4VGS674SGFKEEDJ","digest":"blake3:%064x"},"event_type":"checkpoint_created"},"local_prev_hash":"blake3:%064x"}`, 1, 2))
	object := append(append([]byte(`{"id":"01M8A3QHS7J4VGS674SGFKEEDJ","payload":{"content":"`), payload...), `"}}`...)
	record := make([]byte, 120)
	b.ReportAllocs()
	for b.Loop() {
		txn := r.db.NewTransaction(true)
		wt := r.l.Txn(txn)
		for i := range 3 {
			if err := wt.SetValueExtra([]byte(fmt.Sprintf("t/g/%08d", i)), entry, record[:58]); err != nil {
				b.Fatal(err)
			}
		}
		if err := wt.SetValue([]byte("cas/0123456789abcdef0123456789abcdef"), object); err != nil {
			b.Fatal(err)
		}
		for i := range 15 {
			if err := wt.Set([]byte(fmt.Sprintf("k/x/%d", i%12)), record); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := r.l.Seal(txn); err != nil {
			b.Fatal(err)
		}
		r.l.Discard()
		r.l.mu.Lock()
		clear(r.l.sealed)
		r.l.mu.Unlock()
		txn.Discard()
	}
}
