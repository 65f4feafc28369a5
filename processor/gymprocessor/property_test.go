// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"pgregory.net/rapid"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
)

const idxAttr = "test.idx"

type genSpan struct {
	parent   int // -1: root
	trace    int
	proc     int
	evidence int // 0 none, 1 attribute, 2 url
	rollout  string
	job      bool
	kind     ptrace.SpanKind
	zeroID   bool
	dupOf    int // -1: own id
	selfPar  bool
	// rolloutSpan names the span gym.rollout: the first INTERNAL span with
	// the rollout attribute of each rollout (design §4.4 hangs synthesized
	// CLIENT spans below it).
	rolloutSpan bool
}

var propRollouts = []string{"1-0", "2-0", "2-0-a1", "3-1"}

// genForest draws a random span forest. With chaos, parents may form cycles,
// point at themselves, and span ids may be zero or repeated.
func genForest(t *rapid.T, chaos bool) []genSpan {
	n := rapid.IntRange(1, 40).Draw(t, "n")
	spans := make([]genSpan, n)
	for i := range spans {
		s := genSpan{parent: -1, dupOf: -1, proc: rapid.IntRange(0, 3).Draw(t, "proc")}
		if i > 0 && rapid.IntRange(0, 4).Draw(t, "hasParent") > 0 {
			if chaos {
				s.parent = rapid.IntRange(0, n-1).Draw(t, "parentAny")
			} else {
				s.parent = rapid.IntRange(0, i-1).Draw(t, "parent")
			}
		}
		if s.parent >= 0 && !chaos {
			s.trace = spans[s.parent].trace
		} else {
			s.trace = rapid.IntRange(0, 2).Draw(t, "trace")
		}
		switch rapid.IntRange(0, 5).Draw(t, "evidence") {
		case 0:
			s.evidence = 1
		case 1:
			s.evidence = 2
		}
		if s.evidence > 0 {
			s.rollout = rapid.SampledFrom(propRollouts).Draw(t, "rollout")
		}
		s.job = s.evidence == 0 && rapid.IntRange(0, 9).Draw(t, "job") == 0
		s.kind = ptrace.SpanKind(rapid.IntRange(1, 3).Draw(t, "kind"))
		if chaos {
			s.zeroID = rapid.IntRange(0, 15).Draw(t, "zero") == 0
			if i > 0 && rapid.IntRange(0, 10).Draw(t, "dup") == 0 {
				s.dupOf = rapid.IntRange(0, i-1).Draw(t, "dupOf")
			}
			s.selfPar = rapid.IntRange(0, 15).Draw(t, "self") == 0
		}
		spans[i] = s
	}
	named := map[string]bool{}
	for i, s := range spans {
		if s.evidence == 1 && s.kind == ptrace.SpanKindInternal && !named[s.rollout] {
			named[s.rollout] = true
			spans[i].rolloutSpan = true
		}
	}
	return spans
}

func (g genSpan) spanID(i int, all []genSpan) pcommon.SpanID {
	if g.zeroID {
		return pcommon.SpanID{}
	}
	if g.dupOf >= 0 {
		return all[g.dupOf].spanID(g.dupOf, all)
	}
	return spanIDOf(fmt.Sprintf("p%d", i))
}

func buildForest(spans []genSpan) ptrace.Traces {
	td := ptrace.NewTraces()
	var ss [4]ptrace.SpanSlice
	for p := 0; p < 4; p++ {
		rs := td.ResourceSpans().AppendEmpty()
		a := rs.Resource().Attributes()
		a.PutStr("service.name", fmt.Sprintf("svc-%d", p))
		a.PutInt("process.pid", int64(100+p))
		if p != 3 {
			a.PutStr("nemo.run.id", "run-prop")
		}
		ss[p] = rs.ScopeSpans().AppendEmpty().Spans()
	}
	for i, g := range spans {
		s := ss[g.proc].AppendEmpty()
		s.SetName(fmt.Sprintf("span-%d", i))
		if g.job {
			s.SetName("gym.job")
		}
		if g.rolloutSpan {
			s.SetName(gymconv.RolloutSpanName)
		}
		s.SetKind(g.kind)
		s.SetTraceID(traceIDOf(fmt.Sprintf("t%d", g.trace)))
		s.SetSpanID(g.spanID(i, spans))
		switch {
		case g.selfPar:
			s.SetParentSpanID(s.SpanID())
		case g.parent >= 0:
			s.SetParentSpanID(spans[g.parent].spanID(g.parent, spans))
		}
		s.Attributes().PutInt(idxAttr, int64(i))
		switch g.evidence {
		case 1:
			s.Attributes().PutStr("nemo.gym.rollout.id", g.rollout)
		case 2:
			s.Attributes().PutStr("url.path", "/ng-rollout/"+g.rollout+"/verify")
		}
	}
	return td
}

// drawPlan splits td's spans into batches in a random order.
func drawPlan(t *rapid.T, td ptrace.Traces) []ptrace.Traces {
	refs := flatRefs(td)
	perm := rapid.Permutation(refs).Draw(t, "order")
	var groups [][]spanRef
	for len(perm) > 0 {
		n := rapid.IntRange(1, len(perm)).Draw(t, "batch")
		groups = append(groups, perm[:n])
		perm = perm[n:]
	}
	return batchesOf(td, groups)
}

type outcome struct {
	trace, parent, rollout string
	links                  []string
}

// runForest feeds batches 1ms apart (all within settle), lets every
// deadline pass and shuts down; it returns each input span's outcome by
// test.idx and fails if any span is lost or duplicated. The output holds
// every input span once plus the synthesized CLIENT spans of §4.4: each at
// the id of the formula, the parent of exactly one SERVER span of its trace,
// as many as spans_synthesized counts. An outcome's parent looks through a
// synthesized span (whether an embedder's INTERNAL parent had arrived when
// its SERVER child left is arrival-dependent by design; the tree is not).
func runForest(t *rapid.T, batches []ptrace.Traces, n int) map[int64]outcome {
	return runForestWith(t, testConfig(), batches, n)
}

func runForestWith(t *rapid.T, cfg *Config, batches []ptrace.Traces, n int) map[int64]outcome {
	h := newHarness(t, cfg)
	for _, b := range batches {
		require.NoError(t, h.p.ConsumeTraces(t.Context(), b))
		h.p.mu.Lock()
		spans, bytes := h.p.eng.core.Pending(), h.p.eng.core.PendingBytes()
		h.p.mu.Unlock()
		require.LessOrEqual(t, spans, cfg.MaxPendingSpans)
		require.LessOrEqual(t, bytes, cfg.MaxPendingBytes)
		h.clock.Advance(time.Millisecond)
	}
	h.tickAt(3 * time.Hour)
	require.NoError(t, h.p.Shutdown(t.Context()))
	got := map[int64]outcome{}
	type synthSpan struct {
		trace, parent   string
		count, children int
	}
	synth := map[string]*synthSpan{}
	nSynth := 0
	type childOf struct{ trace, span, parent string }
	var servers []childOf
	for _, td := range h.sink.AllTraces() {
		rss := td.ResourceSpans()
		for i := 0; i < rss.Len(); i++ {
			sss := rss.At(i).ScopeSpans()
			for j := 0; j < sss.Len(); j++ {
				spans := sss.At(j).Spans()
				for k := 0; k < spans.Len(); k++ {
					s := spans.At(k)
					if isSynthetic(s.Attributes()) {
						require.Equal(t, ptrace.SpanKindClient, s.Kind())
						// Two SERVER spans with one span id (chaos forests)
						// in one trace get one synthesized id twice.
						ss := synth[s.SpanID().String()]
						if ss == nil {
							ss = &synthSpan{trace: s.TraceID().String(), parent: s.ParentSpanID().String()}
							synth[s.SpanID().String()] = ss
						}
						ss.count++
						nSynth++
						continue
					}
					if s.Kind() == ptrace.SpanKindServer {
						servers = append(servers, childOf{s.TraceID().String(), s.SpanID().String(), s.ParentSpanID().String()})
					}
					v, ok := s.Attributes().Get(idxAttr)
					require.True(t, ok)
					_, dup := got[v.Int()]
					require.False(t, dup, "span %d left twice", v.Int())
					o := outcome{trace: s.TraceID().String(), parent: s.ParentSpanID().String()}
					if r, ok := s.Attributes().Get("nemo.gym.rollout.id"); ok {
						o.rollout = r.AsString()
					}
					for l := 0; l < s.Links().Len(); l++ {
						lk := s.Links().At(l)
						typ, _ := lk.Attributes().Get(attrLinkType)
						o.links = append(o.links, lk.TraceID().String()+"/"+lk.SpanID().String()+"/"+typ.AsString())
					}
					sort.Strings(o.links)
					got[v.Int()] = o
				}
			}
		}
	}
	require.Len(t, got, n, "every input span leaves exactly once")
	for _, c := range servers {
		ss := synth[c.parent]
		if ss == nil {
			continue
		}
		ss.children++
		require.Equal(t, ss.trace, c.trace, "a synthesized span is in its SERVER child's trace")
		require.Equal(t, expectedSyntheticSpanID(c.trace, c.span), c.parent, "synthesized span id")
	}
	for id, ss := range synth {
		require.Equal(t, ss.count, ss.children, "synthesized span %s is the parent of exactly one SERVER span", id)
	}
	require.Equal(t, int64(nSynth), h.metricSum(metricSynthesized), "spans_synthesized")
	require.Equal(t, int64(n+nSynth), h.metricSum(metricSpansEmitted), "out = in + synthesized")
	for i, o := range got {
		if ss := synth[o.parent]; ss != nil {
			o.parent = ss.parent
			got[i] = o
		}
	}
	return got
}

func TestPropertyArrivalOrderDoesNotMatter(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		spans := genForest(t, false)
		td := buildForest(spans)
		want := runForest(t, []ptrace.Traces{copyTraces(td)}, len(spans))
		got := runForest(t, drawPlan(t, td), len(spans))
		for i := range spans {
			require.Equal(t, want[int64(i)], got[int64(i)], "span %d", i)
		}
	})
}

func TestPropertyChaosNeverHangsNorLoses(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		spans := genForest(t, true)
		td := buildForest(spans)
		runForest(t, drawPlan(t, td), len(spans))
	})
}

func TestPropertyBoundsNeverExceededNothingLost(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		spans := genForest(t, rapid.Bool().Draw(t, "chaos"))
		cfg := testConfig()
		cfg.MaxPendingSpans = rapid.IntRange(1, 12).Draw(t, "maxSpans")
		cfg.MaxPendingBytes = int64(rapid.IntRange(600, 6000).Draw(t, "maxBytes"))
		runForestWith(t, cfg, drawPlan(t, buildForest(spans)), len(spans))
	})
}

func copyTraces(td ptrace.Traces) ptrace.Traces {
	c := ptrace.NewTraces()
	td.CopyTo(c)
	return c
}
