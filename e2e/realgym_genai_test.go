// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"path/filepath"
	"testing"
)

// checkRealGymGenAI (issue #26, design §4.7): every model-call span of the
// real run, in the rollout files and in the OTLP the collector sent on (when
// it sent its traces on: run.forwarded), carries its capture line's GenAI
// attributes (tokens, models, response id), and the metrics' token sums
// equal the sums of Gym's capture lines (the stub model's usage varies by
// call).
func checkRealGymGenAI(t *testing.T, run *realGymRun) {
	t.Helper()
	checkGenAI(t, run.captureDir, run.forwarded, filepath.Join(run.captureDir, "otel-metrics.jsonl"))
	checkPhoenix(t, run) // realgym_phoenix_test.go
	checkScores(t, run)  // realgym_scores_test.go
}
