// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package rollout // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/rollout"

import "container/heap"

// emit lets n leave as decided.
func (c *Core) emit(n *Node) { c.leave(n, false) }

// leave lets n leave (out of the pending store when held, or as the span
// arriving now) and tells the owner; gaveUp says a part's hold of it ended
// without what it waited for. Its index entry stays, for wait after, so
// that late children are still decided downward.
func (c *Core) leave(n *Node, gaveUp bool) {
	d := Departure{Node: n, Slot: Current, Key: n.key, Rollout: n.rollout, How: n.how, Root: n.root, Job: n.job, GaveUp: gaveUp}
	if e := n.held; e != nil {
		if e.heapIdx >= 0 {
			heap.Remove(&c.heap, int(e.heapIdx))
		}
		c.pendingBytes -= e.bytes
		e.run.held--
		n.held = nil
		d.Slot, d.Run, d.Phase, d.Cut, d.CutLink = e.slot, e.run, e.phase, e.cut, e.cutLink
		c.owner.Left(d)
		c.slots.give(e.slot)
		if n.job {
			c.dropJobWait(n)
		} else {
			c.traceLeft(n.key.Trace)
		}
	} else if n == c.cur {
		d.Run = c.curRun
		c.owner.Left(d)
	}
	n.state = stEmitted
	if n.waiting {
		n.waiting = false
		p := n.parent
		p.wait.nWait--
		if len(p.wait.waiters) > 8 && len(p.wait.waiters) > 2*int(p.wait.nWait) {
			dropLeftWaiters(p)
		}
	}
	if p := n.parent; p != nil && p.state == stAbsent {
		// An awaited parent stays indexed for wait after its last child
		// left, so that, arriving late, it still learns the rollouts below
		// it and is counted late.
		c.fifo.push(p, c.now)
	}
	c.fifo.push(n, c.now)
}
