// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReplayOracle (issue #56 acceptance 1): gymsim's default preset, with
// re-dispatched attempts and model errors, is sent at once to upstream's
// file exporter (a `gym eval submit` job's otel/traces.jsonl, the ingest
// token on every resource as Gym's submit rendering puts it) and to gym →
// gymspans. `otelcol-gym replay` of the job dir into its model-calls/ then
// gives, per rollout, the live run's span ids in the rollout's file, the
// live run's rollouts.jsonl rows and service-map edges; no credential is written, and the summary
// says how many were dropped and which viewer command shows the job.
func TestReplayOracle(t *testing.T) {
	const rollouts = 200
	const token = "Bearer e2e-ingest-token"
	dir := t.TempDir()
	live := filepath.Join(dir, "live")
	job := filepath.Join(dir, "job")
	for _, d := range []string{live, filepath.Join(job, "otel"), filepath.Join(job, "artifacts")} {
		require.NoError(t, os.MkdirAll(d, 0o750))
	}
	tmpl, err := os.ReadFile(filepath.Join("testdata", "replay_oracle_collector.yaml"))
	require.NoError(t, err)
	p := newPorts(t)
	col := startCollector(t, p, nil, "--config", writeFile(t, dir, "collector.yaml", p.expand(string(tmpl), live)))

	args := []string{
		fmt.Sprintf("--rollouts=%d", rollouts), "--concurrency=16", "--preset=default", "--run-id=" + gymsimRunID,
		"--retry-rate=0.1", "--error-rate=0.05", "--batch-delay=200ms", "--blocking",
		"--capture-dir=" + live, fmt.Sprintf("--endpoint=127.0.0.1:%d", p.GRPC),
	}
	out, err := runCmd(t, 3*time.Minute, []string{"OTEL_RESOURCE_ATTRIBUTES=Authorization=" + strings.ReplaceAll(token, " ", "%20")}, gymsimBinary(t), args...)
	require.NoError(t, err, "gymsim:\n%s", out)
	require.NoError(t, col.stop(), "collector exit")
	raw, err := os.ReadFile(filepath.Join(job, "otel", "traces.jsonl"))
	require.NoError(t, err)
	require.Contains(t, string(raw), "e2e-ingest-token", "the file exporter's output holds the token, as a submitted job's does")

	start := time.Now()
	out, err = runCmd(t, 5*time.Minute, nil, collectorBinary(t), "replay", job)
	elapsed := time.Since(start)
	require.NoError(t, err, "otelcol-gym replay:\n%s", out)
	t.Logf("replay of %d rollouts (%d bytes of OTLP/JSON) took %v:\n%s", rollouts, len(raw), elapsed.Round(time.Millisecond), out)
	replayed := filepath.Join(job, "model-calls")

	liveFiles, replayFiles := rolloutFiles(t, live), rolloutFiles(t, replayed)
	require.GreaterOrEqual(t, len(liveFiles), rollouts, "a file per rollout in the live run")
	assert.Equal(t, keys(liveFiles), keys(replayFiles), "the same rollout files")
	for name, ids := range liveFiles {
		assert.Equal(t, ids, replayFiles[name], "span ids in %s", name)
	}
	liveRows, replayRows := rolloutRows(t, live), rolloutRows(t, replayed)
	require.GreaterOrEqual(t, len(liveRows), rollouts)
	assert.Equal(t, liveRows, replayRows, "rollouts.jsonl rows")
	liveEdges := serviceMapWhole(t, live)
	require.NotEmpty(t, liveEdges)
	assert.Equal(t, liveEdges, serviceMapWhole(t, replayed), "service-map edges")

	// The live capture dir replays into the same rollout files and edges
	// again (its spans.jsonl is console-shaped; the gym processor's rewrite
	// is idempotent). Not the same rollouts.jsonl rows: spans.jsonl holds a
	// root before some of its rollout's spans, and a row's time split and
	// error count are of the spans that reached the exporter by the root's
	// batch (design §10).
	again := filepath.Join(dir, "again")
	out2, err := runCmd(t, 5*time.Minute, nil, collectorBinary(t), "replay", "--capture-dir", again, live)
	require.NoError(t, err, "otelcol-gym replay of the capture dir:\n%s", out2)
	assert.Equal(t, liveFiles, rolloutFiles(t, again), "span ids per rollout file, replayed from the capture dir")
	assert.Len(t, rolloutRows(t, again), len(liveRows), "rollouts.jsonl rows, replayed from the capture dir")
	assert.Equal(t, liveEdges, serviceMapWhole(t, again), "service-map edges, replayed from the capture dir")

	entries, err := os.ReadDir(replayed)
	require.NoError(t, err)
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(replayed, e.Name()))
		require.NoError(t, err)
		assert.NotContains(t, string(b), "e2e-ingest-token", "%s holds the ingest token", e.Name())
	}
	assert.Contains(t, out, "attributes that carry credentials (Authorization)")
	assert.Contains(t, out, "otelcol-gym view --capture-dir "+replayed+" --gym-output "+filepath.Join(job, "artifacts"))
}

// serviceMapWhole is every edge of dir's service_map.json (run, client,
// server, calls, errors, latency), sorted.
func serviceMapWhole(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "service_map.json"))
	require.NoError(t, err)
	var m struct {
		Edges []struct {
			Run       string          `json:"run"`
			Client    string          `json:"client"`
			Server    string          `json:"server"`
			Calls     uint64          `json:"calls"`
			Errors    uint64          `json:"errors"`
			LatencyMS json.RawMessage `json:"latency_ms"`
		} `json:"edges"`
	}
	require.NoError(t, json.Unmarshal(b, &m))
	var out []string
	for _, e := range m.Edges {
		b, err := json.Marshal(e)
		require.NoError(t, err)
		out = append(out, string(b))
	}
	sort.Strings(out)
	return out
}

// rolloutFiles maps each <rollout>.spans.jsonl of dir to its sorted span ids.
func rolloutFiles(t *testing.T, dir string) map[string][]string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.spans.jsonl"))
	require.NoError(t, err)
	out := map[string][]string{}
	for _, p := range paths {
		var ids []string
		for _, s := range readJSONLines[outSpan](t, p) {
			ids = append(ids, s.SpanID)
		}
		sort.Strings(ids)
		out[filepath.Base(p)] = ids
	}
	return out
}

// rolloutRows are dir's rollouts.jsonl rows, whole (rollout, run, trace,
// root span, times, status, errors, service, name, time split), sorted.
func rolloutRows(t *testing.T, dir string) []string {
	t.Helper()
	var rows []string
	for _, r := range readJSONLines[map[string]any](t, filepath.Join(dir, "rollouts.jsonl")) {
		b, err := json.Marshal(r)
		require.NoError(t, err)
		rows = append(rows, string(b))
	}
	sort.Strings(rows)
	return rows
}
