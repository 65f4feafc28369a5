// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import (
	"cmp"
	"container/heap"
	"math"
	"slices"

	"github.com/otelcol-gym/otelcol-gym/internal/bounded"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// maxWalk bounds every walk up a parent chain (cycles, very deep chains).
const maxWalk = 4096

// engine holds every piece of the processor's state. It is not safe for
// concurrent use: the processor serializes calls under its mutex. Times are
// unix nanoseconds taken from the processor's clock.
type engine struct {
	cfg      *Config
	ev       *evidenceFinder
	sm       *serviceMap
	jobNames map[string]struct{}
	split    bool

	dl deadlines

	idx          spanIndex
	fifo         nodeQueue
	heap         pendingHeap
	pendingBytes int64
	seq          uint64
	indexCap     int
	tracePending map[pcommon.TraceID]int32
	jobWait      map[pcommon.TraceID][]*node
	leakPending  map[*node][]*node // absent parent → requests waiting for its verdict (leak.go)

	procs *bounded.Table[string, *procState]
	runs  *bounded.Table[string, *runState]

	jobs  jobTable
	roots rootTable
	tids  tidCache
	hexes map[pcommon.TraceID]string

	now int64
	r   *round

	spare []*node // unused fresh nodes from prepare (see newNode)

	// Buffers of flush, kept between ticks.
	due      []*heldSpan
	dueOrder []attemptOrder

	// The span being classified where it lies in the incoming batch.
	cur     *node
	curSpan ptrace.Span
	curInfo *resInfo
	curHeld bool
	curRS   ptrace.ResourceSpans
	curSS   ptrace.ScopeSpans
	curOrg  *origin
}

func newEngine(cfg *Config) (*engine, error) {
	ev, err := newEvidenceFinder(cfg)
	if err != nil {
		return nil, err
	}
	e := &engine{
		cfg:          cfg,
		ev:           ev,
		sm:           newServiceMap(cfg),
		jobNames:     make(map[string]struct{}, len(cfg.JobSpanNames)),
		split:        cfg.Split.Enabled,
		dl:           newDeadlines(cfg),
		idx:          newSpanIndex(),
		indexCap:     cfg.MaxPendingSpans,
		tracePending: make(map[pcommon.TraceID]int32),
		jobWait:      make(map[pcommon.TraceID][]*node),
		procs:        newProcTable(),
		runs:         newRunTable(cfg),
		jobs:         newJobTable(cfg.Split),
		roots:        newRootTable(cfg.Split),
		tids:         tidCache{m: make(map[tidKey]pcommon.TraceID), max: 1 << 16},
		hexes:        make(map[pcommon.TraceID]string),
	}
	for _, n := range cfg.JobSpanNames {
		e.jobNames[n] = struct{}{}
	}
	return e, nil
}

func (e *engine) begin(out ptrace.Traces, now int64) {
	e.now = now
	e.r = newRound(out)
}

func (e *engine) end() *round {
	r := e.r
	e.r = nil
	return r
}

// consume indexes every span of td, rewrites in place the spans whose
// rollout is known, moves the others into the pending store, and appends to
// td the held spans this batch decided. td is the round's output; f holds
// its facts, read by prepare.
func (e *engine) consume(td ptrace.Traces, f *batchFacts, now int64) *round {
	e.begin(td, now)
	rss := td.ResourceSpans()
	// Spans end, and are exported, children first: taking each batch from
	// its end meets parents before children, so most children are decided
	// downward where they lie instead of being held.
	for i := rss.Len() - 1; i >= 0; i-- {
		rs := rss.At(i)
		rf := &f.res[i]
		var info *resInfo
		sss := rs.ScopeSpans()
		for j := sss.Len() - 1; j >= 0; j-- {
			ss := sss.At(j)
			e.curRS, e.curSS, e.curOrg = rs, ss, nil
			spans := ss.Spans()
			if spans.Len() == 0 {
				continue
			}
			if info == nil {
				info = e.resourceInfo(rf)
			}
			facts := f.spans[f.scope[rf.scope+j]:][:spans.Len()]
			anyHeld := false
			for k := spans.Len() - 1; k >= 0; k-- {
				if e.arrive(spans.At(k), info, &facts[k]) {
					facts[k].held = true
					anyHeld = true
				}
				e.keepSpare(&facts[k])
				e.enforcePendingBounds()
			}
			if anyHeld {
				k := 0
				spans.RemoveIf(func(ptrace.Span) bool {
					h := facts[k].held
					k++
					return h
				})
			}
		}
	}
	// Drop references into td: it belongs to the next consumer now.
	e.curOrg, e.curRS, e.curSS, e.curSpan, e.curInfo = nil, ptrace.ResourceSpans{}, ptrace.ScopeSpans{}, ptrace.Span{}, nil
	rss.RemoveIf(func(rs ptrace.ResourceSpans) bool {
		rs.ScopeSpans().RemoveIf(func(ss ptrace.ScopeSpans) bool { return ss.Spans().Len() == 0 })
		return rs.ScopeSpans().Len() == 0
	})
	e.enforceIndexBounds()
	return e.end()
}

// flush takes every decision whose deadline is at or before limit and emits
// what they release. With shutdown, limit is +inf and releases count as
// shutdown.
func (e *engine) flush(now int64, shutdown bool) *round {
	e.begin(ptrace.NewTraces(), now)
	limit := now
	relReason := reasonWait
	if shutdown {
		limit = math.MaxInt64
		relReason = reasonShutdown
	}
	e.checkRuns(shutdown)
	for {
		batch := e.due[:0]
		minPhase := uint8(math.MaxUint8)
		for len(e.heap) > 0 && e.heap[0].deadline <= limit {
			hs := heap.Pop(&e.heap).(*heldSpan)
			batch = append(batch, hs)
			minPhase = min(minPhase, hs.phase)
		}
		if len(batch) == 0 {
			break
		}
		// Earlier attempts first, so a retry finds its previous attempt's root.
		keyed := e.dueOrder[:0]
		for _, hs := range batch {
			if hs.phase == minPhase {
				keyed = append(keyed, attemptOrder{attempt: attemptIndex(hs.n.candidate()), hs: hs})
			} else {
				heap.Push(&e.heap, hs)
			}
		}
		clear(batch)
		e.due = batch[:0]
		slices.SortFunc(keyed, func(a, b attemptOrder) int {
			if a.attempt != b.attempt {
				return cmp.Compare(a.attempt, b.attempt)
			}
			return cmp.Compare(a.hs.seq, b.hs.seq)
		})
		for _, k := range keyed {
			hs := k.hs
			if hs.n.held != hs || hs.heapIdx >= 0 {
				continue // left, or re-armed by an earlier decision of this pass
			}
			e.expire(hs, relReason)
		}
		clear(keyed)
		e.dueOrder = keyed[:0]
	}
	if cap(e.due) > maxKeptDue {
		e.due, e.dueOrder = nil, nil // after a huge flush (shutdown, a bound)
	}
	e.jobs.expire(now)
	e.enforceIndexBounds()
	return e.end()
}

// maxKeptDue bounds the flush buffers kept between ticks.
const maxKeptDue = 1 << 14

type attemptOrder struct {
	attempt int
	hs      *heldSpan
}

// candidate is the rollout a node has or would take upward.
func (n *node) candidate() string {
	if n.rollout != "" {
		return n.rollout
	}
	return n.below.id
}

// arrive classifies one incoming span. It returns true when the span was
// moved out of the batch into the pending store.
func (e *engine) arrive(sp ptrace.Span, info *resInfo, sf *spanFacts) bool {
	r := e.r
	r.received++
	ev := sf.ev
	if ev != "" {
		e.noteEvidence(info.run)
	} else if sf.observabilityOff && !info.run.evidence {
		e.noteObservabilityOff(info.run)
	}
	if info.run.passThrough {
		r.passed++
		ed := spanEdit{sp: sp}
		e.repairUnindexed(sp, info, sf, &ed)
		if !ed.empty() {
			e.r.edits = append(e.r.edits, ed)
		}
		return false
	}
	pid := sp.ParentSpanID()
	if sp.Kind() == ptrace.SpanKindServer && pid.IsEmpty() {
		r.problems[problemServerWithoutParent]++
	}
	orig := sf.orig
	sid := sp.SpanID()
	if sid.IsEmpty() {
		e.passUnindexed(sp, info, sf, nil)
		return false
	}
	key := spanKey{trace: orig, span: sid}
	n, taken := e.idx.get(sf.h, key)
	if n != nil && n.state != stAbsent {
		if e.holdResent(n, sp) {
			r.resent++
			return true // out of the batch: it leaves with the held copy (resent.go)
		}
		r.duplicates++
		e.passUnindexed(sp, info, sf, n)
		return false
	}
	if n == nil {
		n = sf.node // allocated by prepare, outside the lock
		sf.node = nil
		if n == nil {
			n = e.newNode()
		}
		n.key = key
		e.idx.put(sf.h, n, taken)
	} else if n.late {
		r.lateParents++
		n.late = false
	}
	n.state = stPending
	n.end = int64(sp.EndTimestamp())
	e.judgeWaitingRequests(n)
	if !pid.IsEmpty() && pid != sid {
		pk := spanKey{trace: orig, span: pid}
		p, taken := e.idx.get(sf.ph, pk)
		if p == nil {
			p = e.newNode()
			p.key = pk
			e.idx.put(sf.ph, p, taken)
			e.fifo.push(p, e.now)
		}
		n.parent = p
		if sf.localRequest {
			e.judgeRequestParent(n, int64(sp.StartTimestamp()))
		}
	}
	e.cur, e.curSpan, e.curInfo, e.curHeld = n, sp, info, false
	e.noteArrival(sp, info, n, sf)
	isJob := sf.job
	switch {
	case ev != "":
		e.decide(n, ev, howDirect)
	case isJob:
		n.job = true
		n.how = howNone
		if e.split {
			// A job span waits settle, then until nothing else of its trace
			// is pending (at most wait), so it links the roots cut from it.
			e.hold(n, phaseJob, e.dl.jobSettle(e.now))
			e.jobWait[orig] = append(e.jobWait[orig], n)
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
	e.cur = nil
	return e.curHeld
}

// newNode returns a fresh node: one prepare allocated for a span that did
// not need it (its node was already there), else a new one.
func (e *engine) newNode() *node {
	if k := len(e.spare); k > 0 {
		n := e.spare[k-1]
		e.spare = e.spare[:k-1]
		return n
	}
	return new(node)
}

// keepSpare keeps a node prepare allocated and the span did not use. It
// was never published, so it is as fresh as a new one.
func (e *engine) keepSpare(sf *spanFacts) {
	if sf.node != nil && len(e.spare) < maxSpareNodes {
		e.spare = append(e.spare, sf.node)
	}
	sf.node = nil
}

// maxSpareNodes bounds the unused nodes kept for placeholders.
const maxSpareNodes = 256

// passUnindexed emits a span that cannot be indexed (zero or duplicate span
// id) at once, with the rollout it shows directly, or that its first copy
// (first, when it is a duplicate) left with, or that its parent has.
func (e *engine) passUnindexed(sp ptrace.Span, info *resInfo, sf *spanFacts, first *node) {
	orig := sf.orig
	rollout, h := sf.ev, howDirect
	if rollout == "" && first != nil && first.state == stEmitted && first.rollout != "" && first.how >= howDirect && first.how <= howUpward {
		rollout, h = first.rollout, first.how
	}
	if rollout == "" {
		if pid := sp.ParentSpanID(); !pid.IsEmpty() {
			if p, _ := e.idx.get(sf.ph, spanKey{trace: orig, span: pid}); p != nil && p.rollout != "" {
				rollout, h = p.rollout, howDownward
			}
		}
	}
	ed := spanEdit{sp: sp}
	if rollout != "" {
		e.r.promoted[h-howDirect]++
		e.planRollout(&ed, sp, info, rollout, orig, nil)
	}
	e.repairUnindexed(sp, info, sf, &ed)
	if !ed.empty() {
		e.r.edits = append(e.r.edits, ed)
	}
}
