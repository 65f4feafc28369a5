// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor

import (
	"context"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

func TestKnownRolloutLeavesInTheSameCall(t *testing.T) {
	h := newHarness(t, coreConfig())
	td := buildTraces(gymProcs, procOrder, []sdef{
		{id: "g", parent: "run", trace: "t", name: "gym.rollout", kind: ptrace.SpanKindInternal, proc: "agent", attrs: map[string]any{"nemo.gym.rollout.id": "0-0"}},
		{id: "m", trace: "t2", name: "POST", kind: ptrace.SpanKindServer, proc: "model", attrs: map[string]any{"http.target": "/ng-rollout/0-0/v1/responses"}},
	})
	h.consume(td)
	got := h.out()
	require.Len(t, got, 2)
	assert.Zero(t, h.pending())
	for _, s := range got {
		assert.Equal(t, "0-0", s.Rollout)
		assert.Equal(t, expectedTraceID(runID, "", "0-0"), s.TraceID)
	}
	// A child arriving after its parent left is resolved downward at once
	// from the index.
	h.consume(buildTraces(gymProcs, procOrder, []sdef{
		{id: "m-send", parent: "m", trace: "t2", name: "POST http send", kind: ptrace.SpanKindInternal, proc: "model", attrs: map[string]any{}},
	}))
	assert.Zero(t, h.pending())
	require.Len(t, h.out(), 3)
}

func TestOnlyUndecidedSpansAndUpwardRootsWait(t *testing.T) {
	cfg := testConfig()
	h := newHarness(t, cfg)
	h.consume(readTraces(t, filepath.Join(goldenDir, "default_preset_3_rollouts", "input.json")))

	// Everything with evidence, or below a span with evidence, left at once.
	out := h.out()
	require.Len(t, out, 40-h.pending())
	for _, s := range out {
		assert.NotEmpty(t, s.Rollout, s.Name)
	}
	// What waits is the agent's POST /run (and its ASGI children, which hang
	// off it), the orchestrator's HTTP POST, and gym.job.
	h.p.mu.Lock()
	var held []string
	for _, hs := range h.p.eng.held {
		if hs.origin != nil {
			held = append(held, hs.span.Name())
		}
	}
	h.p.mu.Unlock()
	sort.Strings(held)
	assert.Equal(t, []string{
		"HTTP POST", "HTTP POST", "HTTP POST",
		"POST /run", "POST /run", "POST /run",
		"POST /run http receive", "POST /run http receive", "POST /run http receive",
		"POST /run http send", "POST /run http send", "POST /run http send",
		"gym.job",
	}, held)

	h.tickAt(cfg.Settle - time.Millisecond)
	assert.Equal(t, 13, h.pending(), "nothing upward is decided before settle")
	h.tickAt(time.Millisecond)
	assert.Zero(t, h.pending(), "at settle the upward spans are decided, the roots cut, and gym.job follows")
	require.Len(t, h.out(), 40)
}

func undecided(id, parent, proc string) sdef {
	return sdef{id: id, parent: parent, trace: "t-" + id, name: "POST /run http receive", kind: ptrace.SpanKindInternal, proc: proc, attrs: map[string]any{}}
}

// A span waits by what it still needs, whatever process sent it (§4.2): a
// span whose parent has not arrived waits for it, at most rollout_wait, and
// leaves counted as parent_missing; a root waits wait.
func TestWaitByStructureNotByProcess(t *testing.T) {
	cfg := coreConfig()
	h := newHarness(t, cfg)
	h.consume(buildTraces(gymProcs, procOrder, []sdef{
		{id: "ev", trace: "t-ev", name: "POST", kind: ptrace.SpanKindServer, proc: "model", attrs: map[string]any{"http.target": "/ng-rollout/0-0/v1/responses"}},
		undecided("orch-orphan", "absent-1", "orchestrator"),
		undecided("model-orphan", "absent-2", "model"),
		undecided("agent-orphan", "absent-3", "agent"),
		{id: "model-startup", trace: "t-startup", name: "GET /health", kind: ptrace.SpanKindServer, proc: "model", attrs: map[string]any{"http.target": "/health"}},
	}))
	require.Equal(t, 4, h.pending())

	h.tickAt(cfg.Wait - time.Millisecond)
	require.Equal(t, 4, h.pending())
	h.tickAt(time.Millisecond)
	// The health-check root leaves at wait, as it stood; the three spans
	// whose parents have not arrived wait for them, in every process.
	require.Equal(t, 3, h.pending())
	var left []string
	for _, s := range h.out() {
		left = append(left, s.SpanID)
	}
	assert.ElementsMatch(t, []string{spanIDOf("ev").String(), spanIDOf("model-startup").String()}, left)
	assert.Equal(t, int64(1), h.metricSum(metricReleasedUndecided, "reason", "wait"))
	h.tickAt(cfg.RolloutWait - cfg.Wait - time.Millisecond)
	require.Equal(t, 3, h.pending())
	h.tickAt(time.Millisecond)
	require.Zero(t, h.pending(), "at rollout_wait after their arrival")
	for _, s := range h.out() {
		if s.Name != "POST" {
			assert.Empty(t, s.Rollout, s.Name)
		}
	}
	assert.Equal(t, int64(3), h.metricSum(metricReleasedUndecided, "reason", "parent_missing"))
	assert.Equal(t, int64(1), h.metricSum(metricReleasedUndecided, "reason", "wait"))
}

// The agent's POST /run http receive ends when an hour-long rollout starts:
// it waits for its parent, POST /run, before and after the agent shows any
// evidence, and learns its rollout when POST /run arrives at the end.
func TestLongRolloutResolvesItsAgentReceive(t *testing.T) {
	cfg := testConfig()
	h := newHarness(t, cfg)
	h.consume(buildTraces(gymProcs, procOrder, []sdef{undecided("recv", "run", "agent")}))
	h.tickAt(cfg.Wait + cfg.Settle)
	require.Equal(t, 1, h.pending(), "no evidence yet in the run: the span waits for its parent")
	h.consume(buildTraces(gymProcs, procOrder, []sdef{
		{id: "other", trace: "t-other", name: "gym.rollout", kind: ptrace.SpanKindInternal, proc: "agent", attrs: map[string]any{"nemo.gym.rollout.id": "9-9"}},
	}))
	h.tickAt(cfg.Wait)
	require.Equal(t, 1, h.pending())
	h.tickAt(time.Hour)
	h.consume(buildTraces(gymProcs, procOrder, []sdef{
		{id: "rollout", parent: "run", trace: "t-recv", name: "gym.rollout", kind: ptrace.SpanKindInternal, proc: "agent", attrs: map[string]any{"nemo.gym.rollout.id": "1-0"}},
		{id: "run", trace: "t-recv", name: "POST /run", kind: ptrace.SpanKindServer, proc: "agent", attrs: map[string]any{"http.target": "/run"}},
	}))
	h.tickAt(cfg.Settle)
	require.Zero(t, h.pending())
	for _, s := range h.out() {
		if s.SpanID == spanIDOf("recv").String() {
			assert.Equal(t, "1-0", s.Rollout)
		}
	}
	assert.Equal(t, int64(1), h.metricSum(metricSpansPromoted, "source", "upward"))
}

// Gym with observability off shows it in its first batches (a gym.rollout
// without a rollout id, model-server POSTs without the /ng-rollout/ prefix):
// nothing waits for ids that will not come.
func TestObservabilityOffPassesThroughAtOnce(t *testing.T) {
	cfg := coreConfig()
	h := newHarness(t, cfg)
	input := readTraces(t, filepath.Join(goldenDir, "observability_off", "input.json"))
	want := normalize([]ptrace.Traces{input})
	h.consume(copyTraces(input))
	require.Zero(t, h.pending(), "nothing is held: the batch showed observability off")
	assertSameSpans(t, want, h.out(), "unchanged")

	// From then on the run passes through without waiting.
	h.sink.Reset()
	h.consume(copyTraces(input))
	assert.Zero(t, h.pending())
	assertSameSpans(t, want, h.out(), "passed through")
	h.tickAt(cfg.Wait)
	assert.Equal(t, int64(1), h.metricSum(metricSetupProblems, "problem", "observability_off"))
	assert.Zero(t, h.metricSum(metricSetupProblems, "problem", "no_rollout_evidence"), "the run showed observability off within wait")
}

func TestTimerGoroutineReleasesExpiredSpans(t *testing.T) {
	cfg := testConfig()
	sink := newSignalSink()
	h := newHarnessWithNext(t, cfg, sink)
	require.NoError(t, h.p.Start(context.Background(), nil))
	h.consume(buildTraces(gymProcs, procOrder, []sdef{undecided("lonely", "", "orchestrator")}))
	require.Equal(t, 1, h.pending())
	h.clock.Advance(cfg.Wait)
	h.clock.Tick()
	td := <-sink.ch
	require.Equal(t, 1, td.SpanCount())
	require.NoError(t, h.p.Shutdown(context.Background()))
}

func TestShutdownEmitsEverything(t *testing.T) {
	h := newHarness(t, testConfig())
	h.consume(readTraces(t, filepath.Join(goldenDir, "default_preset_3_rollouts", "input.json")))
	require.NotZero(t, h.pending())
	h.shutdown()
	require.Zero(t, h.pending())
	out := h.out()
	require.Len(t, out, 40)
	for _, s := range out {
		if s.Name != "gym.job" {
			assert.NotEmpty(t, s.Rollout, "no rollout id is lost at shutdown: %s", s.Name)
		}
	}
	// After shutdown, spans pass straight through.
	h.consume(buildTraces(gymProcs, procOrder, []sdef{undecided("late", "absent", "orchestrator")}))
	require.Len(t, h.out(), 41)
}

// The orchestrator's HTTP POST arrives after the agent's POST /run settled:
// within wait, POST /run keeps it as parent; after wait, POST /run was cut
// and the parent is counted late.
func TestParentArrivingAfterSettle(t *testing.T) {
	spans := rolloutSpans("1-0", rolloutOpts{obs: true, hParent: "job", trace: "job"})
	orchestrator, agentAndServers := splitByProc(spans, "orchestrator")
	orchestrator = append(orchestrator, jobSpan("job"))
	find := func(out []normSpan, name, service string) normSpan {
		for _, s := range out {
			if s.Name == name && s.Service == service {
				return s
			}
		}
		t.Fatalf("no %s from %s", name, service)
		return normSpan{}
	}

	for _, late := range []time.Duration{10 * time.Second, 40 * time.Second} {
		cfg := testConfig()
		h := newHarness(t, cfg)
		h.consume(buildTraces(gymProcs, procOrder, agentAndServers))
		h.tickAt(late)
		h.consume(buildTraces(gymProcs, procOrder, orchestrator))
		h.tickAt(cfg.Wait)
		require.Zero(t, h.pending())
		out := h.out()
		require.Len(t, out, len(spans)+1)
		run := find(out, "POST /run", "nemo-gym/simple_agent")
		dispatch := find(out, "HTTP POST", "nemo-gym/orchestrator")
		assert.Equal(t, "1-0", dispatch.Rollout)
		assert.Empty(t, dispatch.ParentID)
		if late < cfg.Wait {
			assert.Equal(t, dispatch.SpanID, run.ParentID, "the parent arrived within wait: POST /run is not the root")
			assert.Empty(t, run.Links)
			assert.Zero(t, h.metricSum(metricLateParents))
		} else {
			assert.Empty(t, run.ParentID, "the parent had not arrived within wait: POST /run was cut")
			require.Len(t, run.Links, 1)
			assert.Equal(t, dispatch.SpanID, run.Links[0].SpanID)
			assert.Equal(t, int64(1), h.metricSum(metricLateParents))
		}
		require.Len(t, dispatch.Links, 1)
		assert.Equal(t, "job", dispatch.Links[0].Attributes[attrLinkType])
	}
}
