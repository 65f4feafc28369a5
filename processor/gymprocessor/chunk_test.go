// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor

import (
	"encoding/binary"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"pgregory.net/rapid"
)

// TestSplitTraces: every span leaves exactly once, under its own resource and
// scope, in batches of at most max spans, in the original order.
func TestSplitTraces(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		td := ptrace.NewTraces()
		var want []uint64
		id := uint64(0)
		for r := range rapid.IntRange(0, 5).Draw(t, "resources") {
			rs := td.ResourceSpans().AppendEmpty()
			rs.Resource().Attributes().PutInt("r", int64(r))
			for s := range rapid.IntRange(0, 4).Draw(t, "scopes") {
				ss := rs.ScopeSpans().AppendEmpty()
				ss.Scope().SetName("scope")
				ss.Scope().SetVersion(string(rune('a' + s)))
				for range rapid.IntRange(0, 30).Draw(t, "spans") {
					id++
					sp := ss.Spans().AppendEmpty()
					var sid pcommon.SpanID
					binary.BigEndian.PutUint64(sid[:], id)
					sp.SetSpanID(sid)
					sp.Attributes().PutInt("r", int64(r))
					sp.Attributes().PutStr("s", ss.Scope().Version())
					want = append(want, id)
				}
			}
		}
		max := rapid.IntRange(1, 40).Draw(t, "max")
		total := td.SpanCount()
		batches := splitTraces(td, max)
		var got []uint64
		for _, b := range batches {
			if n := b.SpanCount(); n > max || n == 0 && total > max {
				t.Fatalf("batch of %d spans, max %d", n, max)
			}
			for _, rs := range b.ResourceSpans().All() {
				r, _ := rs.Resource().Attributes().Get("r")
				for _, ss := range rs.ScopeSpans().All() {
					for _, sp := range ss.Spans().All() {
						sr, _ := sp.Attributes().Get("r")
						sv, _ := sp.Attributes().Get("s")
						if sr.Int() != r.Int() || sv.Str() != ss.Scope().Version() {
							t.Fatalf("span moved away from its resource or scope")
						}
						sid := sp.SpanID()
						got = append(got, binary.BigEndian.Uint64(sid[:]))
					}
				}
			}
		}
		if len(got) != len(want) {
			t.Fatalf("%d spans out, %d in", len(got), len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("span %d: got %d, want %d", i, got[i], want[i])
			}
		}
	})
}

// TestLargeReleaseGoesOutInBoundedBatches: a timer round that releases more
// spans than maxEmitSpans hands them to the next consumer in batches of at
// most maxEmitSpans, and every span arrives.
func TestLargeReleaseGoesOutInBoundedBatches(t *testing.T) {
	h := newHarness(t, coreConfig())
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "nemo-gym/orchestrator")
	rs.Resource().Attributes().PutStr("nemo.run.id", "run-without-evidence")
	spans := rs.ScopeSpans().AppendEmpty().Spans()
	const total = 2*maxEmitSpans + 17
	for i := range total {
		sp := spans.AppendEmpty()
		sp.SetName("startup")
		var sid pcommon.SpanID
		binary.BigEndian.PutUint64(sid[:], uint64(i+1))
		sp.SetSpanID(sid)
		sp.SetTraceID(pcommon.TraceID{1})
	}
	h.consume(td)
	h.tickAt(h.p.cfg.Wait + time.Second)
	h.shutdown()
	got := 0
	for _, b := range h.sink.AllTraces() {
		if n := b.SpanCount(); n > maxEmitSpans {
			t.Fatalf("a batch of %d spans reached the next consumer (max %d)", n, maxEmitSpans)
		}
		got += b.SpanCount()
	}
	if got != total {
		t.Fatalf("%d spans out, %d in", got, total)
	}
	if len(h.sink.AllTraces()) < 2 {
		t.Fatalf("expected the release to be split, got %d batches", len(h.sink.AllTraces()))
	}
}
