// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package rollout // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/rollout"

// The root rule (design §4.3): only a span decided upward can be its
// rollout's root. It is cut from its parent when the parent is not in its
// rollout: the parent is a job span, in no rollout or in another; or the
// parent's summary below shows several rollouts (it sits above several);
// or the parent has not arrived within wait.

// resolveRoot decides whether the upward span n is its rollout's root (and,
// with the split on, must be cut from its parent). Unless force, it waits
// while the parent may still turn out to be in n's rollout.
func (c *Core) resolveRoot(n *Node, force bool) {
	p := n.parent
	if p == nil {
		// A request detached from a leaked context's span still names it:
		// it is cut from it (leak.go).
		c.finalizeRoot(n, n.named, LinkParent)
		return
	}
	if p.how != HowUndecided {
		if p.rollout == n.rollout {
			c.emit(n)
			return
		}
		t := LinkParent
		if p.job {
			t = LinkJob
		}
		c.finalizeRoot(n, true, t)
		return
	}
	if force || p.below().conflict || n.held == nil {
		c.finalizeRoot(n, true, LinkParent)
		return
	}
	c.register(n)
	c.setDeadline(n.held, PhaseCut, c.dl.rootCut(n.held.arrival))
}

// finalizeRoot lets n leave as its rollout's root, marked so (the exporter
// writes rollouts.jsonl from the mark), cut from its parent when it has one
// and the split is on; a part may hold it first (Owner.Rooted).
func (c *Core) finalizeRoot(n *Node, cut bool, link LinkType) {
	n.root = true
	if n.parent != nil && n.parent.state == stAbsent {
		n.parent.late = true
	}
	e := n.held
	if e == nil {
		c.emit(n)
		return
	}
	cut = cut && c.cfg.Split
	e.cut, e.cutLink = cut, link
	if cut {
		if link == LinkJob {
			c.counts.CutJob++
		} else {
			c.counts.CutParent++
		}
	}
	if c.cfg.Split && c.owner.Rooted(n, e.run, cut) {
		return
	}
	c.emit(n)
}
