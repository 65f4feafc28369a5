// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymgenaiconnector

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
	"github.com/otelcol-gym/otelcol-gym/internal/gymtest"
	"github.com/otelcol-gym/otelcol-gym/internal/timesplit"
)

// clockAt stands still at t.
type clockAt time.Time

func (c clockAt) Now() time.Time { return time.Time(c) }

func (clockAt) NewTicker(time.Duration) (<-chan time.Time, func()) {
	return make(chan time.Time), func() {}
}

// processedRollouts are rollouts ids, each gymtest.Rollout as the gym
// processor passes it on with the split on (every span with the rollout id,
// the orchestrator's dispatch its root, without a parent) and moved by
// offset ms from the previous one.
func processedRollouts(ids ...string) ptrace.Traces {
	var spans []gymtest.Span
	for i, r := range ids {
		for _, s := range gymtest.Rollout(r, gymtest.RolloutOptions{Observability: true, Trace: r, Offset: int64(i) * 100}) {
			s.Attributes[gymconv.RolloutAttribute] = r
			if s.ID == r+"/dispatch" {
				s.Parent = ""
			}
			spans = append(spans, s)
		}
	}
	return gymtest.Build(gymtest.Processes(), gymtest.ProcessOrder(), spans)
}

// categorySums returns the count and sum (seconds) of each category's
// points of nemo.gym.rollout.category.duration in run.
func categorySums(t *testing.T, md pmetric.Metrics, run string) (map[string]uint64, map[string]float64) {
	counts, sums := map[string]uint64{}, map[string]float64{}
	eachPoint(md, metricRolloutCategory, func(attrs pcommon.Map, dp pmetric.HistogramDataPoint) {
		r, _ := attrs.Get(gymconv.RunAttribute)
		c, _ := attrs.Get(timesplit.CategoryAttribute)
		require.Equal(t, run, r.Str())
		counts[c.Str()] += dp.Count()
		sums[c.Str()] += dp.Sum()
	})
	return counts, sums
}

// TestRolloutCategoryHistograms (design §4.8): two finished rollouts of a
// run give one point per category each, the seconds of their splits
// (gymtest.Rollout: model 37 ms, verify 19, agent 6, queue 1, other 1 of
// 64), once however often their roots are delivered.
func TestRolloutCategoryHistograms(t *testing.T) {
	c, sink, _ := newTestConnectorWith(t, clockAt(gymtest.Base.Add(-time.Minute)), nil)
	td := processedRollouts("0-0", "0-1")
	require.NoError(t, c.ConsumeTraces(context.Background(), td))
	require.NoError(t, c.ConsumeTraces(context.Background(), td)) // a redelivery
	require.NoError(t, c.Shutdown(context.Background()))
	require.Len(t, sink.AllMetrics(), 1)
	counts, sums := categorySums(t, sink.AllMetrics()[0], gymtest.RunID)
	want := map[string]float64{"model": 0.074, "tools": 0, "verify": 0.038, "agent": 0.012, "queue": 0.002, "other": 0.002}
	for cat, v := range want {
		assert.Equal(t, uint64(2), counts[cat], cat)
		assert.InDelta(t, v, sums[cat], 1e-9, cat)
	}
	assert.Len(t, counts, len(want))
}

// TestRolloutCategoryHistogramsAfterRestart: a rollout first seen with a
// span older than the connector may have had spans an earlier process
// consumed: it is left out and counted (missed_spans).
func TestRolloutCategoryHistogramsAfterRestart(t *testing.T) {
	c, sink, tel := newTestConnectorWith(t, clockAt(gymtest.Base.Add(time.Minute)), nil)
	require.NoError(t, c.ConsumeTraces(context.Background(), processedRollouts("0-0")))
	require.NoError(t, c.Shutdown(context.Background()))
	assert.Empty(t, sink.AllMetrics(), "nothing recorded")
	m, err := tel.GetMetric("otelcol_connector_gymgenai_time_split_rollouts")
	require.NoError(t, err)
	byOutcome := map[string]int64{}
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		v, _ := dp.Attributes.Value("outcome")
		byOutcome[v.AsString()] += dp.Value
	}
	assert.Equal(t, map[string]int64{"missed_spans": 1}, byOutcome)
}
