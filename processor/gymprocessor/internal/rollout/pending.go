// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package rollout // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/rollout"

import "container/heap"

// Phase is what a held span waits for. Phases are taken in this order when
// several fall due together (design §4.5: upward candidates settle, then
// roots are cut, then undecided spans leave, then job spans, then roots
// waiting for their previous attempt). The Hold phases are the parts'
// (Core.Hold).
type Phase uint8

const (
	PhaseSettle         Phase = iota // undecided, settle not yet passed
	PhaseCut                         // decided upward, waiting to know whether its parent is in its rollout
	PhaseRelease                     // undecided after settle: waits for its parent, or a root for wait
	HoldRolloutParent                // parentless SERVER span waiting for its rollout's gym.rollout (§4.4)
	HoldPeer                         // decided CLIENT span waiting to learn the service it called (§4.4)
	PhaseJob                         // job span waiting for its trace's pending spans
	HoldPreviousAttempt              // re-dispatched attempt's root waiting for its previous attempt's root (§4.3)
)

// Slot names where the core's owner keeps a held span's data (Owner.Hold).
type Slot int32

// Current is the slot of a span that leaves as it arrives: it is in its
// batch, not held.
const Current Slot = -1

// entry is a span the core holds: what for, and until when. The span's
// data is the owner's, in its slot.
type entry struct {
	n        *Node
	run      *Run
	arrival  int64
	deadline int64
	seq      uint64
	bytes    int64
	heapIdx  int32 // -1 when not in the heap
	slot     Slot
	phase    Phase
	cut      bool
	cutLink  LinkType
}

// pendingHeap orders held spans by deadline, then arrival sequence.
type pendingHeap []*entry

func (h pendingHeap) Len() int { return len(h) }
func (h pendingHeap) Less(i, j int) bool {
	if h[i].deadline != h[j].deadline {
		return h[i].deadline < h[j].deadline
	}
	return h[i].seq < h[j].seq
}
func (h pendingHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIdx = int32(i)
	h[j].heapIdx = int32(j)
}
func (h *pendingHeap) Push(x any) {
	e := x.(*entry)
	e.heapIdx = int32(len(*h))
	*h = append(*h, e)
}
func (h *pendingHeap) Pop() any {
	old := *h
	n := len(old)
	e := old[n-1]
	old[n-1] = nil
	e.heapIdx = -1
	*h = old[:n-1]
	return e
}

// slots hands out the owner's slots: the smallest free one first.
type slots struct {
	next Slot
	free []Slot
}

func (s *slots) take() Slot {
	if k := len(s.free); k > 0 {
		v := s.free[k-1]
		s.free = s.free[:k-1]
		return v
	}
	s.next++
	return s.next - 1
}

func (s *slots) give(v Slot) { s.free = append(s.free, v) }

// hold moves the span arriving now into the pending store.
func (c *Core) hold(n *Node, phase Phase, deadline int64) {
	e := &entry{n: n, run: c.curRun, slot: c.slots.take(), arrival: c.now, deadline: deadline, phase: phase, seq: c.seq, heapIdx: -1}
	c.seq++
	e.bytes = c.owner.Hold(e.slot)
	e.run.held++
	c.curHeld = true
	n.held = e
	n.state = stPending
	heap.Push(&c.heap, e)
	c.pendingBytes += e.bytes
	if !n.job {
		c.tracePending[n.key.Trace]++
	}
}

func (c *Core) setDeadline(e *entry, phase Phase, deadline int64) {
	e.phase = phase
	e.deadline = deadline
	if e.heapIdx >= 0 {
		heap.Fix(&c.heap, int(e.heapIdx))
	} else {
		heap.Push(&c.heap, e)
	}
}

// Hold is the one way a part holds a decided span (design §4.4: a SERVER
// span for its rollout's gym.rollout, a CLIENT span for its peer; §4.3: an
// attempt's root for its previous attempt's): the span arriving now, or a
// span held already, waits in phase p until Release or its deadline (the
// core's rule for p). When that passes (or a bound or the shutdown comes
// first) it leaves with Departure.GaveUp. Hold reports whether the span is
// held: false when it is neither arriving nor held, or when a held span's
// wait for its peer is over already.
func (c *Core) Hold(n *Node, p Phase) bool {
	if n.held == nil {
		if n != c.cur {
			return false
		}
		c.hold(n, p, c.partDeadline(p, c.now))
		return true
	}
	d := c.partDeadline(p, n.held.arrival)
	if p == HoldPeer && d <= c.now {
		return false
	}
	c.setDeadline(n.held, p, d)
	return true
}

// partDeadline is the deadline of a part's hold of a span that arrived at
// arrival.
func (c *Core) partDeadline(p Phase, arrival int64) int64 {
	switch p {
	case HoldRolloutParent:
		return c.dl.rolloutParent(arrival)
	case HoldPeer:
		return c.dl.peerWait(arrival)
	default:
		return c.dl.previousAttemptRoot(c.now)
	}
}

// Release lets a span a part holds leave now (what it waited for came).
func (c *Core) Release(n *Node) {
	if n.held != nil {
		c.emit(n)
	}
}

// expire runs the action due at a held span's deadline.
func (c *Core) expire(e *entry, relReason Reason) {
	n := e.n
	switch e.phase {
	case PhaseSettle:
		n.settled = true
		if c.settleDecision(n) {
			return
		}
		c.setDeadline(e, PhaseRelease, c.dl.undecidedRelease(e, c.now))
	case PhaseCut:
		if d := c.dl.rootCut(e.arrival); d > c.now && relReason != ReasonShutdown {
			c.setDeadline(e, PhaseCut, d) // a restart came while it waited
			return
		}
		c.resolveRoot(n, true)
	case PhaseRelease:
		c.releaseNone(n, releaseReason(n, relReason))
	case HoldRolloutParent, HoldPeer, HoldPreviousAttempt:
		c.leave(n, true)
	case PhaseJob:
		if !n.settled {
			n.settled = true
			if c.tracePending[n.key.Trace] > 0 && relReason != ReasonShutdown {
				c.setDeadline(e, PhaseJob, c.dl.jobLinks(e.arrival))
				return
			}
		}
		c.emit(n)
	}
}

// evict makes the held span e leave now, taking its pending decisions with
// what is known (design §4.5: at a bound, as they stand).
func (c *Core) evict(e *entry, reason Reason) {
	n := e.n
	for i := 0; i < 4 && n.held == e; i++ {
		switch e.phase {
		case PhaseSettle:
			n.settled = true
			if !c.settleDecision(n) {
				c.releaseNone(n, reason)
			}
		case PhaseCut:
			c.resolveRoot(n, true)
		case PhaseRelease:
			c.releaseNone(n, reason)
		case HoldRolloutParent, HoldPeer, HoldPreviousAttempt:
			c.leave(n, true)
		case PhaseJob:
			c.emit(n)
		}
	}
	if n.held == e {
		c.releaseNone(n, reason)
	}
}

func (c *Core) enforcePendingBounds() {
	for len(c.heap) > 0 && (len(c.heap) > c.cfg.MaxPendingSpans || c.pendingBytes > c.cfg.MaxPendingBytes) {
		c.evict(c.heap[0], ReasonBound)
	}
}
