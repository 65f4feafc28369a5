// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/rollout"
)

func TestMaxPendingSpansNeverExceededNearestDeadlineFirst(t *testing.T) {
	cfg := testConfig()
	cfg.MaxPendingSpans = 5
	h := newHarness(t, cfg)
	for i := 0; i < 20; i++ {
		h.consume(buildTraces(gymProcs, procOrder, []sdef{undecided(fmt.Sprintf("u%02d", i), "absent", "orchestrator")}))
		require.LessOrEqual(t, h.pending(), 5)
		require.LessOrEqual(t, h.metricSum(metricPendingSpans), int64(5))
		h.clock.Advance(time.Millisecond)
	}
	// The spans that left are the ones nearest their deadline: the oldest.
	var left []string
	for _, td := range h.sink.AllTraces() {
		for _, s := range normalize([]ptrace.Traces{td}) {
			left = append(left, s.SpanID)
		}
	}
	require.Len(t, left, 15)
	for i, id := range left {
		assert.Equal(t, spanIDOf(fmt.Sprintf("u%02d", i)).String(), id, "eviction order")
	}
	assert.Equal(t, int64(15), h.metricSum(metricReleasedUndecided, "reason", "bound"))
	h.shutdown()
	assert.Len(t, h.out(), 20, "never dropped")
}

func TestMaxPendingBytesNeverExceeded(t *testing.T) {
	cfg := testConfig()
	probe := buildTraces(gymProcs, procOrder, []sdef{undecided("probe", "absent", "orchestrator")})
	one := estimateSpanBytes(probe.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0))
	cfg.MaxPendingBytes = 3*one + one/2
	h := newHarness(t, cfg)
	for i := 0; i < 10; i++ {
		h.consume(buildTraces(gymProcs, procOrder, []sdef{undecided(fmt.Sprintf("b%02d", i), "absent", "orchestrator")}))
		h.p.mu.Lock()
		b := h.p.eng.core.PendingBytes()
		h.p.mu.Unlock()
		require.LessOrEqual(t, b, cfg.MaxPendingBytes)
		require.LessOrEqual(t, h.metricSum(metricPendingBytes), cfg.MaxPendingBytes)
		require.Equal(t, min(i+1, 3), h.pending())
	}
	h.shutdown()
	assert.Len(t, h.out(), 10)
}

// At a bound, an upward root is decided with what is known, not dropped.
func TestBoundDecidesUpwardRootsAsTheyStand(t *testing.T) {
	cfg := testConfig()
	cfg.MaxPendingSpans = 1
	h := newHarness(t, cfg)
	h.consume(readTraces(t, filepath.Join(goldenDir, "per_rollout_preset", "input.json")))
	require.LessOrEqual(t, h.pending(), 1)
	h.shutdown()
	out := h.out()
	require.Len(t, out, 45)
}

func TestIndexIsBoundedAndExpires(t *testing.T) {
	cfg := testConfig()
	cfg.MaxPendingSpans = 10
	h := newHarness(t, cfg)
	for i := 0; i < 50; i++ {
		h.consume(buildTraces(gymProcs, procOrder, []sdef{
			{id: fmt.Sprintf("d%02d", i), parent: fmt.Sprintf("p%02d", i), trace: "t", name: "gym.rollout", kind: ptrace.SpanKindInternal, proc: "agent", attrs: map[string]any{"nemo.gym.rollout.id": "1-0"}},
		}))
		h.p.mu.Lock()
		n := h.p.eng.core.Indexed() - h.p.eng.core.Pending()
		h.p.mu.Unlock()
		require.LessOrEqual(t, n, cfg.MaxPendingSpans+1, "index entries beyond the held spans")
	}
	h.tickAt(cfg.Wait + time.Millisecond)
	assert.Zero(t, h.metricSum(metricIndexEntries), "entries expire after wait")
}

func TestMetricsOfADefaultPresetRun(t *testing.T) {
	h := newHarness(t, testConfig())
	h.consume(readTraces(t, filepath.Join(goldenDir, "default_preset_3_rollouts", "input.json")))
	h.tickAt(testConfig().Settle)
	require.Zero(t, h.pending())
	assert.Equal(t, int64(40), h.metricSum(metricSpansReceived))
	assert.Equal(t, int64(40), h.metricSum(metricSpansEmitted))
	direct := h.metricSum(metricSpansPromoted, "source", "direct")
	down := h.metricSum(metricSpansPromoted, "source", "downward")
	up := h.metricSum(metricSpansPromoted, "source", "upward")
	assert.Equal(t, int64(39), direct+down+up, "every span but gym.job got its rollout")
	assert.Equal(t, int64(3*5), direct, "per rollout: gym.rollout, 2 CLIENT spans, 2 SERVER spans with /ng-rollout/ URLs")
	assert.Positive(t, up)
	assert.Equal(t, int64(3), h.metricSum(metricRootsCut, "link_type", "job"))
	assert.Zero(t, h.metricSum(metricRootsCut, "link_type", "parent"))
	assert.Zero(t, h.metricSum(metricPendingSpans))
	assert.Zero(t, h.metricSum(metricPendingBytes))
	assert.Zero(t, h.metricSum(metricSynthesized))
	assert.Zero(t, h.metricSum(metricDownstreamFailed))
}

func TestSetupProblemsAreCounted(t *testing.T) {
	cfg := testConfig()
	h := newHarness(t, cfg)
	// Only the orchestrator sends, and without evidence; a SERVER span with
	// no parent arrives from another run. Gym's parentless calls by design
	// (GET /global_config_dict_yaml, /aggregate_metrics) are no problem.
	h.consume(buildTraces(gymProcs, procOrder, []sdef{
		jobSpan("j"),
		{id: "dispatch", parent: "job", trace: "j", name: "HTTP POST", kind: ptrace.SpanKindClient, proc: "orchestrator", attrs: map[string]any{"url.full": "http://127.0.0.1:8000/run"}},
		{id: "orphan-server", trace: "o", name: "POST", kind: ptrace.SpanKindServer, proc: "norun", attrs: map[string]any{"url.path": "/ng-rollout/1-0/verify"}},
		{id: "config-fetch", trace: "c", name: "GET /global_config_dict_yaml", kind: ptrace.SpanKindServer, proc: "norun", attrs: map[string]any{"http.target": "/global_config_dict_yaml"}},
		{id: "aggregate", trace: "a", name: "POST /aggregate_metrics", kind: ptrace.SpanKindServer, proc: "norun", attrs: map[string]any{"url.path": "/aggregate_metrics"}},
	}))
	h.tickAt(cfg.Wait)
	assert.Equal(t, int64(1), h.metricSum(metricSetupProblems, "problem", "only_orchestrator"))
	assert.Equal(t, int64(1), h.metricSum(metricSetupProblems, "problem", "no_rollout_evidence"))
	assert.Equal(t, int64(1), h.metricSum(metricSetupProblems, "problem", "server_without_parent"))
}

// A refusal of the next consumer is not the sender's: the batch is taken,
// the refused spans are held for redelivery (redeliver_test.go) and
// counted, and timer-driven releases join them.
func TestDownstreamRefusalsAreHeldAndCounted(t *testing.T) {
	cfg := testConfig()
	failing := consumertest.NewErr(errors.New("disk full"))
	h := newHarnessWithNext(t, cfg, failing)
	td := readTraces(t, filepath.Join(goldenDir, "default_preset_3_rollouts", "input.json"))
	require.NoError(t, h.p.ConsumeTraces(context.Background(), td))
	emittedAtOnce := int64(40 - h.pending())
	assert.Equal(t, emittedAtOnce, h.metricSum(metricDownstreamFailed))
	assert.Equal(t, emittedAtOnce, h.p.red.spans.Load())
	// Timer-driven releases join the queue; the retry's refusal is counted.
	h.tickAt(cfg.Settle)
	assert.Equal(t, int64(40), h.p.red.spans.Load())
	assert.Equal(t, 2*emittedAtOnce, h.metricSum(metricDownstreamFailed))
}

func TestConcurrentConsumeTraces(t *testing.T) {
	cfg := testConfig()
	sink := new(consumertest.TracesSink)
	h := newHarnessWithNext(t, cfg, sink)
	require.NoError(t, h.p.Start(context.Background(), nil))
	input := readTraces(t, filepath.Join(goldenDir, "default_preset_3_rollouts", "input.json"))
	plans := arrivalPlans(input, 4)
	var wg sync.WaitGroup
	total := 0
	for _, batches := range plans {
		total += input.SpanCount()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, b := range batches {
				assert.NoError(t, h.p.ConsumeTraces(context.Background(), b))
			}
		}()
	}
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case h.clock.ticks <- h.clock.Now():
				h.clock.Advance(time.Second)
			}
		}
	}()
	wg.Wait()
	close(done)
	require.NoError(t, h.p.Shutdown(context.Background()))
	assert.Equal(t, total, sink.SpanCount(), "every span leaves exactly once, duplicates included")
}

// reentrantSink calls back into the processor from inside ConsumeTraces, as
// a fan-out or a looping pipeline might; the processor must not hold its
// lock while it calls next.
type reentrantSink struct {
	p    *gymProcessor
	done atomic.Bool
	more ptrace.Traces
	consumertest.TracesSink
}

func (s *reentrantSink) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	if s.done.CompareAndSwap(false, true) {
		_ = s.p.ConsumeTraces(ctx, s.more)
	}
	return s.TracesSink.ConsumeTraces(ctx, td)
}

func TestNextIsCalledWithoutTheLock(t *testing.T) {
	sink := &reentrantSink{more: buildTraces(gymProcs, procOrder, []sdef{
		{id: "second", trace: "t2", name: "gym.rollout", kind: ptrace.SpanKindInternal, proc: "agent", attrs: map[string]any{"nemo.gym.rollout.id": "2-0"}},
	})}
	h := newHarnessWithNext(t, testConfig(), sink)
	sink.p = h.p
	h.consume(buildTraces(gymProcs, procOrder, []sdef{
		{id: "first", trace: "t1", name: "gym.rollout", kind: ptrace.SpanKindInternal, proc: "agent", attrs: map[string]any{"nemo.gym.rollout.id": "1-0"}},
	}))
	assert.Equal(t, 2, sink.SpanCount())
}

// The process table is bounded by forgetting idle processes, never one whose
// spans are held: a process past the bound that shows evidence later still
// re-arms its held spans (they point at its record).
func TestProcessTableAtItsBound(t *testing.T) {
	cfg := coreConfig()
	h := newHarness(t, cfg)
	// An untyped process (generic instrumentation) holds an undecided span,
	// which waits wait while the process has shown no evidence.
	h.consume(buildTraces(genericProcs, procOrder, []sdef{undecided("early", "absent", "agent")}))
	h.tickAt(cfg.Settle)
	require.Equal(t, 1, h.pending())

	// More processes than the table holds send a span each (with evidence:
	// they hold nothing).
	flood := ptrace.NewTraces()
	for i := range maxTrackedProcesses + 100 {
		rs := flood.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", "nemo-gym/worker")
		rs.Resource().Attributes().PutInt("process.pid", int64(100000+i))
		rs.Resource().Attributes().PutStr("nemo.run.id", runID)
		sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
		sp.SetTraceID(traceIDOf(fmt.Sprint("flood-", i)))
		sp.SetSpanID(spanIDOf(fmt.Sprint("flood-", i)))
		sp.Attributes().PutStr("nemo.gym.rollout.id", "9-9")
	}
	h.consume(flood)
	h.p.mu.Lock()
	procs := h.p.eng.procs.Len()
	h.p.mu.Unlock()
	assert.LessOrEqual(t, procs, maxTrackedProcesses+1, "the table stays at its bound (plus the pinned process)")

	// The early process shows evidence now: its held span is re-armed to
	// rollout_wait, so it is still held at wait.
	h.consume(buildTraces(genericProcs, procOrder, []sdef{
		{id: "ev", trace: "t-ev", name: "gym.rollout", kind: ptrace.SpanKindInternal, proc: "agent", attrs: map[string]any{"nemo.gym.rollout.id": "1-0"}},
	}))
	h.tickAt(cfg.Wait)
	assert.Equal(t, 1, h.pending(), "the process's record survived the bound: its span was re-armed")
	h.tickAt(cfg.RolloutWait)
	assert.Zero(t, h.pending())
}

// The run table likewise keeps a run whose spans are held: a run that shows
// observability off after a thousand other runs came still releases what it
// holds in the same call.
func TestRunTableAtItsBound(t *testing.T) {
	cfg := coreConfig()
	h := newHarness(t, cfg)
	spans := rolloutSpans("0-0", rolloutOpts{hParent: "job", trace: "job"})
	h.consume(buildTraces(gymProcs, procOrder, []sdef{pick(spans, "0-0/recv")}))
	require.Equal(t, 1, h.pending())
	for i := range rollout.MinTrackedRuns + 10 {
		other := map[string]proc{"agent": gymProcs["agent"]}
		p := other["agent"]
		p.run = fmt.Sprint("run-", i)
		other["agent"] = p
		h.consume(buildTraces(other, procOrder, []sdef{
			{id: fmt.Sprint("r-", i), trace: fmt.Sprint("t-", i), name: "gym.rollout", kind: ptrace.SpanKindInternal, proc: "agent", attrs: map[string]any{"nemo.gym.rollout.id": "1-0"}},
		}))
	}
	h.consume(buildTraces(gymProcs, procOrder, []sdef{pick(spans, "0-0/rollout")}))
	assert.Zero(t, h.pending(), "the run's record survived the bound: observability off released its span")
}
