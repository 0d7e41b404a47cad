package runtime

import (
	"errors"
	"io"
	"log/slog"
	"time"

	"github.com/wacpd/wacpd/highway"
	"github.com/wacpd/wacpd/steward"
	"github.com/wacpd/wacpd/taxonomy"
)

// Config configures an Engine. The zero value of every field but DataDir
// means its default; DataDir is required unless InMemory is set. Open keeps
// its own copy.
type Config struct {
	// DataDir is the directory of the Badger database.
	DataDir string
	// InMemory runs Badger in memory (tests only: nothing survives Close).
	InMemory bool
	// Taxonomy is the run's taxonomy; nil means taxonomy.Base(). A data dir
	// whose trail records another taxonomy checksum refuses to open.
	Taxonomy *taxonomy.Taxonomy
	// Now is the wall clock; nil means time.Now.
	Now func() time.Time
	// Entropy feeds ULIDs; nil means crypto/rand.
	Entropy io.Reader
	// Logger receives operational logs; nil discards them.
	Logger *slog.Logger
	// RootOwner is the user id owning the root workspace, and through
	// inheritance the workspaces the coordinator creates; default "operator".
	RootOwner string
	// RootID, if set, is the id of the deployment's root workspace, which
	// several daemons share (each keeps its own copy of the root): a new
	// database's root gets it instead of a fresh id. It must be a ULID in
	// canonical form (clock.ValidID). A database whose root has another id
	// refuses to open (ErrRootMismatch). Empty: a new database mints its
	// root's id, an existing one keeps its own.
	RootID string
	// Partitions, if more than 1, spreads the workspaces over that many
	// partitions (at most 1024) by their ids (placement.go): a new
	// workspace's id is drawn so that Partition maps it to its parent's
	// partition, or for a child of the root to the partition its request's
	// context names (WithPartition), and a checkpoint's to its workspace's.
	// 0 and 1 turn partitioning off; Partition is then not called.
	Partitions int
	// Partition returns the partition, in 0..n-1, of id among n; it is
	// required when Partitions is more than 1 and must be a pure function
	// of its arguments (the daemon passes the one the NATS subject mapping
	// uses, so that a workspace's requests reach the daemon that holds it).
	Partition func(id string, n int) int
	// MaxObjectBytes bounds every request body the daemon serves (a larger
	// one is too_large before decoding) and a checkpoint's canonical
	// encoding; default and maximum 1 MiB - 1 (Badger's in-memory value
	// limit).
	MaxObjectBytes int
	// Meter, if set, reports the runtime's own cumulative token and cost
	// counts for a workspace (for example from an LLM gateway). Without it
	// only wall_time is verified.
	Meter Meter
	// Tolerance bounds the difference between agent-reported and metered
	// resource usage that is not a discrepancy.
	Tolerance Tolerance
	// BudgetMeter, if set, meters budget dimensions the runtime cannot
	// see itself (tokens, context size, cost, bandwidth: budget.go); its
	// readings take precedence over Meter's and the agents' reports.
	BudgetMeter BudgetMeter
	// BudgetWarnPercent is the budget_warning threshold, 1 to 99; zero
	// means 80, anything else is refused at Open (limits.go).
	BudgetWarnPercent int
	// Capacity is the admission thresholds (admission.go).
	Capacity Capacity
	// TrailWarmRetention, if positive, turns trail compaction on
	// (compact.go): RunTimers archives the archivable entries of the
	// workspaces closed or failed longer ago than this. Zero: compaction
	// runs only when Compact is called; negative is refused at Open.
	TrailWarmRetention time.Duration
	// MemoryLimit, if positive, is the memory budget in bytes that Badger's
	// memtables and caches are sized for (dbupkeep.OptionsWithin); the
	// daemon also sets the Go runtime's soft memory limit from it.
	MemoryLimit int64
	// MinFreeBytes is the free space the data dir's disk must keep: below
	// it the engine admits no work (diskspace.go); zero means 128 MiB,
	// negative turns the guard off.
	MinFreeBytes int64
	// GCInterval is the period of Badger value-log garbage collection
	// (gc.go); zero means 10 minutes, negative turns it off. In-memory
	// databases have no value log.
	GCInterval time.Duration
	// MarkInterval is the period of the running trail check (mark.go),
	// which keeps the check at start short; zero means 2 seconds,
	// negative turns it off.
	MarkInterval time.Duration
	// DeliveryLease is the base lease of an envelope handed out by
	// inbox.next (lease.go): the agent has Attempt × DeliveryLease to
	// acknowledge it before it is delivered again; zero means 30s.
	DeliveryLease time.Duration
	// Highway is the run's human highway configuration (gates, timeouts,
	// fallbacks: highway.Config); nil means highway.Default().
	Highway *highway.Config
	// CheckpointEvaluators are the custom steward checkpoint triggers'
	// evaluators registered in Go (by trigger_id); CheckpointCaller asks
	// the NATS service of a custom trigger that names a subject (the
	// daemon's). Either may be nil: a custom trigger nothing evaluates
	// fails closed when it is blocking (package steward).
	CheckpointEvaluators *steward.Registry
	CheckpointCaller     steward.SubjectCaller
	// FullCheck makes the integrity check at start read every trail entry.
	// By default it reads only the entries written since the previous
	// start's check (see traillog.MarkChecked for why that is sound).
	FullCheck bool

	// failAt is a test seam: called at each named step of a commit (and,
	// as "segment", before a batch's block is written); an error
	// aborts the commit there.
	failAt func(step string) error
	// freeSpace is a test seam: the data dir's free bytes (default statfs).
	freeSpace func() (uint64, error)
	// written is a test seam: called when Badger reports a batch's write,
	// before the committer hears of it; it may block (holding the batch in
	// flight) and its error replaces a success (an ambiguous failure: the
	// batch is on disk but reported failed).
	written func() error
	// Observer, if set, is told of each durable commit and each rejection
	// it records (the daemon's metrics); nil costs nothing.
	Observer CommitObserver
}

// Meter reports cumulative consumption measured by the runtime's side.
type Meter interface {
	// Consumed returns the tokens and cost workspace ws has consumed so
	// far, and ok=false when it has no measurement for ws.
	Consumed(ws string) (tokens int64, cost float64, ok bool)
}

// Tolerance is the allowed difference per resource_usage field: a report is
// a discrepancy when |agent - runtime| > max(Abs, Ratio * runtime).
type Tolerance struct {
	WallTime      time.Duration // default 2s
	WallTimeRatio float64       // default 0.10
	Tokens        int64         // default 0
	TokensRatio   float64       // default 0.05
	Cost          float64       // default 0
	CostRatio     float64       // default 0.05
}

const maxObjectBytes = 1<<20 - 1

// withDefaults returns a copy of c with defaults filled in, or an error.
func (c Config) withDefaults() (Config, error) {
	if c.DataDir == "" && !c.InMemory {
		return c, errors.New("runtime: config: DataDir is required")
	}
	if c.Taxonomy == nil {
		c.Taxonomy = taxonomy.Base()
	}
	if c.Highway == nil {
		d := highway.Default()
		c.Highway = &d
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.RootOwner == "" {
		c.RootOwner = "operator"
	}
	if err := c.checkLimits(); err != nil { // limits.go
		return c, err
	}
	if c.TrailWarmRetention < 0 { // compact.go
		return c, errors.New("runtime: config: TrailWarmRetention " + c.TrailWarmRetention.String() + ": want 0 (compaction on request only) or more")
	}
	if c.RootOwner == "system" {
		return c, errors.New(`runtime: config: RootOwner must be a user id, not "system"`)
	}
	if err := c.checkPlacement(); err != nil { // placement.go
		return c, err
	}
	if c.MaxObjectBytes <= 0 || c.MaxObjectBytes > maxObjectBytes {
		c.MaxObjectBytes = maxObjectBytes
	}
	if c.DeliveryLease <= 0 {
		c.DeliveryLease = defaultDeliveryLease
	}
	t := &c.Tolerance
	if t.WallTime == 0 {
		t.WallTime = 2 * time.Second
	}
	if t.WallTimeRatio == 0 {
		t.WallTimeRatio = 0.10
	}
	if t.TokensRatio == 0 {
		t.TokensRatio = 0.05
	}
	if t.CostRatio == 0 {
		t.CostRatio = 0.05
	}
	return c, nil
}
