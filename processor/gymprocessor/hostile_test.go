// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"
)

// Hostile shapes (issue #8), each fed through a processor made by the
// factory with its default config and then shut down (which emits every
// held span). The random versions of cycles, self-parents, zero and
// duplicate ids are in property_test.go (TestPropertyChaosNeverHangsNorLoses);
// these are the extreme sizes and the named shapes, deterministic.

const hostileRun = "hostile-run"

// hostileSpans returns a one-resource, one-scope batch of an agent process.
func hostileSpans(td ptrace.Traces) ptrace.SpanSlice {
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "nemo-gym/simple_agent")
	rs.Resource().Attributes().PutStr("nemo.run.id", hostileRun)
	rs.Resource().Attributes().PutInt("process.pid", 4242)
	return rs.ScopeSpans().AppendEmpty().Spans()
}

func hostileTraceID(n uint64) pcommon.TraceID {
	var id pcommon.TraceID
	id[0] = 0xfe
	binary.BigEndian.PutUint64(id[8:], n)
	return id
}

func hostileSpanID(n uint64) pcommon.SpanID {
	var id pcommon.SpanID
	binary.BigEndian.PutUint64(id[:], n+1) // never zero
	return id
}

func hostileAddSpan(spans ptrace.SpanSlice, tid pcommon.TraceID, sid, parent pcommon.SpanID, name string) ptrace.Span {
	s := spans.AppendEmpty()
	s.SetTraceID(tid)
	s.SetSpanID(sid)
	s.SetParentSpanID(parent)
	s.SetName(name)
	s.SetStartTimestamp(1_700_000_000_000_000_000)
	s.SetEndTimestamp(1_700_000_001_000_000_000)
	return s
}

// chainTraces is one trace whose spans form a parent chain of depth spans
// (span i is the parent of span i+1), with the rollout id on the top span
// (evidenceTop) or on the bottom one.
func chainTraces(depth int, evidenceTop bool) ptrace.Traces {
	td := ptrace.NewTraces()
	spans := hostileSpans(td)
	tid := hostileTraceID(1)
	for i := 0; i < depth; i++ {
		var parent pcommon.SpanID
		if i > 0 {
			parent = hostileSpanID(uint64(i - 1))
		}
		s := hostileAddSpan(spans, tid, hostileSpanID(uint64(i)), parent, "step")
		if (evidenceTop && i == 0) || (!evidenceTop && i == depth-1) {
			s.Attributes().PutStr("nemo.gym.rollout.id", "chain-1")
		}
	}
	return td
}

// wideTraces is one trace of n spans: a gym.rollout root with the rollout
// id and n-1 children without evidence.
func wideTraces(n int) ptrace.Traces {
	td := ptrace.NewTraces()
	spans := hostileSpans(td)
	tid := hostileTraceID(2)
	root := hostileAddSpan(spans, tid, hostileSpanID(0), pcommon.SpanID{}, "gym.rollout")
	root.Attributes().PutStr("nemo.gym.rollout.id", "wide-1")
	for i := 1; i < n; i++ {
		hostileAddSpan(spans, tid, hostileSpanID(uint64(i)), hostileSpanID(0), "child")
	}
	return td
}

// cycleTraces holds a two-span parent cycle with evidence on one span, a
// two-span cycle without evidence, a self-parent and a three-cycle hanging
// under a rollout root.
func cycleTraces() ptrace.Traces {
	td := ptrace.NewTraces()
	spans := hostileSpans(td)
	tid := hostileTraceID(3)
	a := hostileAddSpan(spans, tid, hostileSpanID(10), hostileSpanID(11), "a")
	a.Attributes().PutStr("nemo.gym.rollout.id", "cycle-1")
	hostileAddSpan(spans, tid, hostileSpanID(11), hostileSpanID(10), "b")
	hostileAddSpan(spans, tid, hostileSpanID(20), hostileSpanID(21), "c")
	hostileAddSpan(spans, tid, hostileSpanID(21), hostileSpanID(20), "d")
	hostileAddSpan(spans, tid, hostileSpanID(30), hostileSpanID(30), "self")
	r := hostileAddSpan(spans, tid, hostileSpanID(40), pcommon.SpanID{}, "gym.rollout")
	r.Attributes().PutStr("nemo.gym.rollout.id", "cycle-2")
	hostileAddSpan(spans, tid, hostileSpanID(41), hostileSpanID(43), "x")
	hostileAddSpan(spans, tid, hostileSpanID(42), hostileSpanID(41), "y")
	hostileAddSpan(spans, tid, hostileSpanID(43), hostileSpanID(42), "z")
	return td
}

// zeroIDTraces has spans with a zero trace id, a zero span id, both, and a
// zero-id span as the parent others name (a zero parent id means "root").
func zeroIDTraces() ptrace.Traces {
	td := ptrace.NewTraces()
	spans := hostileSpans(td)
	z := hostileAddSpan(spans, pcommon.TraceID{}, hostileSpanID(1), pcommon.SpanID{}, "zero-trace")
	z.Attributes().PutStr("nemo.gym.rollout.id", "zero-1")
	hostileAddSpan(spans, pcommon.TraceID{}, hostileSpanID(2), hostileSpanID(1), "zero-trace-child")
	hostileAddSpan(spans, hostileTraceID(4), pcommon.SpanID{}, pcommon.SpanID{}, "zero-span")
	e := hostileAddSpan(spans, hostileTraceID(4), pcommon.SpanID{}, hostileSpanID(1), "zero-span-evidence")
	e.Attributes().PutStr("url.path", "/ng-rollout/zero-2/v1/responses")
	hostileAddSpan(spans, pcommon.TraceID{}, pcommon.SpanID{}, pcommon.SpanID{}, "zero-both")
	hostileAddSpan(spans, hostileTraceID(4), hostileSpanID(3), pcommon.SpanID{}, "zero-parent")
	return td
}

// duplicateIDTraces sends the same span id several times, with different
// rollouts, in one trace and across traces, as parents too.
func duplicateIDTraces() ptrace.Traces {
	td := ptrace.NewTraces()
	spans := hostileSpans(td)
	for i, r := range []string{"dup-1", "dup-2", "", "dup-1"} {
		s := hostileAddSpan(spans, hostileTraceID(5), hostileSpanID(1), pcommon.SpanID{}, "dup")
		if r != "" {
			s.Attributes().PutStr("nemo.gym.rollout.id", r)
		}
		hostileAddSpan(spans, hostileTraceID(5), hostileSpanID(uint64(100+i)), hostileSpanID(1), "dup-child")
	}
	hostileAddSpan(spans, hostileTraceID(6), hostileSpanID(1), pcommon.SpanID{}, "dup-other-trace")
	hostileAddSpan(spans, hostileTraceID(6), hostileSpanID(1), hostileSpanID(1), "dup-self")
	return td
}

// manyRolloutTraces is n spans from first on, each a gym.rollout root of its
// own rollout id in its own trace, each with a child without evidence.
func manyRolloutTraces(first, n int) ptrace.Traces {
	td := ptrace.NewTraces()
	spans := hostileSpans(td)
	spans.EnsureCapacity(2 * n)
	for i := first; i < first+n; i++ {
		tid := hostileTraceID(uint64(1000 + i))
		r := hostileAddSpan(spans, tid, hostileSpanID(uint64(2*i)), pcommon.SpanID{}, "gym.rollout")
		r.Attributes().PutStr("nemo.gym.rollout.id", "task"+strconv.Itoa(i/4)+"-"+strconv.Itoa(i%4))
		hostileAddSpan(spans, tid, hostileSpanID(uint64(2*i+1)), hostileSpanID(uint64(2*i)), "gym.agent.responses")
	}
	return td
}

// rolloutsOut maps each non-synthetic output span (by name) to the set of
// rollout ids it left with ("" for none).
func hostileRolloutOf(s ptrace.Span) string {
	v, _ := s.Attributes().Get("nemo.gym.rollout.id")
	return v.AsString()
}

func hostileEachSpan(tds []ptrace.Traces, fn func(pcommon.Resource, ptrace.Span)) {
	for _, td := range tds {
		for i := 0; i < td.ResourceSpans().Len(); i++ {
			rs := td.ResourceSpans().At(i)
			for j := 0; j < rs.ScopeSpans().Len(); j++ {
				spans := rs.ScopeSpans().At(j).Spans()
				for k := 0; k < spans.Len(); k++ {
					fn(rs.Resource(), spans.At(k))
				}
			}
		}
	}
}

// runHostile feeds td whole and checks spans in == spans out.
func runHostile(t *testing.T, cfg *Config, td ptrace.Traces) []ptrace.Traces {
	t.Helper()
	in := spanKeys(td)
	sink := processAll(t, cfg, td)
	checkSameSpans(t, in, sink)
	return sink.AllTraces()
}

func TestHostile100kSpanTrace(t *testing.T) {
	const n = 100_000
	out := runHostile(t, nil, wideTraces(n))
	got := 0
	hostileEachSpan(out, func(_ pcommon.Resource, s ptrace.Span) {
		if !hostileIsSynthetic(s) {
			got++
			assert.Equal(t, "wide-1", hostileRolloutOf(s))
		}
	})
	assert.Equal(t, n, got)
}

func TestHostile10kDeepChain(t *testing.T) {
	const depth = 10_000
	for _, top := range []bool{true, false} {
		t.Run(fmt.Sprintf("evidence_top=%v", top), func(t *testing.T) {
			out := runHostile(t, nil, chainTraces(depth, top))
			wrong := 0
			hostileEachSpan(out, func(_ pcommon.Resource, s ptrace.Span) {
				if !hostileIsSynthetic(s) && hostileRolloutOf(s) != "chain-1" {
					wrong++
				}
			})
			// Downward from the top reaches every span; upward from the
			// bottom reaches every ancestor (nothing else is below them).
			assert.Zero(t, wrong, "spans of the chain that left without its rollout")
		})
	}
}

func TestHostile1MiBAttributeValues(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	td := wideTraces(3)
	spans := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	spans.At(1).Attributes().PutStr("gen_ai.prompt", big)
	spans.At(2).Attributes().PutStr("nemo.gym.rollout.id", big) // direct evidence, 1 MiB id
	td.ResourceSpans().At(0).Resource().Attributes().PutStr("host.name", big)
	out := runHostile(t, nil, td)
	hostileEachSpan(out, func(res pcommon.Resource, s ptrace.Span) {
		h, _ := res.Attributes().Get("host.name")
		assert.Len(t, h.Str(), 1<<20)
		if v, ok := s.Attributes().Get("gen_ai.prompt"); ok {
			assert.Len(t, v.Str(), 1<<20)
		}
		if s.SpanID() == hostileSpanID(2) {
			assert.Equal(t, big, hostileRolloutOf(s), "a 1 MiB rollout id is kept as it is")
		}
	})
}

func TestHostile10kAttributes(t *testing.T) {
	td := wideTraces(2)
	s := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(1)
	s.Attributes().EnsureCapacity(10_000)
	for i := range 10_000 {
		s.Attributes().PutStr("attr."+strconv.Itoa(i), strconv.Itoa(i))
	}
	out := runHostile(t, nil, td)
	hostileEachSpan(out, func(_ pcommon.Resource, s ptrace.Span) {
		if s.Name() == "child" {
			assert.GreaterOrEqual(t, s.Attributes().Len(), 10_000)
			v, _ := s.Attributes().Get("attr.9999")
			assert.Equal(t, "9999", v.Str())
		}
	})
}

func TestHostileParentCycles(t *testing.T) {
	out := runHostile(t, nil, cycleTraces())
	hostileEachSpan(out, func(_ pcommon.Resource, s ptrace.Span) {
		if s.Name() == "a" {
			assert.Equal(t, "cycle-1", hostileRolloutOf(s))
		}
	})
}

func TestHostileZeroIDs(t *testing.T) {
	out := runHostile(t, nil, zeroIDTraces())
	hostileEachSpan(out, func(_ pcommon.Resource, s ptrace.Span) {
		switch s.Name() {
		case "zero-trace":
			assert.Equal(t, "zero-1", hostileRolloutOf(s))
		case "zero-span-evidence":
			assert.Equal(t, "zero-2", hostileRolloutOf(s), "URL evidence is read on a zero-id span too")
		}
	})
}

func TestHostileDuplicateSpanIDs(t *testing.T) {
	runHostile(t, nil, duplicateIDTraces())
}

// hostileManyRollouts is the count of TestHostileMillionRollouts: 100,000 by
// default (CI runs -race), 1,000,000 with OTELCOL_GYM_HOSTILE_FULL=1.
func hostileManyRollouts() int {
	if os.Getenv("OTELCOL_GYM_HOSTILE_FULL") == "1" {
		return 1_000_000
	}
	return 100_000
}

// heapAfterGC is the live heap after two collections.
func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestHostileMillionRollouts: distinct rollout ids, each in its own trace,
// in batches of 1,000 (2 spans each): every span leaves once, and what the
// processor retains after the stream is bounded by its config (here
// max_pending_spans 10,000 and max_tracked_roots 10,000), not by the number
// of rollouts seen. The sink forgets each batch as it comes, so the heap
// measured is the processor's.
func TestHostileMillionRollouts(t *testing.T) {
	n := hostileManyRollouts()
	cfg := createDefaultConfig().(*Config)
	cfg.MaxPendingSpans = 10_000
	cfg.Split.MaxTrackedRoots = 10_000

	counter := &hostileCounter{}
	p, err := NewFactory().CreateTraces(t.Context(), processortest.NewNopSettings(componentType), cfg, counter)
	require.NoError(t, err)
	require.NoError(t, p.Start(t.Context(), nil))
	before := heapAfterGC()
	const batch = 1000
	var peak uint64
	for i := 0; i < n; i += batch {
		require.NoError(t, p.ConsumeTraces(t.Context(), manyRolloutTraces(i, batch)))
		if (i/batch)%(n/batch/4) == 0 { // four samples along the stream
			peak = max(peak, heapAfterGC())
		}
	}
	after := heapAfterGC()
	peak = max(peak, after)
	require.NoError(t, p.Shutdown(t.Context()))
	assert.Equal(t, int64(2*n), counter.spans.Load(), "every span leaves once")
	assert.Zero(t, counter.synthetic.Load())

	growth := int64(peak) - int64(before)
	t.Logf("%d rollouts: heap before %d MiB, peak %d MiB, after %d MiB (growth %d MiB)",
		n, before>>20, peak>>20, after>>20, growth>>20)
	// 10,000 indexed spans and 10,000 tracked roots at a few hundred bytes
	// each are a few MiB; 2n spans kept would be well above 64 MiB at n=100,000.
	assert.Less(t, growth, int64(64<<20), "heap retained by the processor grows with the rollouts seen")
}

// hostileCounter counts spans and forgets them.
type hostileCounter struct {
	spans, synthetic atomic.Int64
}

func (c *hostileCounter) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

func (c *hostileCounter) ConsumeTraces(_ context.Context, td ptrace.Traces) error {
	hostileEachSpan([]ptrace.Traces{td}, func(_ pcommon.Resource, s ptrace.Span) {
		if hostileIsSynthetic(s) {
			c.synthetic.Add(1)
		} else {
			c.spans.Add(1)
		}
	})
	return nil
}
