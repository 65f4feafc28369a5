// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import (
	"sync"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/repair"
	"github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/rollout"
	"github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/split"
)

// round collects what one ConsumeTraces call or one timer tick emits, and
// the counts the processor turns into metrics once the lock is released.
type round struct {
	out     ptrace.Traces
	groups  map[*origin]ptrace.SpanSlice
	emitted int64 // spans handed on by deliver
	// What the core and the parts counted in the round.
	core    rollout.Counts
	repair  repair.Counts
	split   split.Counts
	edits   []spanEdit   // rewrites of leaving spans, applied without the lock
	clients []clientEdit // synthesized CLIENT spans, written without the lock
	leaving []outSpan    // spans that leave out of the held slots, in order
}

// outSpan is a span that leaves from outside the incoming batch (a held
// span, a synthesized one) with the resource and scope it goes out in.
type outSpan struct {
	org    *origin
	span   ptrace.Span
	copies int32 // unchanged copies of a resent span, written after it (resent.go)
}

// leave queues sp to go out in org's resource and scope. The round's output
// is assembled after the lock is released (see assemble): the span is the
// round's alone once it left.
func (r *round) leave(org *origin, sp ptrace.Span, copies int32) {
	r.leaving = append(r.leaving, outSpan{org: org, span: sp, copies: copies})
}

// assemble appends the spans that left to the output, grouped by origin in
// the order the origins first left. Called without the lock, after the
// edits are applied.
func (r *round) assemble() {
	for i, l := range r.leaving {
		g := r.group(l.org)
		out := g.AppendEmpty()
		l.span.MoveTo(out)
		for range l.copies { // a resent span's copies leave as it does (resent.go)
			out.CopyTo(g.AppendEmpty())
		}
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
	if cap(r.edits) > maxPooledRound || cap(r.leaving) > maxPooledRound || cap(r.clients) > maxPooledRound || len(r.groups) > maxPooledRound {
		return
	}
	// Past their lengths the lists hold only zeros: applyEdits and assemble
	// zero each entry they use, so only a round replayed without being
	// delivered has entries left, and those are within the lengths.
	// (Clearing whole capacities cleared the largest lists the pooled round
	// ever had, again for every batch.)
	clear(r.edits)
	clear(r.clients)
	clear(r.leaving)
	clear(r.groups)
	*r = round{edits: r.edits[:0], clients: r.clients[:0], leaving: r.leaving[:0], groups: r.groups}
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
