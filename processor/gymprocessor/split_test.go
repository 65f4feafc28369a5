// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor

import (
	"encoding/hex"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
)

// T' and nemo.gym.original_trace_id follow the formula of design §4.3, computed
// here independently for every rewritten span of every golden case.
func TestRolloutTraceIDFormulaOnGoldenOutputs(t *testing.T) {
	for _, name := range []string{"default_preset_3_rollouts", "per_rollout_preset", "url_evidence_old_and_new_semconv", "rollout_split_across_traces", "explicit_child_rollout_under_other_rollout"} {
		t.Run(name, func(t *testing.T) {
			input := readTraces(t, filepath.Join(goldenDir, name, "input.json"))
			inTrace := map[pcommon.SpanID]pcommon.TraceID{}
			forEachSpan(input, func(_ pcommon.Resource, s ptrace.Span) { inTrace[s.SpanID()] = s.TraceID() })

			h := newHarness(t, coreConfig())
			h.consume(copyTraces(input))
			h.shutdown()
			checked := 0
			for _, td := range h.sink.AllTraces() {
				forEachSpan(td, func(res pcommon.Resource, s ptrace.Span) {
					r, ok := s.Attributes().Get("nemo.gym.rollout.id")
					if !ok {
						assert.Equal(t, inTrace[s.SpanID()], s.TraceID(), "a span in no rollout keeps its trace id")
						return
					}
					orig, ok := s.Attributes().Get(gymconv.OriginalTraceAttribute)
					require.True(t, ok)
					origTrace := inTrace[s.SpanID()]
					assert.Equal(t, hexTrace(origTrace), orig.Str())
					run := resourceString(res.Attributes(), "nemo.run.id")
					assert.Equal(t, expectedTraceID(run, orig.Str(), r.Str()), s.TraceID().String())
					checked++
				})
			}
			require.Positive(t, checked)
		})
	}
}

func forEachSpan(td ptrace.Traces, f func(pcommon.Resource, ptrace.Span)) {
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		sss := rss.At(i).ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			spans := sss.At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				f(rss.At(i).Resource(), spans.At(k))
			}
		}
	}
}

// Regression (a property-test failure of c8350f6): when the previous attempt
// has several roots (fragments of one rollout in two original traces), the
// retry links to the same one, the smallest span id, in any arrival order.
func TestPreviousAttemptWithSeveralRootsIsOrderIndependent(t *testing.T) {
	fragment := func(r, top, trace string) []sdef {
		return []sdef{
			{id: top + "/rollout", parent: top, trace: trace, name: "gym.rollout", kind: ptrace.SpanKindInternal, proc: "agent", attrs: map[string]any{"nemo.gym.rollout.id": r}},
			{id: top, trace: trace, name: "POST /run", kind: ptrace.SpanKindServer, proc: "agent", attrs: map[string]any{}},
		}
	}
	prev := append(fragment("12-3", "a", "t-a"), fragment("12-3", "b", "t-b")...)
	retry := fragment("12-3-a1", "c", "t-c")
	want := spanIDOf("a")
	if spanIDOf("b").String() < want.String() {
		want = spanIDOf("b")
	}
	for _, order := range [][]sdef{prev, {prev[2], prev[3], prev[0], prev[1]}} {
		h := newHarness(t, coreConfig())
		for _, s := range order {
			h.consume(buildTraces(gymProcs, procOrder, []sdef{s}))
		}
		h.tickAt(time.Hour)
		h.consume(buildTraces(gymProcs, procOrder, retry))
		h.tickAt(time.Hour)
		var links []normLink
		for _, s := range h.out() {
			if s.SpanID == spanIDOf("c").String() {
				for _, l := range s.Links {
					if l.Attributes[attrLinkType] == linkTypePreviousAttempt {
						links = append(links, l)
					}
				}
			}
		}
		require.Len(t, links, 1)
		assert.Equal(t, want.String(), links[0].SpanID)
		assert.Equal(t, expectedTraceID(runID, "", "12-3"), links[0].TraceID)
	}
}

// Exactly one span of each rollout is marked its root: the top span decided
// upward (cut or, with the split off, not), or a parentless gym.rollout;
// never a parentless model or resources SERVER span.
func TestOneMarkedRootPerRollout(t *testing.T) {
	type tc struct {
		name  string
		input func(t *testing.T) ptrace.Traces
		cfg   func(*Config)
		roots map[string]int // rollout -> marked spans
	}
	golden := func(name string) func(t *testing.T) ptrace.Traces {
		return func(t *testing.T) ptrace.Traces { return readTraces(t, filepath.Join(goldenDir, name, "input.json")) }
	}
	sm := func(name string) func(t *testing.T) ptrace.Traces {
		return func(*testing.T) ptrace.Traces { return smTraces(name, smScenarios()[name]) }
	}
	three := map[string]int{"0-0": 1, "1-0": 1, "2-0": 1}
	for _, c := range []tc{
		{"split on", golden("default_preset_3_rollouts"), nil, three},
		{"split off", golden("default_preset_3_rollouts"), func(c *Config) { c.Split.Enabled = false }, three},
		{"http_client off, synthesized parents", sm("sm_http_client_off"), nil, map[string]int{"0-0": 1, "1-0": 1}},
		{"http_client off, synthesize_client_spans off", sm("sm_http_client_off"), func(c *Config) { c.ServiceMap.SynthesizeClientSpans = false }, map[string]int{"0-0": 1, "1-0": 1}},
		{"gym.rollout never arrives", sm("sm_gym_rollout_never_comes"), nil, map[string]int{"2-0": 0}},
		{"URL evidence on parentless SERVER spans only", golden("url_evidence_old_and_new_semconv"), nil, map[string]int{"7-1": 0, "7-2": 0, "7-3": 0, "7-4": 0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := testConfig()
			if c.cfg != nil {
				c.cfg(cfg)
			}
			h := newHarness(t, cfg)
			h.consume(c.input(t))
			h.shutdown()
			got := map[string]int{}
			for _, s := range h.out() {
				if s.Rollout == "" {
					continue
				}
				if _, ok := got[s.Rollout]; !ok {
					got[s.Rollout] = 0
				}
				if s.Attributes[gymconv.RolloutRootAttribute] == true {
					got[s.Rollout]++
				}
			}
			assert.Equal(t, c.roots, got)
		})
	}
}

// The root of a re-dispatched attempt decided before its previous attempt's
// root was seen (after an outage, a sender's retry can bring the first
// attempt seconds after its successor) waits up to wait for it and links to
// it; when it does not come within wait, the root leaves without the
// previous_attempt link, and is counted. The attempt after it, whose
// previous root is known, links as usual.
func TestAttemptRootWaitsForItsPrevious(t *testing.T) {
	early, late := firstAttemptLast(t)
	for _, c := range []struct {
		name   string
		gap    time.Duration // after the later attempts' roots are decided
		links  map[string]int
		missed int64
	}{
		{"within wait", coreConfig().Wait - time.Millisecond, map[string]int{"12-3": 0, "12-3-a1": 1, "12-3-a2": 1}, 0},
		{"after wait", coreConfig().Wait, map[string]int{"12-3": 0, "12-3-a1": 0, "12-3-a2": 1}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := coreConfig()
			h := newHarness(t, cfg)
			h.consume(copyTraces(early))
			h.tickAt(cfg.Wait) // the later attempts' roots are decided (cut from gym.job)
			h.tickAt(c.gap)
			h.consume(copyTraces(late))
			h.shutdown()

			links := map[string]int{} // rollout → previous_attempt links of its root
			for _, s := range h.out() {
				if s.Attributes[gymconv.RolloutRootAttribute] != true {
					continue
				}
				for _, l := range s.Links {
					if l.Attributes["nemo.gym.link.type"] == "previous_attempt" {
						links[s.Rollout]++
					}
				}
				links[s.Rollout] += 0
			}
			assert.Equal(t, c.links, links)
			assert.Equal(t, c.missed, h.metricSum(metricLinksMissed))
			assert.Equal(t, early.SpanCount()+late.SpanCount(), len(h.out()), "every span once")
		})
	}
}

// firstAttemptLast splits the retry golden input into the later attempts
// (early) and the first attempt, 12-3, with everything below its root
// (late): the order a sender's retry after an outage can bring them in.
func firstAttemptLast(t *testing.T) (early, late ptrace.Traces) {
	input := readTraces(t, filepath.Join(goldenDir, "retry_links_previous_attempt", "input.json"))
	first := map[pcommon.SpanID]bool{spanIDOfHex(t, "8fa44c25f4ff7de8"): true} // 12-3's root and all below it
	for grown := true; grown; {
		grown = false
		forEachSpan(input, func(_ pcommon.Resource, s ptrace.Span) {
			if first[s.ParentSpanID()] && !first[s.SpanID()] {
				first[s.SpanID()], grown = true, true
			}
		})
	}
	late, early = ptrace.NewTraces(), ptrace.NewTraces()
	input.CopyTo(late)
	input.CopyTo(early)
	keep := func(td ptrace.Traces, f func(ptrace.Span) bool) {
		td.ResourceSpans().RemoveIf(func(rs ptrace.ResourceSpans) bool {
			rs.ScopeSpans().RemoveIf(func(ss ptrace.ScopeSpans) bool {
				ss.Spans().RemoveIf(func(s ptrace.Span) bool { return !f(s) })
				return ss.Spans().Len() == 0
			})
			return rs.ScopeSpans().Len() == 0
		})
	}
	keep(late, func(s ptrace.Span) bool { return first[s.SpanID()] })
	keep(early, func(s ptrace.Span) bool { return !first[s.SpanID()] })
	require.Positive(t, late.SpanCount())
	require.Positive(t, early.SpanCount())
	return early, late
}

func spanIDOfHex(t *testing.T, h string) pcommon.SpanID {
	var id pcommon.SpanID
	n, err := hex.Decode(id[:], []byte(h))
	require.NoError(t, err)
	require.Equal(t, len(id), n)
	return id
}
