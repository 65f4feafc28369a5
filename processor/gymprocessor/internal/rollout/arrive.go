// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package rollout // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/rollout"

// Facts is what an arriving span says of itself, read from it before the
// lock.
type Facts struct {
	Key    Key
	Parent [8]byte // zero when it has none
	// Hash and ParentHash are the index hashes (Hasher.Hash) of Key and of
	// the parent's key (when it has a parent).
	Hash, ParentHash uint64
	// Evidence is the rollout it names directly (design §4.1), or "".
	Evidence string
	// ObservabilityOff: it shows that Gym's observability is off, if its run
	// has shown no evidence yet (evidence.Finder.ObservabilityOffSign).
	ObservabilityOff bool
	// Job: its name is a job span name.
	Job bool
	// LocalRequest: an HTTP server's request span whose parent is local
	// (leak.go).
	LocalRequest bool
	// ServerWithoutParent: a SERVER span without a parent (a setup problem).
	ServerWithoutParent bool
	Start, End          int64
	// Node is a fresh node for the span (NewNode), or nil.
	Node *Node
}

var zeroSpan [8]byte

// Arrive takes one span of run arriving now through the core, in order:
// what it shows of its run (observeRun); out at once when its run passes
// through; into the index (admit), unless it leaves at once or is taken as
// a resent copy; what it teaches the parts (Owner.Arrived); decided or held
// (place). It reports whether the span was taken out of its batch (held, or
// taken as a copy of a held span).
func (c *Core) Arrive(f *Facts, run *Run) bool {
	c.counts.Received++
	c.observeRun(run, f)
	taken := false
	if run.passThrough {
		c.counts.Passed++
		c.owner.Left(Departure{Slot: Current, Run: run, Key: f.Key, PassedThrough: true})
	} else if n, copied := c.admit(f, run); n != nil {
		c.cur, c.curRun, c.curHeld = n, run, false
		c.owner.Arrived(n)
		c.place(n, f)
		taken = c.curHeld
		c.cur, c.curRun = nil, nil
	} else {
		taken = copied
	}
	c.keepSpare(f)
	c.enforcePendingBounds()
	return taken
}

// admit enters an arriving span into the index: its node (a placeholder of
// it filled, or a fresh one) now pending, with its parent's node (a
// placeholder when the parent has not arrived). It returns nil when the
// span does not enter: a zero span id, or a duplicate, leaves at once
// (passUnindexed); an unchanged resent copy of a held span is taken with it
// (copied).
func (c *Core) admit(f *Facts, run *Run) (n *Node, copied bool) {
	if f.ServerWithoutParent {
		c.counts.Problems[ProblemServerWithoutParent]++
	}
	if f.Key.Span == zeroSpan {
		c.passUnindexed(f, run, nil)
		return nil, false
	}
	n, taken := c.idx.get(f.Hash, f.Key)
	if n != nil && n.state != stAbsent {
		if n.state == stPending && n.held != nil && c.owner.TakeCopy(n.held.slot) {
			c.counts.Resent++
			return nil, true // out of the batch: it leaves with the held copy
		}
		c.counts.Duplicates++
		c.passUnindexed(f, run, n)
		return nil, false
	}
	if n == nil {
		n = f.Node // allocated before the lock
		f.Node = nil
		if n == nil {
			n = c.newNode()
		}
		n.key = f.Key
		c.idx.put(f.Hash, n, taken)
	} else if n.late {
		c.counts.LateParents++
		n.late = false
	}
	n.state = stPending
	n.end = f.End
	c.judgeWaitingRequests(n)
	if f.Parent != zeroSpan && f.Parent != f.Key.Span {
		n.named = true
		pk := Key{Trace: f.Key.Trace, Span: f.Parent}
		p, taken := c.idx.get(f.ParentHash, pk)
		if p == nil {
			p = c.newNode()
			p.key = pk
			c.idx.put(f.ParentHash, p, taken)
			c.fifo.push(p, c.now)
		}
		n.parent = p
		if f.LocalRequest {
			c.judgeRequestParent(n, f.Start)
		}
	}
	return n, false
}

// passUnindexed lets a span that cannot be indexed (a zero or duplicate
// span id) leave at once, with the rollout it shows directly, or that its
// first copy (first, when it is a duplicate) left with, or that its parent
// has.
func (c *Core) passUnindexed(f *Facts, run *Run, first *Node) {
	rollout, h := f.Evidence, HowDirect
	if rollout == "" && first != nil && first.state == stEmitted && first.rollout != "" && first.how >= HowDirect && first.how <= HowUpward {
		rollout, h = first.rollout, first.how
	}
	if rollout == "" && f.Parent != zeroSpan {
		if p, _ := c.idx.get(f.ParentHash, Key{Trace: f.Key.Trace, Span: f.Parent}); p != nil && p.rollout != "" {
			rollout, h = p.rollout, HowDownward
		}
	}
	if rollout != "" {
		c.counts.Promoted[h-HowDirect]++
	} else {
		h = HowNone
	}
	c.owner.Left(Departure{Slot: Current, Run: run, Key: f.Key, Rollout: rollout, How: h, Unindexed: true})
}

// place decides the admitted span n or holds it (design §4.2): with direct
// evidence it is decided, and so are the spans waiting on it; a job span is
// held, with split on, until the roots below it are cut (§4.3); below a
// decided parent it takes the parent's rollout; else it waits settle for an
// upward decision, and tells the spans above it what it knows.
func (c *Core) place(n *Node, f *Facts) {
	switch {
	case f.Evidence != "":
		c.decide(n, f.Evidence, HowDirect)
	case f.Job:
		n.job = true
		n.how = HowNone
		if c.cfg.Split {
			// A job span waits settle, then until nothing else of its trace
			// is pending (at most wait), so it links the roots cut from it.
			c.hold(n, PhaseJob, c.dl.jobSettle(c.now))
			c.jobWait[n.key.Trace] = append(c.jobWait[n.key.Trace], n)
		} else {
			c.emit(n)
		}
		c.propagateUp(n)
		c.notifyWaiters(n)
	case n.parent != nil && n.parent.rollout != "":
		c.decide(n, n.parent.rollout, HowDownward)
	default:
		c.hold(n, PhaseSettle, c.dl.upwardDecision(c.now))
		if p := n.parent; p != nil && p.how == HowUndecided {
			c.register(n)
		}
		c.propagateUp(n)
		c.notifyWaiters(n)
	}
}

// newNode returns a fresh node: one an arriving span brought and did not
// need (its node was already there), else a new one.
func (c *Core) newNode() *Node {
	if k := len(c.spare); k > 0 {
		n := c.spare[k-1]
		c.spare = c.spare[:k-1]
		return n
	}
	return new(Node)
}

// keepSpare keeps a node an arriving span brought and did not use. It was
// never published, so it is as fresh as a new one.
func (c *Core) keepSpare(f *Facts) {
	if f.Node != nil && len(c.spare) < maxSpareNodes {
		c.spare = append(c.spare, f.Node)
	}
	f.Node = nil
}

// maxSpareNodes bounds the unused nodes kept for placeholders.
const maxSpareNodes = 256
