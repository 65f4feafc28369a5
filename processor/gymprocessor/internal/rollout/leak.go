// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package rollout // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/rollout"

// A request that took a finished request's trace context (design §4.2,
// leaked trace context). An HTTP server's span of an incoming request
// (it has http.route) is caused by its caller: its parent is remote, or it
// has none. When a request arrives without a traceparent while a context
// from an earlier request is still current in the process (a keep-alive
// connection's task, an asyncio context copied from the last request), the
// instrumentation makes the new request's span a child of that earlier
// span: the OTLP flags say the parent is local (Facts.LocalRequest), and
// the parent had ended before the request began. Such a span is detached
// from that parent: it takes nothing from it downward and gives it nothing
// upward, and when it is its rollout's root it is cut from it (a link of
// type parent), so each of the two rollouts keeps its own spans.
//
// The verdict needs the parent's end: when the parent has not arrived, the
// request's contribution waits on the parent's placeholder (leakPending)
// and the verdict is given when the parent arrives, so the outcome does not
// depend on the order of arrival. Checkpoints record the pending verdicts
// (the request's start, the placeholder it waits on), so a restored core
// gives the same verdict.

// judgeRequestParent gives the verdict on n, a request with a local parent
// that has just arrived (start is its start), or defers it to the parent's
// arrival.
func (c *Core) judgeRequestParent(n *Node, start int64) {
	p := n.parent
	if p.state == stAbsent {
		n.ws().reqStart = start
		if c.leakPending == nil {
			c.leakPending = make(map[*Node][]*Node)
		}
		c.leakPending[p] = append(c.leakPending[p], n)
		return
	}
	if endedBefore(p, start) {
		n.parent = nil
		c.counts.LeakedContexts++
	}
}

// endedBefore reports whether p ended before start. An end not known (a
// span with no end time) is never before.
func endedBefore(p *Node, start int64) bool { return p.end != 0 && p.end < start }

// judgeWaitingRequests gives the verdict on the requests that named p, which
// has just arrived, as their local parent: before p's own decision, so that
// its upward decision counts only the requests that are really below it.
func (c *Core) judgeWaitingRequests(p *Node) {
	if len(c.leakPending) == 0 {
		return
	}
	ws, ok := c.leakPending[p]
	if !ok {
		return
	}
	delete(c.leakPending, p)
	for _, w := range ws {
		start := w.wait.reqStart
		w.wait.reqStart = 0
		if w.parent != p {
			continue
		}
		if !endedBefore(p, start) {
			c.propagateUp(w) // its rollouts, held back until now
			continue
		}
		c.detachLeaked(w)
	}
}

// detachLeaked detaches w from the parent it named, after its arrival.
func (c *Core) detachLeaked(w *Node) {
	p := w.parent
	w.parent = nil
	c.counts.LeakedContexts++
	if w.waiting {
		w.waiting = false
		p.wait.nWait--
	}
	e := w.held
	if e == nil {
		return
	}
	switch {
	case w.how == HowUpward && e.phase == PhaseCut:
		c.resolveRoot(w, false)
	case w.how == HowUndecided && e.phase == PhaseRelease:
		c.setDeadline(e, PhaseRelease, c.dl.undecidedRelease(e, c.now))
	}
}
