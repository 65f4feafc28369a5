// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestViewerMaxRollouts: past --max-rollouts the viewer lets its oldest
// rows go and says so where it matters, read by headless Chromium from
// `otelcol-gym view`: the runs page still counts every rollout and marks
// the run, the run's page lists the newest under a banner that says how
// many are not listed and how to list more, and the log says it once.
func TestViewerMaxRollouts(t *testing.T) {
	chromiumPath(t)
	dir := boundCaptureDir(t)

	v := startViewer(t, dir, "--max-rollouts=16")
	br := newBrowser(t, v.base)
	br.open("/", `document.querySelector('#runs tbody tr[data-run]') && document.getElementById('not-kept-note')`)
	assert.Equal(t, "40*", evalJS[string](br, `document.querySelector('#runs tbody tr[data-run] td:nth-child(2)').textContent`), "every rollout counted, the run marked")
	assert.Contains(t, evalJS[string](br, `document.getElementById('not-kept-note').textContent`), "keeps the newest 16 rollouts")

	br.click(`#runs tbody tr[data-run] td.id a`)
	br.wait(`document.body.dataset.page === 'run' && document.getElementById('not-kept-banner') && document.querySelectorAll('#rollouts tbody tr[data-id]').length > 0`)
	banner := evalJS[string](br, `document.getElementById('not-kept-banner').textContent`)
	listed := evalJS[[]string](br, `Array.from(document.querySelectorAll('#rollouts tbody tr[data-id]')).map((r) => r.dataset.id)`)
	require.NotEmpty(t, listed)
	require.LessOrEqual(t, len(listed), 16)
	assert.Contains(t, banner, fmt.Sprintf("%d of this run's oldest rollouts are not listed, nor in the figures below.", 40-len(listed)))
	for _, s := range []string{"keeps the newest 16 rollouts", "max_rollouts", "otelcol-gym view --max-rollouts"} {
		assert.Contains(t, banner, s)
	}
	for _, id := range listed {
		var n int
		_, err := fmt.Sscanf(id, "%d-0", &n)
		require.NoError(t, err)
		assert.GreaterOrEqual(t, n, 40-len(listed), "rollout %s: only the newest are listed", id)
	}
	br.shot(shotsDir(t), "max-rollouts-run.png")
	br.clean()

	require.Eventually(t, func() bool { return strings.Count(v.out.String(), "The viewer keeps the newest rollouts only") == 1 },
		10*time.Second, 10*time.Millisecond, "the log says it once:\n%s", v.out.String())
	assert.Contains(t, v.out.String(), `"max_rollouts": 16`)
}

// boundCaptureDir is a capture dir whose rollouts.jsonl has 40 rollouts of
// run boundrun, started a second apart.
func boundCaptureDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "captures")
	require.NoError(t, os.Mkdir(dir, 0o750))
	var b strings.Builder
	for i := range 40 {
		fmt.Fprintf(&b, `{"rollout_id":"%d-0","run_id":"boundrun","trace_id":"%032x","root_span_id":"%016x","start_time":"2026-08-21T12:00:%02d.000000Z","end_time":"2026-08-21T12:01:00.000000Z","status":"OK","error_count":0,"service_name":"nemo-gym/orchestrator","name":"HTTP POST"}`+"\n",
			i, i+1, i+1, i)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rollouts.jsonl"), []byte(b.String()), 0o640))
	return dir
}

// TestViewerMaxRolloutsInCollector: the gymview extension of the shipped
// standalone config, with max_rollouts set, lets the oldest rows go, its
// runs page still counts every rollout, and the collector's metric
// otelcol_extension_gymview_rollouts_not_kept says how many were let go.
func TestViewerMaxRolloutsInCollector(t *testing.T) {
	dir := boundCaptureDir(t)
	p := newPorts(t)
	col := startCollector(t, p, []string{"NEMO_GYM_CAPTURE_DIR=" + dir},
		"--config", writeFile(t, t.TempDir(), "standalone.yaml", standaloneOnPorts(t, p)),
		"--set=extensions::gymview::max_rollouts=16")
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/api/runs", p.View))
	require.NoError(t, err)
	var runs struct {
		Runs []struct {
			Run      string `json:"run"`
			Rollouts int    `json:"rollouts"`
			NotKept  int    `json:"not_kept"`
		} `json:"runs"`
		MaxRollouts int `json:"max_rollouts"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&runs))
	resp.Body.Close()
	require.Len(t, runs.Runs, 1)
	assert.Equal(t, 16, runs.MaxRollouts)
	assert.Equal(t, 40, runs.Runs[0].Rollouts, "every rollout counted")
	notKept := runs.Runs[0].NotKept
	assert.GreaterOrEqual(t, notKept, 40-16)

	// The watcher records it on its next round (every 2 s).
	require.Eventually(t, func() bool {
		v, ok := scrapeMetric(t, p.Metrics, "otelcol_extension_gymview_rollouts_not_kept")
		return ok && int(v) == notKept
	}, 30*time.Second, 100*time.Millisecond, "otelcol_extension_gymview_rollouts_not_kept = %d", notKept)
	require.NoError(t, col.stop())
	assert.Contains(t, col.stderr.String(), "The viewer keeps the newest rollouts only", "the log says it")
}
