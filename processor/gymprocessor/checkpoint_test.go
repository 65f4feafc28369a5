// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"pgregory.net/rapid"
)

// event is one thing that happens to an engine: a batch arriving, or a
// timer tick, at a time.
type event struct {
	at    int64
	batch ptrace.Traces // zero for a tick
	tick  bool
}

// drawSchedule spreads batches over time with timer ticks between them,
// some past settle, wait and rollout_wait.
func drawSchedule(t *rapid.T, cfg *Config, batches []ptrace.Traces) []event {
	base := time.Date(2026, 8, 21, 12, 0, 0, 0, time.UTC).UnixNano()
	now := base
	var evs []event
	gaps := []time.Duration{0, time.Millisecond, cfg.Settle / 2, cfg.Settle, cfg.Wait, cfg.RolloutWait}
	for _, b := range batches {
		now += int64(rapid.SampledFrom(gaps).Draw(t, "gap"))
		if rapid.Bool().Draw(t, "tickBefore") {
			evs = append(evs, event{at: now, tick: true})
		}
		evs = append(evs, event{at: now, batch: b})
	}
	for range rapid.IntRange(1, 4).Draw(t, "ticksAfter") {
		now += int64(rapid.SampledFrom(gaps).Draw(t, "gapAfter"))
		evs = append(evs, event{at: now, tick: true})
	}
	return evs
}

// play runs one event and returns the round's output as OTLP/JSON, as the
// processor would hand it on (edits applied, spans assembled).
func play(t require.TestingT, e *engine, ev event) string {
	var r *round
	if ev.tick {
		r = e.flush(ev.at, false)
	} else {
		td := copyTraces(ev.batch)
		f := e.prepare(td)
		r = e.consume(td, f, ev.at)
		f.release()
	}
	r.applyEdits(e.cfg.RolloutAttribute)
	r.assemble()
	b, err := (&ptrace.JSONMarshaler{}).MarshalTraces(r.out)
	require.NoError(t, err)
	r.recycle()
	return string(b)
}

// An engine restored from a checkpoint decides and emits exactly as the
// engine the checkpoint was taken from, round by round, whatever the
// forest, arrival plan, schedule and bounds.
func TestPropertyCheckpointRestoreIsExact(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		cfg := testConfig()
		if rapid.Bool().Draw(rt, "bounded") {
			cfg.MaxPendingSpans = rapid.IntRange(1, 12).Draw(rt, "maxSpans")
			cfg.MaxPendingBytes = int64(rapid.IntRange(600, 6000).Draw(rt, "maxBytes"))
		}
		cfg.Split.Enabled = rapid.IntRange(0, 4).Draw(rt, "split") > 0
		spans := genForest(rt, rapid.Bool().Draw(rt, "chaos"))
		evs := drawSchedule(rt, cfg, drawPlan(rt, buildForest(spans)))
		cut := rapid.IntRange(0, len(evs)).Draw(rt, "checkpointAfter")

		whole, err := newEngine(cfg)
		require.NoError(rt, err)
		var want []string
		for _, ev := range evs {
			want = append(want, play(rt, whole, ev))
		}

		before, err := newEngine(cfg)
		require.NoError(rt, err)
		for _, ev := range evs[:cut] {
			play(rt, before, ev)
		}
		snap := before.snapshot()
		after, err := newEngine(cfg)
		require.NoError(rt, err)
		require.NoError(rt, after.restore(snap))
		for i, ev := range evs[cut:] {
			require.Equal(rt, want[cut+i], play(rt, after, ev), "round %d after a checkpoint after round %d", cut+i, cut)
		}
		shutdown := func(e *engine) string {
			r := e.flush(evs[len(evs)-1].at, true)
			r.applyEdits(cfg.RolloutAttribute)
			r.assemble()
			b, err := (&ptrace.JSONMarshaler{}).MarshalTraces(r.out)
			require.NoError(rt, err)
			return string(b)
		}
		require.Equal(rt, shutdown(whole), shutdown(after), "shutdown")
	})
}

// A checkpoint that is cut short or altered is refused, never half-applied.
func TestCheckpointCorruptIsRefused(t *testing.T) {
	cfg := testConfig()
	e, err := newEngine(cfg)
	require.NoError(t, err)
	td := readTraces(t, "../../testdata/default_preset_3_rollouts/input.json")
	play(t, e, event{at: 1, batch: td})
	snap := e.snapshot()
	for n := range len(snap) {
		fresh, err := newEngine(cfg)
		require.NoError(t, err)
		require.Error(t, fresh.restore(snap[:n]), "a checkpoint cut at %d of %d bytes", n, len(snap))
	}
	fresh, err := newEngine(cfg)
	require.NoError(t, err)
	require.NoError(t, fresh.restore(snap))
}
