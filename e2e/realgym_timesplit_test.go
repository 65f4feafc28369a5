// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"encoding/json"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The names of the time split (design §4.8), spelled out as a user reads
// them.
var splitCategories = []string{"model", "tools", "verify", "agent", "queue", "other"}

const splitMetric = "nemo.gym.rollout.category.duration"

// checkRealGymTimeSplit (issue #37, acceptance 2): every rollout's
// rollouts.jsonl line has time_split_ms, every category, each >= 0, summing
// to the root's duration within 0.006 ms, with model and verify time (every
// rollout of these runs calls the model and verifies); in a live run
// (the collector started before Gym, so it saw every span of every rollout)
// the metrics have one point per rollout and category for the run, their
// sums the lines' sums.
func checkRealGymTimeSplit(t *testing.T, m realGymMode, run *realGymRun) {
	t.Helper()
	lineSums := map[string]float64{}
	n := 0
	eachFileLine(t, filepath.Join(run.captureDir, "rollouts.jsonl"), func(b []byte) {
		var l struct {
			Rollout string             `json:"rollout_id"`
			Start   time.Time          `json:"start_time"`
			End     time.Time          `json:"end_time"`
			Split   map[string]float64 `json:"time_split_ms"`
		}
		require.NoError(t, json.Unmarshal(b, &l))
		n++
		if !assert.NotNil(t, l.Split, "time_split_ms of rollout %s: %s", l.Rollout, b) {
			return
		}
		assert.Len(t, l.Split, len(splitCategories), "rollout %s: %s", l.Rollout, b)
		sum := 0.0
		for _, c := range splitCategories {
			v, ok := l.Split[c]
			assert.True(t, ok && v >= 0, "rollout %s: %s = %v", l.Rollout, c, v)
			assert.Equal(t, math.Round(v*1000)/1000, v, "rollout %s: %s has at most 3 decimals", l.Rollout, c)
			sum += v
			lineSums[c] += v
		}
		duration := float64(l.End.Sub(l.Start).Microseconds()) / 1000
		assert.InDelta(t, duration, sum, 0.006, "rollout %s: the parts sum to its duration", l.Rollout)
		assert.Positive(t, l.Split["model"], "rollout %s calls the model: %s", l.Rollout, b)
		assert.Positive(t, l.Split["verify"], "rollout %s is verified: %s", l.Rollout, b)
	})
	assert.Equal(t, len(run.rollouts), n, "rollouts.jsonl lines")
	t.Logf("time split of %d rollouts, ms in all: %v", n, lineSums)
	if !run.live {
		return // a replay's spans are older than its collector: the connector leaves them out
	}
	counts, sums := splitMetricPoints(t, filepath.Join(run.captureDir, "otel-metrics.jsonl"), m.runID)
	for _, c := range splitCategories {
		assert.Equal(t, uint64(len(run.rollouts)), counts[c], "%s{category=%s} count", splitMetric, c)
		assert.InDelta(t, lineSums[c]/1000, sums[c], 1e-5*float64(len(run.rollouts)), "%s{category=%s} sum (s) = the lines' sum", splitMetric, c)
	}
	t.Logf("%s of run %s: counts %v, sums (s) %v", splitMetric, m.runID, counts, sums)
}

// splitMetricPoints returns the count and sum of the last point of each
// category of the time-split histogram of run in the metrics file (the
// points are cumulative).
func splitMetricPoints(t *testing.T, path, run string) (map[string]uint64, map[string]float64) {
	t.Helper()
	counts, sums := map[string]uint64{}, map[string]float64{}
	for _, dp := range lastHistogramPoints(t, path, splitMetric) { // genai_test.go
		if attrStr(dp.Attributes(), "nemo.run.id") == run {
			c := attrStr(dp.Attributes(), "nemo.gym.rollout.category")
			counts[c], sums[c] = dp.Count(), dp.Sum()
		}
	}
	require.NotEmpty(t, counts, "no %s of run %s in %s", splitMetric, run, path)
	return counts, sums
}
