// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import (
	"container/heap"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// origin is the resource and scope a held span came with. It is copied once
// per incoming ScopeSpans that has a span to hold, shared by those spans, and
// is the key by which released spans are regrouped.
type origin struct {
	rs   ptrace.ResourceSpans // resource + one ScopeSpans carrying the scope, no spans
	info *resInfo
}

func newOrigin(rs ptrace.ResourceSpans, ss ptrace.ScopeSpans, info *resInfo) *origin {
	o := &origin{rs: ptrace.NewResourceSpans(), info: info}
	rs.Resource().CopyTo(o.rs.Resource())
	o.rs.SetSchemaUrl(rs.SchemaUrl())
	dst := o.rs.ScopeSpans().AppendEmpty()
	ss.Scope().CopyTo(dst.Scope())
	dst.SetSchemaUrl(ss.SchemaUrl())
	return o
}

// Phases of a held span, in the order a flush takes them (SPEC §4.5: upward
// candidates settle, then roots are cut, then undecided spans leave, then
// job spans).
const (
	phaseSettle  = iota // undecided, settle not yet passed
	phaseCut            // decided upward, waiting to know whether its parent is in its rollout
	phaseRelease        // undecided after settle: waits for wait / rollout_wait
	phaseSynth          // parentless SERVER span waiting for its rollout's gym.rollout (§4.4)
	phaseJob            // job span waiting for its trace's pending spans
)

// heldSpan is a span the processor holds. It owns the span's data.
type heldSpan struct {
	span     ptrace.Span
	origin   *origin
	n        *node
	arrival  int64
	deadline int64
	seq      uint64
	bytes    int64
	heapIdx  int // -1 when not in the heap
	phase    uint8
	cut      bool
	cutType  string
	prev     rootRef
	hasPrev  bool
	synth    *rolloutSpanRef // §4.4: gym.rollout to synthesize a CLIENT parent below
}

// pendingHeap orders held spans by deadline, then arrival sequence.
type pendingHeap []*heldSpan

func (h pendingHeap) Len() int { return len(h) }
func (h pendingHeap) Less(i, j int) bool {
	if h[i].deadline != h[j].deadline {
		return h[i].deadline < h[j].deadline
	}
	return h[i].seq < h[j].seq
}
func (h pendingHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIdx = i
	h[j].heapIdx = j
}
func (h *pendingHeap) Push(x any) {
	hs := x.(*heldSpan)
	hs.heapIdx = len(*h)
	*h = append(*h, hs)
}
func (h *pendingHeap) Pop() any {
	old := *h
	n := len(old)
	hs := old[n-1]
	old[n-1] = nil
	hs.heapIdx = -1
	*h = old[:n-1]
	return hs
}

// hold moves the current span into the pending store.
func (e *engine) hold(n *node, phase uint8, deadline int64) {
	hs := &heldSpan{n: n, arrival: e.now, deadline: deadline, phase: phase, seq: e.seq, heapIdx: -1}
	e.seq++
	hs.span = ptrace.NewSpan()
	e.curSpan.MoveTo(hs.span)
	if e.curOrg == nil {
		e.curOrg = newOrigin(e.curRS, e.curSS, e.curInfo)
	}
	hs.origin = e.curOrg
	e.curHeld = true
	hs.bytes = estimateSpanBytes(hs.span)
	n.held = hs
	n.state = stPending
	heap.Push(&e.heap, hs)
	e.pendingBytes += hs.bytes
	if !n.job {
		e.tracePending[n.key.trace]++
	}
}

func (e *engine) setDeadline(hs *heldSpan, phase uint8, deadline int64) {
	hs.phase = phase
	hs.deadline = deadline
	if hs.heapIdx >= 0 {
		heap.Fix(&e.heap, hs.heapIdx)
	} else {
		heap.Push(&e.heap, hs)
	}
}

// waitFor is how long an undecided span may wait: rollout_wait once its
// process has shown evidence, else wait. A root waits wait in any case: its
// descendants end before it, so nothing below it is still to come (startup
// and health-check spans of a model server do not wait two hours).
func (e *engine) waitFor(n *node, info *resInfo) int64 {
	if info.proc.evidence && n.parent != nil {
		return e.rolloutWait
	}
	return e.wait
}

// expire runs the action due at a held span's deadline.
func (e *engine) expire(hs *heldSpan, relReason int) {
	n := hs.n
	switch hs.phase {
	case phaseSettle:
		n.settled = true
		if e.settleDecision(n) {
			return
		}
		e.setDeadline(hs, phaseRelease, hs.arrival+e.waitFor(n, hs.origin.info))
	case phaseCut:
		e.resolveCut(n, true)
	case phaseRelease:
		e.releaseNone(n, relReason)
	case phaseSynth:
		// R's gym.rollout never came: the SERVER span leaves as it stands.
		e.r.synthMissed++
		e.emit(n)
	case phaseJob:
		if !n.settled {
			n.settled = true
			if e.tracePending[n.key.trace] > 0 && relReason != reasonShutdown {
				e.setDeadline(hs, phaseJob, hs.arrival+e.wait)
				return
			}
		}
		e.emit(n)
	}
}

// evict makes the held span hs leave now, taking its pending decisions with
// what is known (SPEC §4.5: at a bound, as they stand).
func (e *engine) evict(hs *heldSpan, reason int) {
	n := hs.n
	for i := 0; i < 4 && n.held == hs; i++ {
		switch hs.phase {
		case phaseSettle:
			n.settled = true
			if !e.settleDecision(n) {
				e.releaseNone(n, reason)
			}
		case phaseCut:
			e.resolveCut(n, true)
		case phaseRelease:
			e.releaseNone(n, reason)
		case phaseSynth:
			e.r.synthMissed++
			e.emit(n)
		case phaseJob:
			e.emit(n)
		}
	}
	if n.held == hs {
		e.releaseNone(n, reason)
	}
}

func (e *engine) enforcePendingBounds() {
	for len(e.heap) > 0 && (len(e.heap) > e.cfg.MaxPendingSpans || e.pendingBytes > e.cfg.MaxPendingBytes) {
		e.evict(e.heap[0], reasonBound)
	}
}
