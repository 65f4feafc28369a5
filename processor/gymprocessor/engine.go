// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import (
	"cmp"
	"container/heap"
	"math"
	"slices"
	"strings"
	"sync"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// maxWalk bounds every walk up a parent chain (cycles, very deep chains).
const maxWalk = 4096

// Reasons a span leaves without a rollout (metric attribute "reason").
const (
	reasonWait       = iota // its wait ran out
	reasonConflict          // spans of several rollouts below it
	reasonBound             // max_pending_spans / max_pending_bytes
	reasonShutdown          // the processor shut down
	reasonNoEvidence        // its run showed no rollout evidence within wait
	numReasons
)

var reasonNames = [numReasons]string{"wait", "conflict", "bound", "shutdown", "no_evidence"}

// Setup problems of SPEC §4.5 (metric attribute "problem").
const (
	problemNoEvidence = iota
	problemServerWithoutParent
	problemOnlyOrchestrator
	numProblems
)

var problemNames = [numProblems]string{"no_rollout_evidence", "server_without_parent", "only_orchestrator"}

// round collects what one ConsumeTraces call or one timer tick emits, and
// the counts the processor turns into metrics once the lock is released.
type round struct {
	out         ptrace.Traces
	groups      map[*origin]ptrace.SpanSlice
	received    int64
	passed      int64
	duplicates  int64
	lateParents int64
	promoted    [3]int64 // direct, downward, upward
	released    [numReasons]int64
	cutJob      int64
	cutParent   int64
	synthesized int64
	synthMissed int64
	peerSet     [numPeerSources]int64
	problems    [numProblems]int64
	noEvRuns    []string
	edits       []spanEdit // rewrites of leaving spans, applied without the lock
	leaving     []outSpan  // spans that leave out of the pending store, in order
}

// outSpan is a span that leaves from outside the incoming batch (a held
// span, a synthesized one) with the resource and scope it goes out in.
type outSpan struct {
	org  *origin
	span ptrace.Span
}

// leave queues sp to go out in org's resource and scope. The round's output
// is assembled after the lock is released (see assemble): the span is the
// round's alone once it left.
func (r *round) leave(org *origin, sp ptrace.Span) {
	r.leaving = append(r.leaving, outSpan{org: org, span: sp})
}

// assemble appends the spans that left to the output, grouped by origin in
// the order the origins first left. Called without the lock, after the
// edits are applied.
func (r *round) assemble() {
	for i, l := range r.leaving {
		l.span.MoveTo(r.group(l.org).AppendEmpty())
		r.leaving[i] = outSpan{}
	}
	r.leaving = r.leaving[:0]
	clear(r.groups)
}

// roundPool recycles rounds with their lists and group map: one round is
// one batch or tick, and growing them afresh each time would allocate more
// than the rounds carry.
var roundPool = sync.Pool{New: func() any { return new(round) }}

// maxPooledRound keeps a rare huge round (a shutdown flush) from pinning
// its lists in the pool.
const maxPooledRound = 4096

func newRound(out ptrace.Traces) *round {
	r := roundPool.Get().(*round)
	r.out = out
	return r
}

// recycle returns r to the pool once delivered; r must not be used after.
func (r *round) recycle() {
	if cap(r.edits) > maxPooledRound || cap(r.leaving) > maxPooledRound || len(r.groups) > maxPooledRound {
		return
	}
	clear(r.edits[:cap(r.edits)])
	clear(r.leaving[:cap(r.leaving)])
	clear(r.groups)
	*r = round{edits: r.edits[:0], leaving: r.leaving[:0], groups: r.groups}
	roundPool.Put(r)
}

func (r *round) group(o *origin) ptrace.SpanSlice {
	if s, ok := r.groups[o]; ok {
		return s
	}
	if r.groups == nil {
		r.groups = make(map[*origin]ptrace.SpanSlice)
	}
	rs := r.out.ResourceSpans().AppendEmpty()
	o.rs.CopyTo(rs)
	s := rs.ScopeSpans().At(0).Spans()
	r.groups[o] = s
	return s
}

// engine holds every piece of the processor's state. It is not safe for
// concurrent use: the processor serializes calls under its mutex. Times are
// unix nanoseconds taken from the processor's clock.
type engine struct {
	cfg      *Config
	ev       *evidenceFinder
	sm       *serviceMap
	jobNames map[string]struct{}
	split    bool

	settle, wait, rolloutWait int64

	idx          spanIndex
	fifo         nodeQueue
	heap         pendingHeap
	pendingBytes int64
	seq          uint64
	indexCap     int
	tracePending map[pcommon.TraceID]int32
	jobWait      map[pcommon.TraceID][]*node

	procs    map[string]*procState
	runs     map[string]*runState
	runOrder []string

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
		settle:       int64(cfg.Settle),
		wait:         int64(cfg.Wait),
		rolloutWait:  int64(cfg.RolloutWait),
		idx:          newSpanIndex(),
		indexCap:     cfg.MaxPendingSpans,
		tracePending: make(map[pcommon.TraceID]int32),
		jobWait:      make(map[pcommon.TraceID][]*node),
		procs:        make(map[string]*procState),
		runs:         make(map[string]*runState),
		jobs: jobTable{
			m:        make(map[pcommon.TraceID]*jobEntry),
			maxJobs:  cfg.Split.MaxTrackedJobs,
			maxLinks: cfg.Split.MaxJobLinks,
			ttl:      int64(cfg.Split.JobTTL),
		},
		roots: rootTable{m: make(map[tidKey]rootRef), max: cfg.Split.MaxTrackedRoots},
		tids:  tidCache{m: make(map[tidKey]pcommon.TraceID), max: 1 << 16},
		hexes: make(map[pcommon.TraceID]string),
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

func (e *engine) resourceInfo(rf *resFacts) *resInfo {
	runID := rf.run
	run := e.runs[runID]
	if run == nil {
		maxRuns := max(1024, e.cfg.Split.MaxTrackedJobs)
		for len(e.runs) >= maxRuns && len(e.runOrder) > 0 {
			delete(e.runs, e.runOrder[0])
			e.runOrder = e.runOrder[1:]
		}
		runID = strings.Clone(runID) // kept: not a view into the batch
		run = &runState{id: runID, firstSeen: e.now}
		e.runs[runID] = run
		e.runOrder = append(e.runOrder, runID)
	}
	service := rf.service
	switch {
	case run.service == "" && !run.manyService:
		run.service = service
		run.serviceOrch = rf.serviceOrch
	case run.service != service:
		run.manyService = true
	}
	proc := e.procs[rf.proc]
	if proc == nil {
		if len(e.procs) >= 1<<16 {
			clear(e.procs)
		}
		proc = &procState{}
		e.procs[strings.Clone(rf.proc)] = proc
	}
	return &resInfo{run: run, proc: proc, service: e.sm.intern(service)}
}

// checkRuns turns a run that showed no evidence within wait into a
// pass-through run and releases what it holds (SPEC §4.2).
func (e *engine) checkRuns(shutdown bool) {
	for _, run := range e.runs {
		if run.checked || (!shutdown && e.now-run.firstSeen < e.wait) {
			continue
		}
		run.checked = true
		if !run.manyService && run.serviceOrch {
			e.r.problems[problemOnlyOrchestrator]++
		}
		if run.evidence {
			continue
		}
		run.passThrough = true
		e.r.problems[problemNoEvidence]++
		e.r.noEvRuns = append(e.r.noEvRuns, run.id)
		var release []*node
		for _, hs := range e.heap {
			if hs.origin.info.run == run && (hs.phase == phaseSettle || hs.phase == phaseRelease) {
				release = append(release, hs.n)
			}
		}
		for _, n := range release {
			if n.held != nil && n.how == howUndecided {
				e.releaseNone(n, reasonNoEvidence)
			}
		}
	}
}

func (e *engine) noteEvidence(info *resInfo) {
	if !info.run.evidence {
		info.run.evidence = true
		info.run.passThrough = false
	}
	if !info.proc.evidence {
		info.proc.evidence = true
		// Re-arm: its undecided spans now wait rollout_wait.
		changed := false
		for _, hs := range e.heap {
			if hs.origin.info.proc == info.proc && hs.phase == phaseRelease && hs.n.parent != nil {
				if d := hs.arrival + e.rolloutWait; d > hs.deadline {
					hs.deadline = d
					changed = true
				}
			}
		}
		if changed {
			heap.Init(&e.heap)
		}
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

// arrive classifies one incoming span. It returns true when the span was
// moved out of the batch into the pending store.
func (e *engine) arrive(sp ptrace.Span, info *resInfo, sf *spanFacts) bool {
	r := e.r
	r.received++
	ev := sf.ev
	if ev != "" {
		e.noteEvidence(info)
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
		e.passUnindexed(sp, info, sf)
		return false
	}
	key := spanKey{trace: orig, span: sid}
	n, taken := e.idx.get(sf.h, key)
	if n != nil && n.state != stAbsent {
		r.duplicates++
		e.passUnindexed(sp, info, sf)
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
			e.hold(n, phaseJob, e.now+e.settle)
			e.jobWait[orig] = append(e.jobWait[orig], n)
		} else {
			e.emit(n)
		}
		e.propagateUp(n)
		e.notifyWaiters(n)
	case n.parent != nil && n.parent.rollout != "":
		e.decide(n, n.parent.rollout, howDownward)
	default:
		e.hold(n, phaseSettle, e.now+e.settle)
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
// id) at once, with the rollout it shows directly or through its parent.
func (e *engine) passUnindexed(sp ptrace.Span, info *resInfo, sf *spanFacts) {
	orig := sf.orig
	rollout, h := sf.ev, howDirect
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

// decide gives n its rollout and emits it, or, for an upward root with the
// split on, holds it until its cut is known.
func (e *engine) decide(n *node, rollout string, h how) {
	n.rollout = rollout
	n.how = h
	e.r.promoted[h-howDirect]++
	switch {
	case h == howUpward && e.split:
		e.resolveCut(n, false)
	case e.wantsRolloutParent(n):
		e.holdForRolloutParent(n)
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

// resolveCut decides whether the upward span n is its rollout's root and
// must be cut from its parent (SPEC §4.3). Unless force, it waits while the
// parent may still turn out to be in n's rollout.
func (e *engine) resolveCut(n *node, force bool) {
	p := n.parent
	if p == nil {
		e.finalizeRoot(n, false, "")
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
	e.setDeadline(n.held, phaseCut, n.held.arrival+e.wait)
}

// finalizeRoot emits the rollout root n, cut from its parent or not, and
// records it for its job span and for a later attempt of its rollout.
func (e *engine) finalizeRoot(n *node, cut bool, linkType string) {
	hs := n.held
	if hs == nil {
		e.emit(n)
		return
	}
	hs.cut, hs.cutType = cut, linkType
	if cut {
		if linkType == linkTypeJob {
			e.r.cutJob++
		} else {
			e.r.cutParent++
		}
		if n.parent.state == stAbsent {
			n.parent.late = true
		}
	}
	if e.split {
		k := rolloutKey(hs.origin.info.run.id, n.key.trace)
		ref := rootRef{trace: e.tids.get(k, n.rollout), span: n.key.span}
		if cut {
			e.jobs.add(n.key.trace, ref, e.now)
		}
		if prev, ok := previousAttempt(n.rollout); ok {
			hs.prev, hs.hasPrev = e.roots.get(k, prev)
		}
		e.roots.put(k, n.rollout, ref)
	}
	e.emit(n)
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
	for p, depth := n.parent, 0; p != nil && depth < maxWalk; p, depth = p.parent, depth+1 {
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
// child takes n's rollout downward, an upward child learns whether it is cut.
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
			e.resolveCut(w, false)
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

// enforceIndexBounds drops index entries of spans that left (and parents
// that never arrived) once they are older than wait, or while the index holds
// more than max_pending_spans such entries.
func (e *engine) enforceIndexBounds() {
	ttlStart := e.now - e.wait
	for budget := e.fifo.len(); budget > 0 && e.fifo.len() > 0; budget-- {
		f := e.fifo.peek()
		over := e.idx.len()-len(e.heap) > e.indexCap
		if f.at > ttlStart && !over {
			return
		}
		e.fifo.pop()
		n := f.n
		if f.seq != n.fifoSeq || n.state == stPending || n.removed {
			continue
		}
		if n.nWait > 0 {
			e.fifo.push(n, e.now)
			continue
		}
		// A node not removed is the one its key maps to: a key gets a new
		// node only after its old one was removed.
		n.removed = true
		e.idx.del(n)
	}
}

// emit moves n's span to the round's output, rewritten.
func (e *engine) emit(n *node) {
	if hs := n.held; hs != nil {
		if hs.heapIdx >= 0 {
			heap.Remove(&e.heap, hs.heapIdx)
		}
		e.pendingBytes -= hs.bytes
		n.held = nil
		e.r.leave(hs.origin, hs.span)
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

// leave rewrites a span that leaves (SPEC §4.2–§4.4): what needs the shared
// tables is decided now, the span's own rewrite is queued in the round.
func (e *engine) leave(sp ptrace.Span, info *resInfo, n *node, hs *heldSpan) {
	ed := spanEdit{sp: sp}
	if n.rollout != "" {
		e.planRollout(&ed, sp, info, n.rollout, n.key.trace, hs)
	} else if n.job && e.split {
		e.linkJob(sp, n)
	}
	e.repairOnEmit(sp, info, n, hs, &ed)
	if !ed.empty() {
		e.r.edits = append(e.r.edits, ed)
	}
}

// linkJob gives a job span the count of, and links to, the rollout roots
// cut from its trace (SPEC §4.3).
func (e *engine) linkJob(sp ptrace.Span, n *node) {
	je := e.jobs.m[n.key.trace]
	if je == nil || je.count == 0 {
		return
	}
	sp.Attributes().PutInt(attrSplitRollouts, int64(je.count))
	for _, ref := range je.roots {
		l := sp.Links().AppendEmpty()
		l.SetTraceID(ref.trace)
		l.SetSpanID(ref.span)
		l.Attributes().PutStr(attrLinkType, linkTypeRollout)
	}
}

// hexOf returns traceHex(id), memoized: every span of a job trace shares one
// original trace id. The memo is cleared whole when it grows past its bound.
func (e *engine) hexOf(id pcommon.TraceID) string {
	if h, ok := e.hexes[id]; ok {
		return h
	}
	if len(e.hexes) >= 1<<14 {
		clear(e.hexes)
	}
	h := traceHex(id)
	e.hexes[id] = h
	return h
}

func traceHex(id pcommon.TraceID) string {
	const digits = "0123456789abcdef"
	var b [32]byte
	for i, c := range id {
		b[2*i] = digits[c>>4]
		b[2*i+1] = digits[c&0xf]
	}
	return string(b[:])
}
