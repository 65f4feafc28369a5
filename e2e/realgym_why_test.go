// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// checkRealGymWhy (issue #37, acceptance 2, the viewer's part): on the
// real run's capture dir and the output `gym eval run --output` wrote,
// `otelcol-gym view --gym-output` shows in Chromium every rollout's time
// split (the bar, the columns and the run's percentiles) and Gym's reward
// and health verdict, as the files say (viewer_why_test.go).
func checkRealGymWhy(t *testing.T, m realGymMode, run *realGymRun) {
	t.Helper()
	chromiumPath(t)
	gymOut := filepath.Join(run.dir, "gym-output")
	e := readWhyExpect(t, run.captureDir, gymOut, m.runID)
	require.Len(t, e.ids, len(run.rollouts))
	require.Len(t, e.split, len(e.ids), "every rollouts.jsonl line of the run has a time_split_ms")
	require.Len(t, e.reward, len(e.ids), "Gym's output has a reward for every rollout")
	require.Len(t, e.verdict, len(e.ids), "Gym's rollout_verdicts.jsonl has a verdict for every rollout")
	v := startViewer(t, run.captureDir, "--gym-output", gymOut)
	b := newBrowser(t, v.base)
	shots := shotsDir(t)
	checkWhyList(t, b, e, m.runID, shots)
	checkWhyRollouts(t, b, e, m.runID, shots)
	b.clean()
}
