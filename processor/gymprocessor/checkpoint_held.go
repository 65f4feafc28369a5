// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import (
	"errors"
	"fmt"
	"math"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/split"
)

// The pending heap, slot by slot: each held span with its node, its
// origin and where it stands.

func (s *snapshotter) writeHeap() {
	w := s.w
	w.U(uint64(len(s.e.heap)))
	for _, hs := range s.e.heap {
		w.U(uint64(s.nodes[hs.n]))
		w.Raw(marshalSpan(hs.span))
		w.U(uint64(s.origins[hs.origin]))
		w.I(hs.arrival)
		w.I(hs.deadline)
		w.U(hs.seq)
		w.I(hs.bytes)
		w.U(uint64(hs.phase))
		w.Flag(hs.cut)
		w.Str(hs.cutType)
		w.Trace(hs.prev.Trace)
		w.Span(hs.prev.Span)
		w.Flag(hs.hasPrev)
		ri, rok := s.refs[hs.synth]
		w.Ref(ri, rok && hs.synth != nil)
		w.U(uint64(hs.copies))
	}
}

func (d *restorer) readHeap() error {
	r, e := d.r, d.e
	e.heap = make(pendingHeap, r.Count())
	for i := range e.heap {
		hs := &heldSpan{n: d.nodes[r.Index(len(d.nodes))], heapIdx: i}
		sp, err := unmarshalSpan(r.Raw())
		if err != nil && r.Err() == nil {
			return fmt.Errorf("held span %d: %w", i, err)
		}
		hs.span = sp
		hs.origin = d.origins[r.Index(len(d.origins))]
		hs.arrival, hs.deadline, hs.seq, hs.bytes = r.I(), r.I(), r.U(), r.I()
		hs.phase, hs.cut, hs.cutType = uint8(r.U()), r.Flag(), r.Str()
		hs.prev = split.RootRef{Trace: r.Trace(), Span: r.Span()}
		hs.hasPrev = r.Flag()
		if ri := r.Ref(len(d.refs)); ri >= 0 {
			hs.synth = d.refs[ri]
		}
		hs.copies = int32(min(r.U(), math.MaxInt32))
		hs.n.held = hs
		e.heap[i] = hs
		if r.Err() != nil {
			return r.Err()
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
