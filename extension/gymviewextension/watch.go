// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymviewextension // import "github.com/otelcol-gym/otelcol-gym/extension/gymviewextension"

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/otelcol-gym/otelcol-gym/extension/gymviewextension/internal/metadata"
	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
	"github.com/otelcol-gym/otelcol-gym/internal/gymview"
)

const (
	// watchEvery is how often the watcher looks at the capture dir (with a
	// short stalled_after, five times within it).
	watchEvery = 2 * time.Second
	// warnEvery rate-limits the telemetry-off warning: it repeats only when
	// more capture-only rollouts came since.
	warnEvery = 10 * time.Minute
	// maxStallLines bounds the stalled rollouts logged one by one a round.
	maxStallLines = 20
)

// telemetryOff is the warning of a run whose rollouts write captures and
// send no span (design §4.5, §8): what it means, why, and the fix.
const telemetryOff = "Gym's telemetry is off: rollouts write model-call captures to the capture dir, but no span of theirs " +
	"arrived within 30s, so there is no trace, no <rollout_id>.spans.jsonl and no rollouts.jsonl line for them. " +
	"Likely causes: nemo-gym installed from the package index brings nemo-lens 0.1.0, which lacks what Gym imports, " +
	"and Gym then switches its telemetry off without a word (only its DEBUG log says \"nemo-lens is not installed\"); " +
	"or the Gym servers did not inherit the telemetry environment (NEMO_GYM_OTEL_ENABLED, OTEL_EXPORTER_OTLP_ENDPOINT). " +
	"Fix: start Gym under `otelcol-gym instrument -- gym ...`, which makes every Gym process send its spans here. " +
	"Meanwhile the viewer lists these rollouts from their captures."

// watcher logs and counts what the viewer's live state finds: rollouts
// whose spans never come (Gym's telemetry is off) and rollouts that stall.
// It owns its fields; one goroutine runs it.
type watcher struct {
	watch  func() gymview.LiveReport // Handler.Watch
	log    *zap.Logger
	tel    *metadata.TelemetryBuilder
	dir    string
	every  time.Duration
	warned time.Time // the last telemetry-off warning
	unsaid int       // capture-only rollouts since then
}

func newWatcher(h *gymview.Handler, log *zap.Logger, tel *metadata.TelemetryBuilder, cfg *Config) *watcher {
	every := watchEvery
	if cfg.StalledAfter > 0 {
		every = min(every, max(cfg.StalledAfter/5, 100*time.Millisecond))
	}
	return &watcher{watch: h.Watch, log: log, tel: tel, dir: cfg.CaptureDir, every: every}
}

// run watches until stop is closed.
func (w *watcher) run(stop <-chan struct{}) {
	t := time.NewTicker(w.every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			w.round(context.Background(), time.Now())
		}
	}
}

// round reports one Watch: the log lines and the metrics.
func (w *watcher) round(ctx context.Context, now time.Time) {
	rep := w.watch()
	if rep.NoSpansNew > 0 {
		w.tel.ExtensionGymviewRolloutsWithoutSpans.Add(ctx, int64(rep.NoSpansNew))
		w.unsaid += rep.NoSpansNew
	}
	if w.unsaid > 0 && (w.warned.IsZero() || now.Sub(w.warned) >= warnEvery) {
		w.log.Warn(telemetryOff, zap.String("capture_dir", w.dir), zap.Int("rollouts_without_spans", rep.NoSpans),
			zap.Int("new_since_last_warning", w.unsaid), zap.Strings("for_example", rep.NoSpansIDs))
		w.warned, w.unsaid = now, 0
	}
	w.tel.ExtensionGymviewRolloutsNotKept.Record(ctx, int64(rep.NotKept))
	for run, n := range rep.Stalled {
		w.tel.ExtensionGymviewStalledRollouts.Record(ctx, int64(n), metric.WithAttributes(attribute.String(gymconv.RunAttribute, run)))
	}
	for i, s := range rep.NewStalls {
		if i == maxStallLines {
			w.log.Warn("More rollouts stalled; the viewer lists them all first on their run's page",
				zap.Int("not_logged", len(rep.NewStalls)-i), zap.String("capture_dir", w.dir))
			break
		}
		w.log.Warn("Rollout stalled: no sign of life for "+s.Idle.Round(time.Second).String(),
			zap.String("run", s.Run), zap.String("rollout", s.ID), zap.Time("last_seen", s.At),
			zap.String("last_seen_at", s.Seen), zap.String("waits_on", s.Waits), zap.String("how_known", s.Why))
	}
}
