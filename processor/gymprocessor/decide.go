// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/split"

// Reasons a span leaves without a rollout (metric attribute "reason").
const (
	reasonWait             = iota // its wait ran out
	reasonConflict                // spans of several rollouts below it
	reasonBound                   // max_pending_spans / max_pending_bytes
	reasonShutdown                // the processor shut down
	reasonParentMissing           // its parent did not arrive within rollout_wait
	reasonParentNone              // its parent left in no rollout
	reasonObservabilityOff        // its run showed that Gym's observability is off
	numReasons
)

var reasonNames = [numReasons]string{"wait", "conflict", "bound", "shutdown", "parent_missing", "parent_none", "observability_off"}

// register makes n wait on its undecided parent: it is told when the parent
// decides (notifyWaiters).
func (e *engine) register(n *node) {
	if n.waiting || n.parent == nil {
		return
	}
	p := n.parent
	if p.waiters == nil {
		p.waiters = make([]*node, 0, 4) // POST /run's ASGI children: one allocation
	}
	p.waiters = append(p.waiters, n)
	p.nWait++
	n.waiting = true
}

// decide gives n its rollout and emits it, or, for an upward root with the
// split on, holds it until its cut is known.
func (e *engine) decide(n *node, rollout string, h how) {
	n.rollout = rollout
	n.how = h
	e.r.promoted[h-howDirect]++
	switch {
	case h == howUpward:
		e.resolveRoot(n, false)
	case e.wantsRolloutParent(n):
		e.holdForRolloutParent(n)
	case e.holdForPeer(n):
	default:
		e.emit(n)
	}
	e.propagateUp(n)
	e.notifyWaiters(n)
}

// settleDecision takes the upward decision of an undecided span whose settle
// has passed. It reports whether the span left the undecided state.
func (e *engine) settleDecision(n *node) bool {
	switch {
	case n.job:
		return false
	case n.below.conflict:
		e.releaseNone(n, reasonConflict)
		return true
	case n.below.id != "":
		e.decide(n, n.below.id, howUpward)
		return true
	}
	return false
}

// resolveRoot decides whether the upward span n is its rollout's root (and,
// with the split on, must be cut from its parent; design §4.3). Unless force,
// it waits while the parent may still turn out to be in n's rollout.
func (e *engine) resolveRoot(n *node, force bool) {
	p := n.parent
	if p == nil {
		e.finalizeRoot(n, cutFromNamedParent(n), linkTypeParent)
		return
	}
	if p.how != howUndecided {
		if p.rollout == n.rollout {
			e.emit(n)
			return
		}
		t := linkTypeParent
		if p.job {
			t = linkTypeJob
		}
		e.finalizeRoot(n, true, t)
		return
	}
	if force || p.below.conflict || n.held == nil {
		e.finalizeRoot(n, true, linkTypeParent)
		return
	}
	e.register(n)
	e.setDeadline(n.held, phaseCut, e.dl.rootCut(n.held.arrival))
}

// finalizeRoot emits n as its rollout's root, marked so (the exporter
// writes rollouts.jsonl from the mark), cut from its parent when it has one
// and the split is on, and records it for its job span and for a later
// attempt of its rollout.
func (e *engine) finalizeRoot(n *node, cut bool, linkType string) {
	n.root = true
	if n.parent != nil && n.parent.state == stAbsent {
		n.parent.late = true
	}
	hs := n.held
	if hs == nil {
		e.emit(n)
		return
	}
	cut = cut && e.split
	hs.cut, hs.cutType = cut, linkType
	if cut {
		if linkType == linkTypeJob {
			e.r.cutJob++
		} else {
			e.r.cutParent++
		}
	}
	if e.split {
		e.sp.Root(hs.origin.info.run.id, n.key.trace, n.key.span, n.rollout, cut, e.now)
		if !e.linkPreviousAttempt(hs, false) {
			// Not seen yet: after an outage a sender's retries can bring
			// it after its successor's.
			e.setDeadline(hs, phaseAttempt, e.dl.previousAttemptRoot(e.now))
			return
		}
	}
	e.emit(n)
}

// linkPreviousAttempt gives the root hs of a re-dispatched attempt its link
// to the previous attempt's root, when that is known. It reports false when
// hs is such a root and the previous one is not known.
func (e *engine) linkPreviousAttempt(hs *heldSpan, waited bool) bool {
	if _, ok := split.PreviousAttempt(hs.n.rollout); !ok {
		return true
	}
	hs.prev, hs.hasPrev = e.sp.PreviousRoot(hs.origin.info.run.id, hs.n.key.trace, hs.n.rollout, waited)
	return hs.hasPrev
}

// releaseNone lets n leave in no rollout, as it stands.
func (e *engine) releaseNone(n *node, reason int) {
	n.how = howNone
	e.r.released[reason]++
	if p := n.parent; p != nil && p.state == stAbsent {
		p.late = true
	}
	e.emit(n)
	e.notifyWaiters(n)
}

// propagateUp folds n's rollouts into the summaries of its ancestors, and
// takes the upward decision of a settled ancestor that now has one rollout
// below it.
func (e *engine) propagateUp(n *node) {
	c := n.contribution()
	if c.empty() {
		return
	}
	var ready []*node
	for ch, p, depth := n, n.parent, 0; p != nil && depth < maxWalk; ch, p, depth = p, p.parent, depth+1 {
		if ch.reqStart != 0 {
			break // a request whose local parent's verdict is pending (leak.go)
		}
		if !p.below.merge(c) || p.rollout != "" || p.state == stAbsent {
			break
		}
		if p.how == howUndecided && p.settled && p.held != nil {
			ready = append(ready, p)
		}
		c = p.below
	}
	for _, p := range ready {
		if p.how == howUndecided && p.held != nil {
			e.settleDecision(p)
		}
	}
}

// notifyWaiters tells the held children of n that n changed: an undecided
// child takes n's rollout downward, or, when n left in none and the child's
// upward decision found nothing, leaves now in none too; an upward
// child learns whether it is cut.
func (e *engine) notifyWaiters(n *node) {
	if len(n.waiters) == 0 {
		return
	}
	ws := n.waiters
	n.waiters = nil
	for _, w := range ws {
		if !w.waiting || w.parent != n || w.held == nil {
			continue
		}
		switch {
		case w.how == howUndecided && n.rollout != "":
			e.decide(w, n.rollout, howDownward)
		case w.how == howUpward && w.held.phase == phaseCut:
			e.resolveRoot(w, false)
		case w.how == howUndecided && n.how == howNone && w.held.phase == phaseRelease:
			e.releaseNone(w, reasonParentNone)
		}
	}
	// Those still waiting stay, after any registered meanwhile; with none
	// registered, they are compacted in place.
	kept, inPlace := n.waiters, len(n.waiters) == 0
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
	n.waiters = kept
}

// dropLeftWaiters compacts p's waiter list to the children still waiting.
// Without it, a parent that never arrives (Gym's gym.job until the run ends,
// hours later) would keep every child that ever waited on it reachable: one
// node per rollout for the whole run. Compacting when over half the list
// has left keeps it within twice the children waiting, at amortized O(1).
func dropLeftWaiters(p *node) {
	kept := p.waiters[:0]
	for _, w := range p.waiters {
		if w.waiting && w.parent == p {
			kept = append(kept, w)
		}
	}
	clear(p.waiters[len(kept):])
	if len(kept) == 0 {
		kept = nil
	}
	p.waiters = kept
}
