// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

// place decides the admitted span n or holds it (design §4.2): with direct
// evidence it is decided, and so are the spans waiting on it; a job span is
// held, with split on, until the roots below it are cut (§4.3); below a
// decided parent it
// takes the parent's rollout; else it waits settle for an upward decision,
// and tells the spans above it what it knows.
func (e *engine) place(n *node, sf *spanFacts) {
	switch {
	case sf.ev != "":
		e.decide(n, sf.ev, howDirect)
	case sf.job:
		n.job = true
		n.how = howNone
		if e.split {
			// A job span waits settle, then until nothing else of its trace
			// is pending (at most wait), so it links the roots cut from it.
			e.hold(n, phaseJob, e.dl.jobSettle(e.now))
			e.jobWait[sf.orig] = append(e.jobWait[sf.orig], n)
		} else {
			e.emit(n)
		}
		e.propagateUp(n)
		e.notifyWaiters(n)
	case n.parent != nil && n.parent.rollout != "":
		e.decide(n, n.parent.rollout, howDownward)
	default:
		e.hold(n, phaseSettle, e.dl.upwardDecision(e.now))
		if p := n.parent; p != nil && p.how == howUndecided {
			e.register(n)
		}
		e.propagateUp(n)
		e.notifyWaiters(n)
	}
}
