// Package placement holds two building blocks for running several wacpd
// daemons on one NATS cluster (issue 20): which partition a workspace
// belongs to, and which daemon owns a partition. It is pure of the daemon:
// it imports the standard library and nats.go's jetstream package only.
//
// # Partitions
//
// Workspaces are placed by a subject mapping on the NATS server, for
// example
//
//	wacp.v1.agent.*.>  ->  wacp.v1.p.{{partition(8,1)}}.agent.{{wildcard(1)}}.>
//
// so that a client keeps addressing wacp.v1.agent.<workspace>.… and the
// server routes the request to the subjects of one of 8 partitions, which
// the daemon owning that partition serves. The server computes the
// partition as the 32-bit FNV-1a hash of the token's bytes modulo n
// (nats-server, server/subject_transform.go). Partition is that same
// function, so a daemon knows from a workspace id, without asking the
// server, which partition its requests reach: it can refuse to create a
// workspace it would not be sent, route a cross-daemon signal, and
// MintInPartition can mint a fresh workspace id that lands in a given
// partition (its own, or a parent's). Were the two functions to differ in
// a single bit, requests would reach a daemon that does not hold the
// workspace; a test runs the real server's mapping over thousands of ids
// and compares.
//
// n is a deployment constant, 1..MaxPartitions: changing it moves most
// workspaces to another partition.
//
// # Leases
//
// A daemon serves a partition only while it holds the partition's lease:
// a record in a JetStream key-value bucket (replicated by Raft on a
// cluster), under the key "p<partition>", whose value is
//
//	{"holder":"<daemon id>","epoch":<token>,"expires":"<RFC 3339 UTC>"}
//
// written in exactly that form (decodeRecord refuses anything else).
// Acquire creates the record if there is none, or takes it over once its
// expiry has passed; every later write is a compare-and-set on the last
// revision the writer saw, so two writers racing from the same revision
// cannot both succeed: exactly one holds the lease. The holder's goroutine
// renews the record every RenewEvery; a renewal whose compare-and-set
// fails means another writer took the record, and the holder learns it at
// once (Lost, ErrTaken). Release deletes the record (again against the
// holder's last revision), so a successor takes over without waiting.
//
// The fencing token of a tenure is the bucket's revision after the write
// that began it (Lease.Token). Revisions only grow, so tokens strictly
// increase from holder to holder; a holder's renewals keep its token, and
// record it as the epoch ("epoch" is 0 in the record's first write, which
// cannot know its own revision). A holder that stalls after checking Valid
// (a pause, a partitioned network) may act late; the token lets what it
// writes to refuse it, by remembering the highest token seen.
//
// # Clocks
//
// Expiry is decided by wall clocks: the writer's at each write (expires =
// its clock + TTL, read before the write is sent, so the holder's view is
// never later than the record's), the holder's for Valid (true until
// expires − Margin), and the would-be successor's at Acquire (it may take
// the record once its clock reaches expires). If no two daemons' clocks
// differ by Margin or more, a holder stops counting its lease as valid
// before anyone else can take it; with the default TTL of 10 s and Margin
// of 2 s, clocks kept by NTP are well within the bound. A clock that
// jumps forward on the holder only makes it stop early; one that jumps
// forward by Margin or more on another daemon breaks the assumption, and
// then the compare-and-set still makes the holder learn at its next
// renewal, and the fencing token still refuses it.
//
// # Values that are not leases
//
// A stored value that does not decode as a lease (written by something
// else, by a later version, or damaged) is never taken over: Acquire
// refuses the partition with ErrNotLease, and it stays unowned until an
// operator deletes the key (nats kv del <bucket> p<n>). Refusing is safe;
// taking over a record whose holder and expiry cannot be read could give
// the partition two owners.
//
// # Caveats
//
// A lease is a promise about the bucket, not about the world: a holder
// must check Valid before acting, stop when Lost is closed, and stamp its
// writes with Token wherever a successor could also write. Leases do not
// say which daemon should hold which partition; that is the caller's
// policy.
//
// Reads may be served by a replica that lags (direct gets); writes are
// decided by the stream's leader. A stale read can only make Acquire
// refuse, or a holder retry or give up early; it cannot make two holders.
package placement
