package placement

import (
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/oklog/ulid/v2"
)

// fnv1a is the 32-bit FNV-1a hash written out from its definition
// (offset basis 2166136261, prime 16777619), as a reference independent of
// hash/fnv.
func fnv1a(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

// newULID returns a random ULID string.
func newULID() string { return ulid.MustNew(ulid.Now(), rand.Reader).String() }

// TestPartition_ServerMapping: for thousands of random ULIDs, and for ids
// MintInPartition minted for each partition, the partition a real
// nats-server's mapping {{partition(8,1)}} puts in the subject is
// Partition(id, 8).
func TestPartition_ServerMapping(t *testing.T) {
	const n = 8
	s := runServer(t, `mappings: {
  "wacp.v1.agent.*.>": "wacp.v1.p.{{partition(8,1)}}.agent.{{wildcard(1)}}.>"
}
`)
	nc := connect(t, s)
	sub, err := nc.SubscribeSync("wacp.v1.p.*.agent.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}

	var ids []string
	for range 2048 {
		ids = append(ids, newULID())
	}
	for p := range n {
		for range 4 {
			id, err := MintInPartition(newULID, p, n)
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
	}
	// Other tokens than ULIDs: short, long (past the server's 64-byte
	// buffer), punctuation a subject token may hold.
	ids = append(ids, "a", "ws", "x-y_z", "wörkspace", strings.Repeat("Z", 200), "ws_01J0000000000000000000000$")
	for _, id := range ids {
		if err := nc.Publish("wacp.v1.agent."+id+".inbox.next", []byte(id)); err != nil {
			t.Fatal(err)
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}

	seen := make([]int, n)
	for i := range ids {
		m, err := sub.NextMsg(30 * time.Second)
		if err != nil {
			t.Fatalf("message %d of %d: %v", i+1, len(ids), err)
		}
		tok := strings.Split(m.Subject, ".")
		// wacp.v1.p.<partition>.agent.<id>.inbox.next
		if len(tok) != 8 || tok[5] != string(m.Data) {
			t.Fatalf("mapped subject %q for id %q", m.Subject, m.Data)
		}
		id := string(m.Data)
		want := Partition(id, n)
		if tok[3] != fmt.Sprint(want) {
			t.Errorf("server put %q in partition %s, Partition(%q, %d) = %d", id, tok[3], id, n, want)
		}
		if i >= 2048 && i < 2048+4*n {
			if p := (i - 2048) / 4; want != p {
				t.Errorf("MintInPartition(_, %d, %d) = %q, in partition %d", p, n, id, want)
			}
		}
		seen[want]++
	}
	for p, c := range seen {
		if c == 0 {
			t.Errorf("no id in partition %d of %d: %v", p, n, seen)
		}
	}
	if m, err := sub.NextMsg(0); !errors.Is(err, nats.ErrTimeout) {
		t.Errorf("one message more than published: %v, %v", m, err)
	}
}

// TestPartition_Vectors: the published FNV-1a test vectors, modulo n.
func TestPartition_Vectors(t *testing.T) {
	tests := []struct {
		id   string
		hash uint32
	}{
		{"", 0x811c9dc5},
		{"a", 0xe40c292c},
		{"foobar", 0xbf9cf968},
	}
	for _, tt := range tests {
		for _, n := range []int{1, 2, 7, 8, 1000, 1024} {
			if got, want := Partition(tt.id, n), int(tt.hash%uint32(n)); got != want {
				t.Errorf("Partition(%q, %d) = %d, want %d", tt.id, n, got, want)
			}
		}
	}
}

// TestPartition_Range: Partition panics outside 1..MaxPartitions, and
// CheckPartitions and MintInPartition say so with an error.
func TestPartition_Range(t *testing.T) {
	for _, n := range []int{-1, 0, MaxPartitions + 1, 1 << 40} {
		func() {
			defer func() {
				r := recover()
				if err, ok := r.(error); !ok || !errors.Is(err, ErrPartitionCount) {
					t.Errorf("Partition(_, %d) panicked with %v, want ErrPartitionCount", n, r)
				}
			}()
			Partition("x", n)
		}()
		if err := CheckPartitions(n); !errors.Is(err, ErrPartitionCount) {
			t.Errorf("CheckPartitions(%d) = %v, want ErrPartitionCount", n, err)
		}
		if _, err := MintInPartition(newULID, 0, n); !errors.Is(err, ErrPartitionCount) {
			t.Errorf("MintInPartition(_, 0, %d) = %v, want ErrPartitionCount", n, err)
		}
	}
	for _, n := range []int{1, 8, MaxPartitions} {
		if err := CheckPartitions(n); err != nil {
			t.Errorf("CheckPartitions(%d) = %v", n, err)
		}
	}
	for _, p := range []int{-1, 8, 9} {
		if _, err := MintInPartition(newULID, p, 8); !errors.Is(err, ErrPartition) {
			t.Errorf("MintInPartition(_, %d, 8) = %v, want ErrPartition", p, err)
		}
	}
}

// TestMintInPartition: every partition of n gets an id that is in it, and
// a mint that never lands there is drawn 64·n times and no more.
func TestMintInPartition(t *testing.T) {
	for _, n := range []int{1, 3, 8, 1024} {
		for _, p := range []int{0, n / 2, n - 1} {
			id, err := MintInPartition(newULID, p, n)
			if err != nil {
				t.Fatalf("MintInPartition(_, %d, %d): %v", p, n, err)
			}
			if _, err := ulid.ParseStrict(id); err != nil {
				t.Errorf("MintInPartition(_, %d, %d) = %q, not the mint's: %v", p, n, id, err)
			}
			if got := Partition(id, n); got != p {
				t.Errorf("MintInPartition(_, %d, %d) = %q in partition %d", p, n, id, got)
			}
		}
	}

	const n = 8
	draws := 0
	stuck := func() string { draws++; return "a" }
	p := (Partition("a", n) + 1) % n
	if id, err := MintInPartition(stuck, p, n); !errors.Is(err, ErrNoMint) {
		t.Fatalf("MintInPartition(stuck, %d, %d) = %q, %v; want ErrNoMint", p, n, id, err)
	}
	if draws != 64*n {
		t.Errorf("MintInPartition(stuck, %d, %d) drew %d times, want %d", p, n, draws, 64*n)
	}
}

// FuzzPartition: the result is in 0..n-1, the same on every call, and the
// FNV-1a of the id's bytes modulo n as written out from its definition.
func FuzzPartition(f *testing.F) {
	f.Add("01J8ZV6Q4M9X1T0C2B3N4P5R6S", 8)
	f.Add("", 1)
	f.Add("foobar", 1024)
	f.Add("wörkspace", 7)
	f.Add(strings.Repeat("x", 300), 1000)
	f.Fuzz(func(t *testing.T, id string, n int) {
		if n < 0 {
			n = -(n + 1)
		}
		n = n%MaxPartitions + 1
		got := Partition(id, n)
		if got < 0 || got >= n {
			t.Fatalf("Partition(%q, %d) = %d, out of range", id, n, got)
		}
		if again := Partition(id, n); again != got {
			t.Fatalf("Partition(%q, %d) = %d, then %d", id, n, got, again)
		}
		if want := int(fnv1a(id) % uint32(n)); got != want {
			t.Fatalf("Partition(%q, %d) = %d, want %d", id, n, got, want)
		}
	})
}
