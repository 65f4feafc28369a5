// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymviewextension

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-gym/otelcol-gym/extension/gymviewextension/internal/metadata"
	"github.com/otelcol-gym/otelcol-gym/extension/gymviewextension/internal/metadatatest"
	"github.com/otelcol-gym/otelcol-gym/internal/gymview"
)

// TestWatcherRounds: the watcher warns once that Gym's telemetry is off
// (again only after warnEvery, and only when more rollouts came), counts
// each capture-only rollout once, logs each stall once, and records the
// stalled rollouts per run, 0 for a run whose stall ended, and the rollouts
// whose rows the viewer let go.
func TestWatcherRounds(t *testing.T) {
	tt := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tt.Shutdown(context.Background())) })
	tel, err := metadata.NewTelemetryBuilder(tt.NewTelemetrySettings())
	require.NoError(t, err)
	core, logs := observer.New(zapcore.InfoLevel)
	var reports []gymview.LiveReport
	w := &watcher{log: zap.New(core), tel: tel, dir: "/data/captures", watch: func() gymview.LiveReport {
		r := reports[0]
		reports = reports[1:]
		return r
	}}
	stall := gymview.Stall{Run: "r1", ID: "3-1", Idle: 12 * time.Second, Seen: "nemo-gym/simple_agent: POST /get_weather",
		Waits: "nemo-gym/openai_model: POST /v1/responses", Why: "its last tool call returned"}
	reports = []gymview.LiveReport{
		{NoSpansNew: 2, NoSpans: 2, NoSpansIDs: []string{"0-0", "0-1"}, Stalled: map[string]int{}},
		{NoSpansNew: 3, NoSpans: 5, Stalled: map[string]int{"r1": 1}, NewStalls: []gymview.Stall{stall}},
		{NoSpans: 5, Stalled: map[string]int{"r1": 0}, NotKept: 15_625},
		{NoSpans: 5, Stalled: map[string]int{"r1": 0}, NotKept: 31_250},
	}
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	ctx := context.Background()
	w.round(ctx, t0)
	w.round(ctx, t0.Add(2*time.Second))
	w.round(ctx, t0.Add(warnEvery))
	w.round(ctx, t0.Add(2*warnEvery))

	offs := logs.FilterMessage(telemetryOff).All()
	require.Len(t, offs, 2, "once at first, again after warnEvery for the 3 that came since, then no more")
	assert.Equal(t, zapcore.WarnLevel, offs[0].Level)
	assert.Equal(t, int64(2), offs[0].ContextMap()["new_since_last_warning"])
	assert.Equal(t, int64(3), offs[1].ContextMap()["new_since_last_warning"])
	assert.Equal(t, "/data/captures", offs[0].ContextMap()["capture_dir"])
	for _, s := range []string{"Gym's telemetry is off", "nemo-lens 0.1.0", "did not inherit", "otelcol-gym instrument -- gym"} {
		assert.Contains(t, telemetryOff, s)
	}
	stalls := logs.FilterMessageSnippet("Rollout stalled").All()
	require.Len(t, stalls, 1)
	assert.Equal(t, "Rollout stalled: no sign of life for 12s", stalls[0].Message)
	assert.Equal(t, "nemo-gym/openai_model: POST /v1/responses", stalls[0].ContextMap()["waits_on"])

	metadatatest.AssertEqualExtensionGymviewRolloutsWithoutSpans(t, tt,
		[]metricdata.DataPoint[int64]{{Value: 5}}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualExtensionGymviewRolloutsNotKept(t, tt,
		[]metricdata.DataPoint[int64]{{Value: 31_250}}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualExtensionGymviewStalledRollouts(t, tt,
		[]metricdata.DataPoint[int64]{{Value: 0, Attributes: attribute.NewSet(attribute.String("nemo.run.id", "r1"))}},
		metricdatatest.IgnoreTimestamp())
}
