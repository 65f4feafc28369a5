// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import (
	"container/heap"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/split"
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

// Phases of a held span, in the order a flush takes them (design §4.5: upward
// candidates settle, then roots are cut, then undecided spans leave, then
// job spans, then roots waiting for their previous attempt). A phase's value
// is recorded in checkpoints: new phases go last.
const (
	phaseSettle  = iota // undecided, settle not yet passed
	phaseCut            // decided upward, waiting to know whether its parent is in its rollout
	phaseRelease        // undecided after settle: waits for its parent, or a root for wait
	phaseSynth          // parentless SERVER span waiting for its rollout's gym.rollout
	phasePeer           // decided CLIENT span waiting to learn the service it called
	phaseJob            // job span waiting for its trace's pending spans
	phaseAttempt        // re-dispatched attempt's root waiting for its previous attempt's root
)

// deadlines are the rules of how long the processor keeps what it holds,
// one function a rule (design §4.2–§4.5). The engine asks them; it never adds
// a duration to a time itself. Times are unix nanoseconds.
//
// How long a span waits depends only on what it still needs, for every
// sender alike: settle (the spans below it, sent by other processes' batch
// span processors), wait (what can still come to a root: its descendants
// end before it), rollout_wait (a parent that is still open: the agent's
// POST /run while an hour-long rollout runs).
type deadlines struct {
	settle, wait, rolloutWait int64
}

func newDeadlines(cfg *Config) deadlines {
	return deadlines{settle: int64(cfg.Settle), wait: int64(cfg.Wait), rolloutWait: int64(cfg.RolloutWait)}
}

// upwardDecision is when an undecided span's upward decision is taken
// (phaseSettle): settle after it arrived, so that the spans below it, sent
// by other processes' batch span processors, have arrived too.
func (d deadlines) upwardDecision(arrival int64) int64 { return arrival + d.settle }

// undecidedRelease is when an undecided span whose upward decision found
// nothing below it leaves in no rollout (phaseRelease), unless a rollout
// comes down to it first (§4.2):
//   - a root waits wait: its descendants end before it, so little can
//     still come below it;
//   - a span whose parent left in no rollout leaves now: nothing can come
//     down to it any more;
//   - any other span waits for its parent, at most rollout_wait: a parent
//     ends after its child, so a missing parent is still open (the agent's
//     or environment server's POST /run while its rollout runs), and an
//     undecided one decides within its own wait; the child then leaves with
//     the parent's decision (notifyWaiters).
func (d deadlines) undecidedRelease(hs *heldSpan, now int64) int64 {
	switch p := hs.n.parent; {
	case p == nil:
		return hs.arrival + d.wait
	case p.how == howNone:
		return now
	default:
		return hs.arrival + d.rolloutWait
	}
}

// releaseReason is the reason an undecided span leaves in no rollout when
// its phaseRelease deadline passes: its parent never arrived
// (parent_missing), its parent left in no rollout (parent_none), else its
// wait ran out; at shutdown, always shutdown.
func releaseReason(n *node, relReason int) int {
	switch p := n.parent; {
	case relReason != reasonWait || p == nil:
		return relReason
	case p.state == stAbsent:
		return reasonParentMissing
	case p.how == howNone:
		return reasonParentNone
	default:
		return reasonWait
	}
}

// rootCut is when a rollout root decided upward whose parent has not
// arrived is cut from it (phaseCut): wait after the root arrived. A parent
// in the root's own rollout would have ended after the root and arrived by
// then.
func (d deadlines) rootCut(arrival int64) int64 { return arrival + d.wait }

// previousAttemptRoot is when a re-dispatched attempt's root, decided now
// before its previous attempt's root was seen, looks for it again and
// leaves, linked or not (phaseAttempt, §4.3): wait later. After an outage a
// sender's retries can bring the previous attempt's spans after its
// successor's.
func (d deadlines) previousAttemptRoot(now int64) int64 { return now + d.wait }

// jobSettle is when a job span stops waiting for its trace's spans to
// arrive (phaseJob, first part): settle after it arrived.
func (d deadlines) jobSettle(arrival int64) int64 { return arrival + d.settle }

// jobLinks is the latest a settled job span waits for the rest of its trace
// to leave, so that it links every root cut from it: wait after it arrived.
func (d deadlines) jobLinks(arrival int64) int64 { return arrival + d.wait }

// rolloutParent is the latest a parentless SERVER span with direct evidence
// waits for its rollout's gym.rollout to leave, to hang below it (phaseSynth,
// §4.4): rollout_wait, the length of a rollout.
func (d deadlines) rolloutParent(arrival int64) int64 { return arrival + d.rolloutWait }

// peerWait is the latest a decided CLIENT span whose host:port is not yet
// known waits for a SERVER span that tells its service (phasePeer, §4.4):
// settle, the time the SERVER span takes to arrive from its own process.
func (d deadlines) peerWait(arrival int64) int64 { return arrival + d.settle }

// indexKeptAfter is the oldest time at which an index entry of a span that
// left (or of a parent that never arrived) is still kept: wait before now.
// A late child arrives within its parent's process's batch delay, far less.
func (d deadlines) indexKeptAfter(now int64) int64 { return now - d.wait }

// noEvidenceCheck is when the no-evidence diagnostic looks at a run: wait
// after its first span (runs.go, checkRuns).
func (d deadlines) noEvidenceCheck(run *runState) int64 { return run.firstSeen + d.wait }

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
	prev     split.RootRef
	hasPrev  bool
	synth    *rolloutSpanRef // gym.rollout to synthesize a CLIENT parent below
	copies   int32           // unchanged copies that arrived while it was held (resent.go)
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
	hs.origin.info.proc.held++
	hs.origin.info.run.held++
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

// expire runs the action due at a held span's deadline.
func (e *engine) expire(hs *heldSpan, relReason int) {
	n := hs.n
	switch hs.phase {
	case phaseSettle:
		n.settled = true
		if e.settleDecision(n) {
			return
		}
		e.setDeadline(hs, phaseRelease, e.dl.undecidedRelease(hs, e.now))
	case phaseCut:
		e.resolveRoot(n, true)
	case phaseRelease:
		e.releaseNone(n, releaseReason(n, relReason))
	case phaseSynth, phasePeer, phaseAttempt:
		e.giveUp(hs)
	case phaseJob:
		if !n.settled {
			n.settled = true
			if e.tracePending[n.key.trace] > 0 && relReason != reasonShutdown {
				e.setDeadline(hs, phaseJob, e.dl.jobLinks(hs.arrival))
				return
			}
		}
		e.emit(n)
	}
}

// giveUp makes a held span whose rollout is known leave as it stands when
// what else it waited for did not come: a parentless SERVER span whose
// gym.rollout never left (no synthesized parent), a CLIENT span whose peer
// no SERVER span taught (peer.service is the host:port it called), an
// attempt's root whose previous attempt's root did not come (no link).
func (e *engine) giveUp(hs *heldSpan) {
	switch hs.phase {
	case phaseSynth:
		e.r.synthMissed++
	case phaseAttempt:
		e.linkPreviousAttempt(hs, true) // leaving without it is counted
	}
	e.emit(hs.n)
	if hs.phase == phasePeer {
		e.dropPeerWaiter(hs.span, true)
	}
}

// evict makes the held span hs leave now, taking its pending decisions with
// what is known (design §4.5: at a bound, as they stand).
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
			e.resolveRoot(n, true)
		case phaseRelease:
			e.releaseNone(n, reason)
		case phaseSynth, phasePeer, phaseAttempt:
			e.giveUp(hs)
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
