// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// checkRealGymReplayed (issue #56, acceptance 2, its file-exporter half):
// every live real-Gym run also wrote each OTLP request as it reached the
// collector with upstream's `file` exporter (realgym_collector.yaml's
// file/record: one ExportTraceServiceRequest a line, the shape of a
// `gym eval submit` job's otel/traces.jsonl). `otelcol-gym replay` of that
// file, beside a copy of Gym's captures, writes what the live run wrote:
// every rollout's spans file beside its capture, holding the same spans,
// every span with its rollout id, and GenAI on every model call.
func checkRealGymReplayed(t *testing.T, run *realGymRun) {
	t.Helper()
	record := filepath.Join(run.dir, "otlp-requests.jsonl")
	if _, err := os.Stat(record); err != nil || !run.live {
		return // a run through the quickstart's own collector records nothing
	}
	t.Run("replayed", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "replayed")
		copyCaptures(t, run.captureDir, out)
		start := time.Now()
		log, err := runCmd(t, 2*time.Minute, nil, collectorBinary(t), "replay", "--capture-dir", out, record)
		require.NoError(t, err, "otelcol-gym replay:\n%s", log)
		t.Logf("replayed %s in %s:\n%s", filepath.Base(record), time.Since(start).Round(time.Millisecond), log)

		live, replayed := rolloutFiles(t, run.captureDir), rolloutFiles(t, out)
		for _, r := range run.rollouts {
			name := r + ".spans.jsonl"
			assert.FileExists(t, filepath.Join(out, r+".capture.jsonl"))
			if !assert.Contains(t, replayed, name, "%s beside its capture after the replay", name) {
				continue
			}
			if !run.timingsEdited { // a replay runs with the default waits
				assert.Equal(t, live[name], replayed[name], "the span ids of %s, live and replayed", name)
			}
			for _, s := range readJSONLines[outSpan](t, filepath.Join(out, name)) {
				assert.Equal(t, r, s.str("nemo.gym.rollout.id"), "span %s (%s) in the replayed %s", s.SpanID, s.Name, name)
			}
		}
		assert.ElementsMatch(t, keys(rolloutsFileIDs(filepath.Join(run.captureDir, "rollouts.jsonl"))),
			keys(rolloutsFileIDs(filepath.Join(out, "rollouts.jsonl"))), "rollouts.jsonl names the same rollouts")
		checkGenAI(t, out, "", "") // every model call's capture line on its span
	})
}
