// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import "go.opentelemetry.io/collector/pdata/ptrace"

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

// arrive takes one incoming span through its stages, in order: what it
// shows of its run (observeRun); out at once when its run passes through
// (passThrough); into the span index (admit), unless it leaves at once or
// is held as a resent copy; the service-map facts it teaches (noteArrival);
// decided or held (place). It returns true when the span was moved out of
// the batch into the pending store.
func (e *engine) arrive(sp ptrace.Span, info *resInfo, sf *spanFacts) bool {
	e.r.received++
	e.observeRun(info.run, sf)
	if info.run.passThrough {
		e.passThrough(sp, info, sf)
		return false
	}
	n, held := e.admit(sp, info, sf)
	if n == nil {
		return held
	}
	e.cur, e.curSpan, e.curInfo, e.curHeld = n, sp, info, false
	e.noteArrival(sp, info, n, sf)
	e.place(n, sf)
	e.cur = nil
	return e.curHeld
}
