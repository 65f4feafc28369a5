// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import (
	"go.opentelemetry.io/collector/pdata/ptrace"
	conventions "go.opentelemetry.io/otel/semconv/v1.37.0"
)

// A request that took a finished request's trace context (design §4.2,
// leaked trace context). An HTTP server's span of an incoming request
// (it has http.route) is caused by its caller: its parent is remote, or it
// has none. When a request arrives without a traceparent while a context
// from an earlier request is still current in the process (a keep-alive
// connection's task, an asyncio context copied from the last request), the
// instrumentation makes the new request's span a child of that earlier
// span: the OTLP flags say the parent is local, and the parent had ended
// before the request began. Such a span is detached from that parent: it
// takes nothing from it downward and gives it nothing upward, and when it
// is its rollout's root it is cut from it (a link of type parent), so each
// of the two rollouts keeps its own spans.
//
// The verdict needs the parent's end: when the parent has not arrived, the
// request's contribution waits on the parent's placeholder (leakPending)
// and the verdict is given when the parent arrives, so the outcome does not
// depend on the order of arrival. Checkpoints do not record ends or pending
// verdicts: after a restart, a request whose parent arrived before it is
// attached to it, as without this rule.

// The OTLP span flags that tell whether the parent span context was remote
// (SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK, SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK).
const (
	flagHasIsRemote = 0x100
	flagIsRemote    = 0x200
)

// requestWithLocalParent reports whether sp is an HTTP server's span of an
// incoming request whose parent the sender says is local.
func requestWithLocalParent(sp ptrace.Span) bool {
	if sp.Flags()&(flagHasIsRemote|flagIsRemote) != flagHasIsRemote || sp.ParentSpanID().IsEmpty() {
		return false
	}
	_, ok := sp.Attributes().Get(string(conventions.HTTPRouteKey))
	return ok
}

// judgeRequestParent gives the verdict on n, a request with a local parent
// that has just arrived (start is its start), or defers it to the parent's
// arrival.
func (e *engine) judgeRequestParent(n *node, start int64) {
	p := n.parent
	if p.state == stAbsent {
		n.reqStart = start
		if e.leakPending == nil {
			e.leakPending = make(map[*node][]*node)
		}
		e.leakPending[p] = append(e.leakPending[p], n)
		return
	}
	if endedBefore(p, start) {
		n.parent = nil
		e.r.leakedContexts++
	}
}

// endedBefore reports whether p ended before start. An end not known (a
// node restored from a checkpoint, which does not record ends; a span with
// no end time) is never before.
func endedBefore(p *node, start int64) bool { return p.end != 0 && p.end < start }

// judgeWaitingRequests gives the verdict on the requests that named p, which
// has just arrived, as their local parent: before p's own decision, so that
// its upward decision counts only the requests that are really below it.
func (e *engine) judgeWaitingRequests(p *node) {
	if len(e.leakPending) == 0 {
		return
	}
	ws, ok := e.leakPending[p]
	if !ok {
		return
	}
	delete(e.leakPending, p)
	for _, w := range ws {
		start := w.reqStart
		w.reqStart = 0
		if w.parent != p {
			continue
		}
		if !endedBefore(p, start) {
			e.propagateUp(w) // its rollouts, held back until now
			continue
		}
		e.detachLeaked(w)
	}
}

// detachLeaked detaches w from the parent it named, after its arrival.
func (e *engine) detachLeaked(w *node) {
	p := w.parent
	w.parent = nil
	e.r.leakedContexts++
	if w.waiting {
		w.waiting = false
		p.nWait--
	}
	hs := w.held
	if hs == nil {
		return
	}
	switch {
	case w.how == howUpward && hs.phase == phaseCut:
		e.resolveRoot(w, false)
	case w.how == howUndecided && hs.phase == phaseRelease:
		e.setDeadline(hs, phaseRelease, e.dl.undecidedRelease(hs, e.now))
	}
}

// cutFromNamedParent reports whether n, decided as its rollout's root with
// no parent in the index, still names a parent in its span: a request
// detached from a leaked context's span, to be cut from it.
func cutFromNamedParent(n *node) bool {
	hs := n.held
	if hs == nil {
		return false
	}
	pid := hs.span.ParentSpanID()
	return !pid.IsEmpty() && pid != n.key.span
}
