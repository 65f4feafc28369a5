// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import (
	"container/heap"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// emit moves n's span to the round's output, rewritten.
func (e *engine) emit(n *node) {
	if hs := n.held; hs != nil {
		if hs.heapIdx >= 0 {
			heap.Remove(&e.heap, hs.heapIdx)
		}
		e.pendingBytes -= hs.bytes
		hs.origin.info.proc.held--
		hs.origin.info.run.held--
		n.held = nil
		e.r.leave(hs.origin, hs.span, hs.copies)
		e.leave(hs.span, hs.origin.info, n, hs)
		if n.job {
			e.dropJobWait(n)
		} else {
			e.traceLeft(n.key.trace)
		}
	} else if n == e.cur {
		e.leave(e.curSpan, e.curInfo, n, nil)
	}
	n.state = stEmitted
	if n.waiting {
		n.waiting = false
		p := n.parent
		p.nWait--
		if len(p.waiters) > 8 && len(p.waiters) > 2*int(p.nWait) {
			dropLeftWaiters(p)
		}
	}
	if p := n.parent; p != nil && p.state == stAbsent {
		// An awaited parent stays indexed for wait after its last child
		// left, so that, arriving late, it still learns the rollouts below
		// it and is counted late.
		e.fifo.push(p, e.now)
	}
	e.fifo.push(n, e.now)
}

func (e *engine) dropJobWait(n *node) {
	js := e.jobWait[n.key.trace]
	out := js[:0]
	for _, j := range js {
		if j != n {
			out = append(out, j)
		}
	}
	if len(out) == 0 {
		delete(e.jobWait, n.key.trace)
	} else {
		e.jobWait[n.key.trace] = out
	}
}

// traceLeft counts a non-job span of trace out of the pending store; the job
// spans of a trace leave once nothing else of it is pending.
func (e *engine) traceLeft(trace pcommon.TraceID) {
	c := e.tracePending[trace] - 1
	if c > 0 {
		e.tracePending[trace] = c
		return
	}
	delete(e.tracePending, trace)
	js := e.jobWait[trace]
	if len(js) == 0 {
		return
	}
	ready := make([]*node, 0, len(js))
	for _, j := range js {
		if j.held != nil && j.settled {
			ready = append(ready, j)
		}
	}
	for _, j := range ready {
		if j.held != nil {
			e.emit(j)
		}
	}
}

// leave rewrites a span that leaves (design §4.2–§4.4): what needs the shared
// tables is decided now, the span's own rewrite is queued in the round.
func (e *engine) leave(sp ptrace.Span, info *resInfo, n *node, hs *heldSpan) {
	ed := spanEdit{sp: sp}
	if n.rollout != "" {
		e.planRollout(&ed, sp, info, n.rollout, n.key.trace, hs)
		if ed.root = isRolloutRoot(n, sp); ed.root {
			ed.extra++
		}
	} else if n.job && e.split {
		e.planJobLinks(&ed, n)
	}
	e.repairOnEmit(sp, info, n, hs, &ed)
	if !ed.empty() {
		e.r.edits = append(e.r.edits, ed)
	}
}

// isRolloutRoot reports whether a span leaving in its rollout is the
// rollout's root: the top span decided upward (finalizeRoot), or, where
// nothing above it joined the rollout, Gym's own gym.rollout span without a
// parent (Gym with its server span group off). A parentless SERVER span
// with direct evidence (a model or resources call made without traceparent)
// is not: it hangs below gym.rollout, synthesized parent or not.
func isRolloutRoot(n *node, sp ptrace.Span) bool {
	return n.root || (n.how == howDirect && n.parent == nil && sp.Name() == gymconv.RolloutSpanName)
}
