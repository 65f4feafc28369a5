// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package rollout // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/rollout"

import (
	"time"

	"github.com/otelcol-gym/otelcol-gym/internal/bounded"
)

// Config is what the core needs of the gym processor's configuration.
type Config struct {
	Settle, Wait, RolloutWait time.Duration
	MaxPendingSpans           int
	MaxPendingBytes           int64
	MaxTrackedRuns            int
	// Split: rollout roots are cut from their parents (design §4.3), and job
	// spans wait for the roots cut from their trace.
	Split bool
	// AttemptOrder orders the rollouts whose spans fall due together, so an
	// earlier attempt's root is decided before its retry's (split.AttemptIndex).
	AttemptOrder func(rollout string) int
}

// Owner is what the core tells as it decides, and asks of the span data it
// does not have: the gym processor, which hands the events on to its parts
// (the split, the service-map repair) and applies what they plan to the
// spans. Every call is made under the processor's lock, from within a core
// method; an Owner may call back into the core (Hold, Release).
type Owner interface {
	// Hold keeps the span arriving now in slot s (it leaves its batch), and
	// returns its estimated bytes (for max_pending_bytes).
	Hold(s Slot) int64
	// TakeCopy takes the span arriving now, a duplicate of the span held in
	// s, as a copy of it when nothing in it differs (a sender's retry): it
	// then leaves with the held span. It reports whether it did.
	TakeCopy(s Slot) bool
	// Arrived tells that an indexed span arrived, before it is placed.
	Arrived(n *Node)
	// Decided tells that n, of run, got its rollout directly or downward and
	// would leave now; a part may hold it (Hold) first. It reports whether
	// one did.
	Decided(n *Node, run *Run) bool
	// Rooted tells that the held span n was decided as its rollout's root
	// (cut from its parent or not, with the split on); a part may keep
	// holding it (Hold). It reports whether one did.
	Rooted(n *Node, run *Run, cut bool) bool
	// Left tells that a span leaves, and what it was decided as.
	Left(d Departure)
}

// LinkType is the kind of link a root cut from its parent gets.
type LinkType uint8

const (
	LinkParent LinkType = iota // its parent is in no rollout, in another, or did not arrive
	LinkJob                    // its parent is a job span
)

// Departure is a span leaving, as decided.
type Departure struct {
	Node *Node // nil for a span that passed unindexed
	Slot Slot  // where its data is held; Current when it is the span arriving now
	Run  *Run
	Key  Key
	// Rollout is its rollout, "" for none; How how it got it.
	Rollout string
	How     How
	// Root: decided upward as its rollout's root; Cut: cut from its parent,
	// with a link of type CutLink.
	Root    bool
	Cut     bool
	CutLink LinkType
	Job     bool
	// Phase is what it was held for last, when it was held; GaveUp, that a
	// part's hold ended without what it waited for (its deadline, a bound,
	// the shutdown).
	Phase  Phase
	GaveUp bool
	// Unindexed: a zero or duplicate span id, it passed without entering the
	// index; PassedThrough: its run passes through (observability off).
	Unindexed     bool
	PassedThrough bool
}

// Reason is why a span left in no rollout (metric attribute "reason").
type Reason uint8

const (
	ReasonWait             Reason = iota // its wait ran out
	ReasonConflict                       // spans of several rollouts below it
	ReasonBound                          // max_pending_spans / max_pending_bytes
	ReasonShutdown                       // the processor shut down
	ReasonParentMissing                  // its parent did not arrive within rollout_wait
	ReasonParentNone                     // its parent left in no rollout
	ReasonObservabilityOff               // its run showed that Gym's observability is off
	NumReasons
)

// ReasonNames are the reasons' metric attribute values.
var ReasonNames = [NumReasons]string{"wait", "conflict", "bound", "shutdown", "parent_missing", "parent_none", "observability_off"}

// Problem is a setup problem of design §4.5 (metric attribute "problem").
type Problem uint8

const (
	ProblemNoEvidence Problem = iota
	ProblemServerWithoutParent
	ProblemOnlyOrchestrator
	ProblemObservabilityOff
	NumProblems
)

// Counts is what the core counted since it was last asked (TakeCounts).
type Counts struct {
	Received, Passed, Duplicates, Resent int64
	LateParents                          int64
	LeakedContexts                       int64    // requests detached from a leaked context's span (leak.go)
	Promoted                             [3]int64 // direct, downward, upward
	Released                             [NumReasons]int64
	CutJob, CutParent                    int64
	Problems                             [NumProblems]int64
	ProblemRuns                          [NumProblems][]string // the runs a problem was seen in, for the log
}

// Core decides which rollout each span belongs to (design §4.2, §4.3's
// cuts), holding the spans that must wait and the index of spans seen. It
// knows spans by their facts (Facts), never their data, and tells its Owner
// what it decides. It is not safe for concurrent use: the processor
// serializes calls under its lock. Times are unix nanoseconds.
type Core struct {
	cfg   Config
	dl    deadlines
	owner Owner

	idx          index
	fifo         nodeQueue
	heap         pendingHeap
	pendingBytes int64
	seq          uint64
	slots        slots
	tracePending map[[16]byte]int32
	jobWait      map[[16]byte][]*Node
	leakPending  map[*Node][]*Node // absent parent → requests waiting for its verdict (leak.go)
	runs         *bounded.Table[string, *Run]

	now    int64
	counts Counts

	// The span arriving now (Arrive).
	cur     *Node
	curRun  *Run
	curHeld bool

	spare []*Node // fresh nodes an arriving span did not use (newNode)

	// Buffers of Flush, kept between ticks.
	due      []*entry
	dueOrder []attemptOrder
}

// maxWalk bounds every walk up a parent chain (cycles, very deep chains).
const maxWalk = 4096

// New returns an empty core that tells owner what it decides.
func New(cfg Config, owner Owner) *Core {
	return &Core{
		cfg:          cfg,
		dl:           deadlines{settle: int64(cfg.Settle), wait: int64(cfg.Wait), rolloutWait: int64(cfg.RolloutWait)},
		owner:        owner,
		idx:          newIndex(),
		tracePending: make(map[[16]byte]int32),
		jobWait:      make(map[[16]byte][]*Node),
		runs:         newRunTable(cfg.MaxTrackedRuns),
	}
}

// Hasher hashes span keys for Facts; it is safe to use without the lock.
func (c *Core) Hasher() Hasher { return c.idx.Hasher }

// Begin starts a round (a batch, or a timer tick) at now.
func (c *Core) Begin(now int64) { c.now = now }

// End ends a round: the index drops the entries it no longer keeps.
func (c *Core) End() { c.trimIndex() }

// Restarted tells the core that the collector started again at now (unix
// nanoseconds) on what it had recorded (design §4.6): for wait from then, a
// span whose parent left in no rollout waits for the spans below it that
// the senders may still be retrying (deadlines.undecidedRelease).
func (c *Core) Restarted(now int64) { c.dl.restartWait = now + c.dl.wait }

// TakeCounts returns what was counted since the last call and resets it.
func (c *Core) TakeCounts() Counts {
	k := c.counts
	c.counts = Counts{}
	return k
}

// Pending is the number of held spans; PendingBytes their estimated bytes;
// Indexed the index's entries.
func (c *Core) Pending() int        { return len(c.heap) }
func (c *Core) PendingBytes() int64 { return c.pendingBytes }
func (c *Core) Indexed() int        { return c.idx.len() }
