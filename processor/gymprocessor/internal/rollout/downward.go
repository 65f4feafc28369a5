// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package rollout // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/rollout"

// The downward rule (design §4.2, rule 2): a span below a span in a rollout
// belongs to the nearest such ancestor's rollout. A span whose parent is
// undecided waits on it (register) and is told when it decides
// (notifyWaiters).

// register makes n wait on its undecided parent: it is told when the parent
// decides (notifyWaiters).
func (c *Core) register(n *Node) {
	if n.waiting || n.parent == nil {
		return
	}
	p := n.parent.ws()
	if p.waiters == nil {
		p.waiters = make([]*Node, 0, 4) // POST /run's ASGI children: one allocation
	}
	p.waiters = append(p.waiters, n)
	p.nWait++
	n.waiting = true
}

// notifyWaiters tells the held children of n that n changed: an undecided
// child takes n's rollout downward, or, when n left in none and the child's
// upward decision found nothing, leaves now in none too (within wait after
// a restart, then: deadlines.undecidedRelease); an upward child learns
// whether it is cut.
func (c *Core) notifyWaiters(n *Node) {
	if len(n.waiters()) == 0 {
		return
	}
	ws := n.wait.waiters
	n.wait.waiters = nil
	for _, w := range ws {
		if !w.waiting || w.parent != n || w.held == nil {
			continue
		}
		switch {
		case w.how == HowUndecided && n.rollout != "":
			c.decide(w, n.rollout, HowDownward)
		case w.how == HowUpward && w.held.phase == PhaseCut:
			c.resolveRoot(w, false)
		case w.how == HowUndecided && n.how == HowNone && w.held.phase == PhaseRelease:
			if d := c.dl.undecidedRelease(w.held, c.now); d > c.now {
				c.setDeadline(w.held, PhaseRelease, d) // after a restart
			} else {
				c.releaseNone(w, ReasonParentNone)
			}
		}
	}
	// Those still waiting stay, after any registered meanwhile; with none
	// registered, they are compacted in place.
	kept, inPlace := n.wait.waiters, len(n.wait.waiters) == 0
	if inPlace {
		kept = ws[:0]
	}
	for _, w := range ws {
		if w.waiting && w.parent == n && w.held != nil {
			kept = append(kept, w)
		}
	}
	switch {
	case len(kept) == 0:
		kept = nil
	case inPlace:
		clear(ws[len(kept):])
	}
	n.wait.waiters = kept
}

// dropLeftWaiters compacts p's waiter list to the children still waiting.
// Without it, a parent that never arrives (Gym's gym.job until the run ends,
// hours later) would keep every child that ever waited on it reachable: one
// node per rollout for the whole run. Compacting when over half the list
// has left keeps it within twice the children waiting, at amortized O(1).
func dropLeftWaiters(p *Node) {
	ws := p.wait
	kept := ws.waiters[:0]
	for _, w := range ws.waiters {
		if w.waiting && w.parent == p {
			kept = append(kept, w)
		}
	}
	clear(ws.waiters[len(kept):])
	if len(kept) == 0 {
		kept = nil
	}
	ws.waiters = kept
}
