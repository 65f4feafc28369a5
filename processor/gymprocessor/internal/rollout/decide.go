// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package rollout // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/rollout"

// decide gives n its rollout (design §4.2: directly, downward or upward)
// and lets it leave; an upward span first learns whether it is its
// rollout's root (root.go), a direct or downward one may be held by a part
// (Owner.Decided). The spans above and below it are told.
func (c *Core) decide(n *Node, rollout string, h How) {
	n.rollout = rollout
	n.how = h
	c.counts.Promoted[h-HowDirect]++
	switch {
	case h == HowUpward:
		c.resolveRoot(n, false)
	case c.owner.Decided(n, c.runOf(n)):
	default:
		c.emit(n)
	}
	c.propagateUp(n)
	c.notifyWaiters(n)
}

// runOf is the run of n, held or arriving now.
func (c *Core) runOf(n *Node) *Run {
	if n.held != nil {
		return n.held.run
	}
	return c.curRun
}

// releaseNone lets n leave in no rollout, as it stands (design §4.2: its
// wait ran out, or it can get none), counted by reason.
func (c *Core) releaseNone(n *Node, reason Reason) {
	n.how = HowNone
	c.counts.Released[reason]++
	if p := n.parent; p != nil && p.state == stAbsent {
		p.late = true
	}
	c.emit(n)
	c.notifyWaiters(n)
}
