// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import (
	"errors"
	"fmt"
	"math"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// The pending heap, slot by slot: each held span with its node, its
// origin and where it stands.

func (s *snapshotter) writeHeap() {
	w := &s.w
	w.u(uint64(len(s.e.heap)))
	for _, hs := range s.e.heap {
		w.u(uint64(s.nodes[hs.n]))
		w.raw(marshalSpan(hs.span))
		w.u(uint64(s.origins[hs.origin]))
		w.i(hs.arrival)
		w.i(hs.deadline)
		w.u(hs.seq)
		w.i(hs.bytes)
		w.u(uint64(hs.phase))
		w.flag(hs.cut)
		w.str(hs.cutType)
		w.trace(hs.prev.trace)
		w.spanID(hs.prev.span)
		w.flag(hs.hasPrev)
		ri, rok := s.refs[hs.synth]
		w.ref(ri, rok && hs.synth != nil)
		w.u(uint64(hs.copies))
	}
}

func (d *restorer) readHeap() error {
	r, e := d.r, d.e
	e.heap = make(pendingHeap, r.count())
	for i := range e.heap {
		hs := &heldSpan{n: d.nodes[r.index(len(d.nodes))], heapIdx: i}
		sp, err := unmarshalSpan(r.raw())
		if err != nil && r.err == nil {
			return fmt.Errorf("held span %d: %w", i, err)
		}
		hs.span = sp
		hs.origin = d.origins[r.index(len(d.origins))]
		hs.arrival, hs.deadline, hs.seq, hs.bytes = r.i(), r.i(), r.u(), r.i()
		hs.phase, hs.cut, hs.cutType = uint8(r.u()), r.flag(), r.str()
		hs.prev = rootRef{trace: r.trace(), span: r.spanID()}
		hs.hasPrev = r.flag()
		if ri := r.ref(len(d.refs)); ri >= 0 {
			hs.synth = d.refs[ri]
		}
		hs.copies = int32(min(r.u(), math.MaxInt32))
		hs.n.held = hs
		e.heap[i] = hs
		if r.err != nil {
			return r.err
		}
	}
	return nil
}

func marshalSpan(sp ptrace.Span) []byte {
	td := ptrace.NewTraces()
	sp.CopyTo(td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty())
	b, _ := spanMarshaler.MarshalTraces(td)
	return b
}

func unmarshalSpan(b []byte) (ptrace.Span, error) {
	td, err := spanUnmarshaler.UnmarshalTraces(b)
	if err != nil {
		return ptrace.Span{}, err
	}
	if td.SpanCount() != 1 {
		return ptrace.Span{}, errors.New("a held span is not one span")
	}
	sp := ptrace.NewSpan()
	td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).MoveTo(sp)
	return sp, nil
}
