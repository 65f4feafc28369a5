// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Capture-only and stalled rollouts in the viewer (issues #34 and #37,
// design §8), read by headless Chromium from `otelcol-gym view`.

// TestViewerCaptureOnly: a run of Gym whose telemetry is off (gymsim
// --telemetry=false: capture files, no span) is listed from its capture
// files alone, under the banner that says why there is no waterfall and
// how to fix it; a rollout's page shows its model exchanges and no
// waterfall.
func TestViewerCaptureOnly(t *testing.T) {
	chromiumPath(t)
	dir := filepath.Join(t.TempDir(), "captures")
	out, err := runCmd(t, 2*time.Minute, nil, gymsimBinary(t), "--telemetry=false", "--run-id=offrun", "--capture-dir="+dir,
		"--rollouts=4", "--concurrency=2", "--model-calls=2", "--error-rate=0", "--retry-rate=0")
	require.NoError(t, err, "gymsim:\n%s", out)
	// A capture dir of a run an hour ago: nothing more will come.
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 4, "one capture file per rollout and nothing else")
	hourAgo := time.Now().Add(-time.Hour)
	for _, e := range entries {
		require.NoError(t, os.Chtimes(filepath.Join(dir, e.Name()), hourAgo, hourAgo))
	}

	v := startViewer(t, dir, "--stalled-after=10s")
	b := newBrowser(t, v.base)
	b.open("/", `document.querySelector('#runs tbody tr[data-run]') && document.getElementById('no-spans-banner')`)
	banner := evalJS[string](b, `document.getElementById('no-spans-banner').textContent`)
	for _, s := range []string{"4 rollouts have model-call captures but no spans", "Gym's telemetry is off", "nemo-lens 0.1.0", "otelcol-gym instrument -- gym"} {
		assert.Contains(t, banner, s)
	}
	assert.Equal(t, "4", evalJS[string](b, `document.querySelector('#runs tbody tr[data-run] td:nth-child(2)').textContent`), "the run without an id, 4 rollouts")

	b.click(`#runs tbody tr[data-run] td.id a`)
	b.wait(`document.body.dataset.page === 'run' && document.querySelectorAll('#rollouts tbody tr.capture-only').length === 4`)
	assert.Contains(t, evalJS[string](b, `document.getElementById('no-spans-banner').textContent`), "this list shows what the capture files tell")
	rows := evalJS[[]string](b, `Array.from(document.querySelectorAll('#rollouts tbody tr.capture-only')).map((r) => r.innerText)`)
	for _, r := range rows {
		assert.Regexp(t, `capture only · tokens \d+ in / \d+ out · model `, r)
		assert.Contains(t, r, "OK")
	}
	assert.Equal(t, []int{2, 2, 2, 2}, evalJS[[]int](b, `Array.from(document.querySelectorAll('#rollouts tbody tr.capture-only td:nth-child(7)')).map((c) => +c.textContent)`),
		"two model calls each, from the capture lines")
	assert.Empty(t, evalJS[[]string](b, `Array.from(document.querySelectorAll('#stalled tr.stalled-row')).map((r) => r.dataset.id)`), "done: each answered its last call")
	b.shot(shotsDir(t), "capture-only-list.png")

	b.click(`#rollouts tbody tr.capture-only td.id a`)
	b.wait(`document.body.dataset.page === 'rollout' && document.querySelectorAll('#exchange-table tbody tr').length === 2`)
	assert.True(t, evalJS[bool](b, `document.getElementById('waterfall').hidden`), "no waterfall without spans")
	assert.Contains(t, evalJS[string](b, `document.getElementById('no-spans-banner').textContent`), "this page shows")
	b.shot(shotsDir(t), "capture-only-rollout.png")
	b.clean()
}

// TestViewerStalled: a rollout in flight whose last sign of life is older
// than --stalled-after is listed first on its run's page, with where it was
// last seen and the call it waits on; the runs page counts it, its page says
// so. The capture dir is a gymsim run the built collector wrote, one of
// whose rollouts never got its root (its rollouts.jsonl line is taken out):
// it stopped in flight.
func TestViewerStalled(t *testing.T) {
	chromiumPath(t)
	const run, stuck = "stallrun1", "0-1"
	dir := filepath.Join(t.TempDir(), "captures")
	col, p := viewerCollector(t, dir, "30s", "1s")
	out, err := runCmd(t, 2*time.Minute, nil, gymsimBinary(t), gymsimArgs(p, dir, run,
		"--rollouts=3", "--concurrency=3", "--preset=per_rollout", "--tool-calls=1", "--error-rate=0", "--retry-rate=0")...)
	require.NoError(t, err, "gymsim:\n%s", out)
	require.NoError(t, col.stop())
	dropRolloutLine(t, filepath.Join(dir, "rollouts.jsonl"), stuck)

	v := startViewer(t, dir, "--stalled-after=2s")
	b := newBrowser(t, v.base)
	b.open("/run?run="+run, `document.querySelector('#stalled tr.stalled-row')`)
	require.Equal(t, []string{stuck}, evalJS[[]string](b, `Array.from(document.querySelectorAll('#stalled tr.stalled-row')).map((r) => r.dataset.id)`))
	assert.True(t, evalJS[bool](b, `!!(document.getElementById('stalled').compareDocumentPosition(document.getElementById('rollouts')) & Node.DOCUMENT_POSITION_FOLLOWING)`),
		"the stalled rollouts come before the list")
	where := evalJS[string](b, `document.querySelector('#stalled tr.stalled-row td.seen').textContent`)
	waits := evalJS[string](b, `document.querySelector('#stalled tr.stalled-row td.waits').textContent`)
	assert.Contains(t, where, "nemo-gym/", "a Gym server")
	assert.Regexp(t, `^(nemo-gym/\S+: POST /\S+|the end of its /run)$`, waits)
	assert.Equal(t, "stalled", evalJS[string](b, fmt.Sprintf(`document.querySelector('#rollouts tbody tr[data-id=%q] .badge').textContent`, stuck)))
	t.Logf("stalled %s: last seen at %q, waits on %q", stuck, where, waits)
	b.shot(shotsDir(t), "stalled-list.png")

	b.click(`#stalled tr.stalled-row td.id a`)
	b.wait(`document.body.dataset.page === 'rollout' && document.getElementById('stall-line')`)
	assert.Equal(t, "stalled", evalJS[string](b, `document.getElementById('rollout-status').textContent`))
	assert.Contains(t, evalJS[string](b, `document.getElementById('stall-line').textContent`), "waits on "+waits)

	b.open("/", `document.querySelector('#runs tbody tr[data-run]')`)
	assert.Contains(t, evalJS[string](b, fmt.Sprintf(`document.querySelector('#runs tbody tr[data-run=%q] td:nth-child(4)').textContent`, run)), "(1 stalled)")
	b.clean()
}

// dropRolloutLine takes rollout id's lines out of rollouts.jsonl.
func dropRolloutLine(t *testing.T, path, id string) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var kept bytes.Buffer
	dropped := 0
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), fmt.Sprintf(`"rollout_id":%q`, id)) {
			dropped++
			continue
		}
		kept.Write(sc.Bytes())
		kept.WriteByte('\n')
	}
	require.NoError(t, sc.Err())
	require.Equal(t, 1, dropped, "%s's line in rollouts.jsonl", id)
	require.NoError(t, os.WriteFile(path, kept.Bytes(), 0o640))
}

// TestViewCommandStalledAfter: `otelcol-gym view --stalled-after` is
// explained, and a negative threshold is refused with what to do.
func TestViewCommandStalledAfter(t *testing.T) {
	out, err := runCmd(t, time.Minute, nil, collectorBinary(t), "view", "--help")
	require.NoError(t, err, out)
	assert.Contains(t, out, "--stalled-after")
	assert.Contains(t, out, "(default 5m0s)")
	out, err = runCmd(t, time.Minute, nil, collectorBinary(t), "view", "--capture-dir", t.TempDir(), "--stalled-after", "-1s")
	require.Error(t, err, out)
	assert.Contains(t, out, "--stalled-after must not be negative (0 turns it off)")
}
