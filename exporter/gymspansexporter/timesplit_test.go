// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-gym/otelcol-gym/internal/gymtest"
)

// splitRollout is rollout r as the gym processor passes it on (the
// orchestrator's dispatch its root), split into the spans of the roles in
// first and the others.
func splitRollout(r string, first ...string) (ptrace.Traces, ptrace.Traces) {
	var a, b []gymtest.Span
	for _, s := range processedRollout(r, gymtest.RolloutOptions{Trace: r}, "dispatch", true) {
		if slices.Contains(first, strings.TrimPrefix(s.ID, r+"/")) {
			a = append(a, s)
		} else {
			b = append(b, s)
		}
	}
	return gymtest.Build(gymtest.Processes(), gymtest.ProcessOrder(), a), gymtest.Build(gymtest.Processes(), gymtest.ProcessOrder(), b)
}

// timeSplits returns the time_split_ms of each rollouts.jsonl line by
// rollout id (absent: not in the map).
func timeSplits(t *testing.T, dir string) map[string]map[string]float64 {
	out := map[string]map[string]float64{}
	for _, l := range readLines(t, filepath.Join(dir, "rollouts.jsonl")) {
		var line struct {
			Rollout string             `json:"rollout_id"`
			Split   map[string]float64 `json:"time_split_ms"`
		}
		require.NoError(t, json.Unmarshal([]byte(l), &line), l)
		if line.Split != nil {
			out[line.Rollout] = line.Split
		}
	}
	return out
}

// gymRolloutSplit is the split of gymtest.Rollout (milliseconds): the
// orchestrator's dispatch [0,64] → the agent's POST /run [1,63] →
// gym.rollout [2,61] → a model call [3,40] and a verify [41,60]; the ASGI
// spans are left out.
var gymRolloutSplit = map[string]float64{"model": 37, "tools": 0, "verify": 19, "agent": 6, "queue": 1, "other": 1}

// TestTimeSplitInRolloutsLine (design §4.8): a rollout whose spans come in
// two pushes, the root in the second, gets time_split_ms in its
// rollouts.jsonl line, with the combined file (the journal) and without.
func TestTimeSplitInRolloutsLine(t *testing.T) {
	for _, combined := range []string{"spans.jsonl", ""} {
		t.Run("combined_file="+combined, func(t *testing.T) {
			e, tel := newTestExporter(t, func(c *Config) { c.CombinedFile, c.RolloutRoots = combined, rootsMarked })
			startExporter(t, e)
			calls, rest := splitRollout("0-0", "client-model", "model-server", "model-recv", "model-send", "client-verify")
			require.NoError(t, e.pushTraces(context.Background(), calls))
			require.NoError(t, e.pushTraces(context.Background(), rest))
			require.NoError(t, e.shutdown(context.Background()))
			assert.Equal(t, map[string]map[string]float64{"0-0": gymRolloutSplit}, timeSplits(t, e.cfg.CaptureDir))
			assert.Equal(t, map[string]int64{"computed": 1}, metricByAttr(t, tel, "otelcol_exporter_gymspans_time_split_rollouts", "outcome"))
			assert.Equal(t, map[string]int64{"": 0}, metricByAttr(t, tel, "otelcol_exporter_gymspans_time_split_held_spans", ""),
				"no facts held once the root is written")
		})
	}
}

// TestTimeSplitLateSpans: spans that arrive after their root's line was
// written are counted, and the line stays as it was (the verify's time is
// the agent's, its spans having come late).
func TestTimeSplitLateSpans(t *testing.T) {
	e, tel := newTestExporter(t, func(c *Config) { c.RolloutRoots = rootsMarked })
	startExporter(t, e)
	late, rest := splitRollout("0-0", "client-verify", "verify-server", "verify-recv", "verify-send")
	require.NoError(t, e.pushTraces(context.Background(), rest))
	require.NoError(t, e.pushTraces(context.Background(), late))
	require.NoError(t, e.shutdown(context.Background()))
	want := map[string]float64{"model": 37, "tools": 0, "verify": 0, "agent": 25, "queue": 1, "other": 1}
	assert.Equal(t, map[string]map[string]float64{"0-0": want}, timeSplits(t, e.cfg.CaptureDir))
	assert.Equal(t, map[string]int64{"": 4}, metricByAttr(t, tel, "otelcol_exporter_gymspans_time_split_late_spans", ""))
}

// TestTimeSplitAfterRestart: a rollout first seen with spans older than the
// exporter whose file already holds lines (an exporter before this one
// wrote some of its spans) gets no split, counted as missed_spans; one whose
// file is new gets its split (a replay of a recorded run).
func TestTimeSplitAfterRestart(t *testing.T) {
	e, tel := newTestExporter(t, func(c *Config) { c.RolloutRoots = rootsMarked })
	require.NoError(t, os.WriteFile(filepath.Join(e.cfg.CaptureDir, "0-0.spans.jsonl"), []byte("{}\n"), 0o600))
	startExporter(t, e)
	_, first := splitRollout("0-0")
	_, second := splitRollout("0-1")
	require.NoError(t, e.pushTraces(context.Background(), first))
	require.NoError(t, e.pushTraces(context.Background(), second))
	require.NoError(t, e.shutdown(context.Background()))
	assert.Equal(t, map[string]map[string]float64{"0-1": gymRolloutSplit}, timeSplits(t, e.cfg.CaptureDir))
	assert.Equal(t, map[string]int64{"computed": 1, "missed_spans": 1}, metricByAttr(t, tel, "otelcol_exporter_gymspans_time_split_rollouts", "outcome"))
}

func TestTimeSplitOff(t *testing.T) {
	e, _ := newTestExporter(t, func(c *Config) { c.RolloutRoots, c.TimeSplit.Enabled = rootsMarked, false })
	require.Nil(t, e.split)
	startExporter(t, e)
	_, all := splitRollout("0-0")
	require.NoError(t, e.pushTraces(context.Background(), all))
	require.NoError(t, e.shutdown(context.Background()))
	lines := readLines(t, filepath.Join(e.cfg.CaptureDir, "rollouts.jsonl"))
	require.Len(t, lines, 1)
	assert.NotContains(t, lines[0], "time_split_ms")
}
