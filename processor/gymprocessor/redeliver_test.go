// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-gym/otelcol-gym/internal/gymtest"
)

// An outage: when the next consumer refuses, relative to the run.
type outage struct {
	name string
	// downFor: down from the start through the batches (1), and through
	// the timer's pass at the end of every deadline (2); then up.
	downFor int
	// every: refuse every n-th call throughout (0: never).
	every int
}

var outages = []outage{
	{name: "while_batches_arrive", downFor: 1},
	{name: "until_every_deadline_passed", downFor: 2},
	{name: "every_other_call", every: 2},
}

// runPlanRefused is runPlan with a next consumer that refuses during o:
// after every deadline passed, it ticks (past the longest backoff) until
// nothing waits for redelivery, then shuts down.
func runPlanRefused(t *testing.T, cfg *Config, batches []ptrace.Traces, mode gymtest.RefuseMode, o outage) []normSpan {
	next := gymtest.NewRefusingTraces(mode, o.downFor > 0)
	next.Every = o.every
	h := newHarnessWithNext(t, cfg, next)
	for _, b := range batches {
		h.consume(b)
		h.clock.Advance(time.Millisecond)
	}
	if o.downFor == 1 {
		next.SetDown(false)
	}
	h.tickAt(3 * cfg.RolloutWait)
	require.Zero(t, h.pending(), "nothing is held undecided once every deadline passed")
	next.SetDown(false)
	drainRefused(t, h.p, h.clock, h.tickAt)
	h.shutdown()
	return normalize(next.Sink.AllTraces())
}

// drainRefused ticks past the longest backoff until nothing waits for
// redelivery (a bounded number of times).
func drainRefused(t *testing.T, p *gymProcessor, clk *fakeClock, tick func(time.Duration)) {
	for i := 0; p.red.spans.Load() > 0 && i < 100; i++ {
		tick(redeliverMaxBackoff)
	}
	require.Zero(t, p.red.spans.Load(), "everything held for redelivery was handed on")
	p.red.mu.Lock()
	defer p.red.mu.Unlock()
	require.Empty(t, p.red.queue)
	require.Zero(t, p.red.bytes.Load())
}

// Fault injection over the golden cases: whatever the next consumer
// refuses, however (the whole batch, part of it, a batch a fan-out made
// read-only) and whenever (while the batches arrive, through the timer's
// releases, every other call), every span leaves exactly once and as it
// does when nothing is refused, in each arrival order of the golden plans.
func TestRefusedSpansAreDeliveredOnceInEveryGoldenPlan(t *testing.T) {
	for _, name := range goldenCases(t) {
		t.Run(name, func(t *testing.T) {
			cfg := goldenConfig(name)
			input := goldenInput(t, name)
			want := runPlan(t, cfg, []ptrace.Traces{copyTraces(input)}, true)
			for plan, batches := range arrivalPlans(input, 2) {
				for mode, modeName := range gymtest.RefuseModes {
					for _, o := range outages {
						got := runPlanRefused(t, cfg, copyAll(batches), mode, o)
						assertSameSpans(t, want, got, fmt.Sprintf("%s/%s/%s", plan, modeName, o.name))
					}
				}
			}
		})
	}
}

func copyAll(tds []ptrace.Traces) []ptrace.Traces {
	out := make([]ptrace.Traces, len(tds))
	for i, td := range tds {
		out[i] = copyTraces(td)
	}
	return out
}

// With storage, a kill -9 during the outage loses nothing: what the next
// consumer refused is in the held range with its round's mark, and the next
// start hands it on once; nothing is handed on twice.
func TestRefusedSpansSurviveAKill(t *testing.T) {
	cfg := coreConfig()
	input := readTraces(t, filepath.Join(goldenDir, "default_preset_3_rollouts", "input.json"))
	want := runPlan(t, coreConfig(), []ptrace.Traces{copyTraces(input)}, true)
	for plan, batches := range arrivalPlans(input, 2) {
		t.Run(plan, func(t *testing.T) {
			next := gymtest.NewRefusingTraces(gymtest.RefuseWhole, true)
			h := newCrashHarnessWithNext(t, cfg, next)
			for _, b := range batches {
				h.consume(copyTraces(b))
				h.clock.Advance(time.Millisecond)
			}
			h.tickAt(3 * cfg.RolloutWait)
			require.Positive(t, h.store.count("held/"), "the refused batches are in the held range")
			h.kill()
			h.start()
			require.Positive(t, h.p.red.spans.Load(), "and queued again at the start")
			next.SetDown(false)
			drainRefused(t, h.p, h.clock, h.tickAt)
			require.NoError(t, h.p.Shutdown(context.Background()))
			assertSameSpans(t, want, normalize(next.Sink.AllTraces()), plan)
			assert.Zero(t, h.store.count("held/"), "the held range is empty once all was taken")
			assert.Zero(t, h.store.count("g"), "an orderly shutdown leaves an empty journal")
		})
	}
}

// When the storage cannot keep the refused batches either (the journal is
// on the full disk too), their rounds stay unmarked: no checkpoint covers
// them, and a kill -9 replays them; once the storage takes writes again,
// the next attempt writes them to the held range first.
func TestRefusedSpansTheStorageCannotKeepAreReplayed(t *testing.T) {
	cfg := coreConfig()
	input := readTraces(t, filepath.Join(goldenDir, "default_preset_3_rollouts", "input.json"))
	want := runPlan(t, coreConfig(), []ptrace.Traces{copyTraces(input)}, true)
	batches := arrivalPlans(input, 0)["one_by_one"]

	next := gymtest.NewRefusingTraces(gymtest.RefuseWhole, true)
	h := newCrashHarnessWithNext(t, cfg, next)
	h.store.failPrefix = "held"
	for _, b := range batches {
		h.consume(copyTraces(b))
	}
	h.tickAt(3 * cfg.RolloutWait)
	require.Zero(t, h.store.count("held/"))
	require.True(t, h.p.red.hasDebts())
	h.clock.Advance(checkpointEvery)
	h.p.checkpointIfDue(context.Background())
	require.Zero(t, h.store.count("g1/c/"), "no checkpoint while a round's refused output is only in memory")

	h.kill()
	h.store.failPrefix = ""
	h.start() // the replay hands the rounds on again; still refused, now kept in the held range
	require.False(t, h.p.red.hasDebts())
	require.Positive(t, h.store.count("held/"))
	next.SetDown(false)
	drainRefused(t, h.p, h.clock, h.tickAt)
	require.NoError(t, h.p.Shutdown(context.Background()))
	assertSameSpans(t, want, normalize(next.Sink.AllTraces()), "one_by_one")

	// Without a kill, the next attempt writes them to the held range once
	// the storage takes writes again, and the rounds are marked.
	next = gymtest.NewRefusingTraces(gymtest.RefuseWhole, true)
	h = newCrashHarnessWithNext(t, coreConfig(), next)
	h.store.failPrefix = "held"
	for _, b := range batches {
		h.consume(copyTraces(b))
	}
	require.True(t, h.p.red.hasDebts())
	h.store.failPrefix = ""
	h.tickAt(redeliverMaxBackoff)
	require.False(t, h.p.red.hasDebts())
	require.Positive(t, h.store.count("held/"))
}

// At a pending bound, with spans waiting for redelivery, a batch is refused
// with a retryable error (the sender keeps it), counted; once the next
// consumer takes the spans again, batches are taken again.
func TestAtTheBoundBatchesAreRefusedUpstream(t *testing.T) {
	cfg := coreConfig()
	cfg.MaxPendingSpans = 30
	next := gymtest.NewRefusingTraces(gymtest.RefuseWhole, true)
	h := newHarnessWithNext(t, cfg, next)
	input := readTraces(t, filepath.Join(goldenDir, "default_preset_3_rollouts", "input.json"))
	batches := arrivalPlans(input, 0)["one_by_one"]
	var refusedAt int
	for i, b := range batches {
		if err := h.p.ConsumeTraces(context.Background(), copyTraces(b)); err != nil {
			assert.False(t, consumererror.IsPermanent(err), "retryable: %v", err)
			assert.ErrorContains(t, err, "max_pending_spans")
			refusedAt = i
			break
		}
	}
	require.Positive(t, refusedAt, "a batch is refused at the bound")
	assert.GreaterOrEqual(t, h.p.red.spans.Load()+int64(h.pending()), int64(cfg.MaxPendingSpans))
	assert.Equal(t, int64(1), h.metricSum("otelcol_processor_gym_batches_refused"))

	next.SetDown(false)
	drainRefused(t, h.p, h.clock, h.tickAt)
	for _, b := range batches[refusedAt:] {
		h.consume(copyTraces(b))
	}
	h.tickAt(3 * cfg.RolloutWait)
	h.shutdown()
	want := runPlan(t, coreConfig(), []ptrace.Traces{copyTraces(input)}, true)
	assertSameSpans(t, want, normalize(next.Sink.AllTraces()), "refused at the bound, sent again")
}

// A permanent error is not retried: the spans are dropped, counted and
// logged, and nothing waits for redelivery.
func TestPermanentRefusalIsNotRetried(t *testing.T) {
	next := gymtest.NewRefusingTraces(gymtest.RefusePermanently, true)
	h := newHarnessWithNext(t, coreConfig(), next)
	input := readTraces(t, filepath.Join(goldenDir, "default_preset_3_rollouts", "input.json"))
	h.consume(input)
	h.tickAt(3 * coreConfig().RolloutWait)
	assert.Zero(t, h.p.red.spans.Load())
	assert.Equal(t, int64(40), h.metricSum("otelcol_processor_gym_spans_dropped"))
	assert.Equal(t, int64(40), h.metricSum(metricDownstreamFailed))
}

// What the user reads: one error line per heldLogEvery naming the next
// consumer's error and the spans held, the gauge of spans held, and a line
// when they were all handed on.
func TestRedeliveryIsLoggedOncePerIntervalAndMeasured(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	next := gymtest.NewRefusingTraces(gymtest.RefuseWhole, true)
	h := newHarnessWithNext(t, coreConfig(), next)
	h.p.logger = zap.New(core)
	h.p.diag = newDiagnostics(h.p.logger, h.clock)
	input := readTraces(t, filepath.Join(goldenDir, "default_preset_3_rollouts", "input.json"))
	for _, b := range arrivalPlans(input, 0)["one_by_one"] {
		h.consume(copyTraces(b))
	}
	for range 5 {
		h.tickAt(time.Second)
	}
	held := logs.FilterMessageSnippet("spans held for redelivery").All()
	require.Len(t, held, 1, "one line within heldLogEvery")
	assert.Equal(t, zapcore.ErrorLevel, held[0].Level)
	assert.Contains(t, held[0].Message, gymtest.ErrDiskFull.Error()+"; ")
	n := h.p.red.spans.Load()
	require.Positive(t, n)
	assert.Equal(t, n, h.metricSum("otelcol_processor_gym_redelivery_spans"))

	h.tickAt(heldLogEvery)
	assert.Len(t, logs.FilterMessageSnippet("spans held for redelivery").All(), 2, "and one more after heldLogEvery")

	next.SetDown(false)
	drainRefused(t, h.p, h.clock, h.tickAt)
	assert.Len(t, logs.FilterMessageSnippet("the next consumer takes spans again").All(), 1)
	assert.Zero(t, h.metricSum("otelcol_processor_gym_redelivery_spans"))
}

// Without storage, what the next consumer still refuses at shutdown is
// lost, and Shutdown says how much; with storage it stays in the held
// range and the journal is kept for the next start.
func TestRefusedAtShutdown(t *testing.T) {
	input := readTraces(t, filepath.Join(goldenDir, "default_preset_3_rollouts", "input.json"))
	next := gymtest.NewRefusingTraces(gymtest.RefuseWhole, true)
	h := newHarnessWithNext(t, coreConfig(), next)
	h.consume(copyTraces(input))
	err := h.p.Shutdown(context.Background())
	require.ErrorContains(t, err, "without storage they are lost")

	ch := newCrashHarnessWithNext(t, coreConfig(), next)
	ch.consume(copyTraces(input))
	require.NoError(t, ch.p.Shutdown(context.Background()))
	held := ch.store.count("held/")
	require.Positive(t, held)
	next.SetDown(false)
	ch.start()
	drainRefused(t, ch.p, ch.clock, ch.tickAt)
	require.NoError(t, ch.p.Shutdown(context.Background()))
	want := runPlan(t, coreConfig(), []ptrace.Traces{copyTraces(input)}, true)
	assertSameSpans(t, want, normalize(next.Sink.AllTraces()), "held across an orderly restart")
}
