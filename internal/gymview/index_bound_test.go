// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymview

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// boundLines are 100 rollouts.jsonl lines of two interleaved runs (r2 every
// third), every tenth failed, a second root of rollout 3, and rollout "7"
// of r1 again in r2 as its last line: an id that one run lets go and
// another keeps.
func boundLines() []string {
	var lines []string
	for i := range 100 {
		run := "r1"
		if i%3 == 0 {
			run = "r2"
		}
		status := "OK"
		if i%10 == 0 {
			status = "ERROR"
		}
		lines = append(lines, boundLine(run, fmt.Sprint(i), status, i))
		if i == 3 {
			// A second root of r2's rollout 3, earlier and failed.
			lines = append(lines, strings.Replace(boundLine(run, "3", "ERROR", 200), "12:03:20", "11:59:00", 1))
		}
	}
	return append(lines, boundLine("r2", "7", "OK", 100))
}

// boundLine is the n-th line of boundLines: its root span id n+1.
func boundLine(run, id, status string, n int) string {
	return fmt.Sprintf(`{"rollout_id":%q,"run_id":%q,"trace_id":"%032x","root_span_id":"%016x","start_time":"2026-08-21T12:%02d:%02d.000000Z","end_time":"2026-08-21T13:00:00.000000Z","status":%q,"error_count":0,"service_name":"nemo-gym/orchestrator","name":"HTTP POST"}`+"\n",
		id, run, n+1, n+1, n/60, n%60, status)
}

// TestRolloutIndexKeepsNewest: past max rows the oldest are let go, read at
// once or a line at a time: the rows kept are the newest, each run's in
// file order; every map holds only rows kept; the runs still count every
// rollout (notKept); every rollout with a line is done, and only those.
func TestRolloutIndexKeepsNewest(t *testing.T) {
	lines := boundLines()
	const max = 32
	for _, byLine := range []bool{false, true} {
		t.Run(fmt.Sprintf("byLine=%v", byLine), func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "rollouts.jsonl")
			ix := newRolloutIndex(newCaptureDir(dir), max)
			if byLine {
				for _, l := range lines {
					appendFile(t, path, l)
					require.NoError(t, ix.refresh())
					require.LessOrEqual(t, len(ix.rows), max)
				}
			} else {
				appendFile(t, path, strings.Join(lines, ""))
				require.NoError(t, ix.refresh())
			}
			checkKeepsNewest(t, ix, lines, max)
		})
	}
}

func checkKeepsNewest(t *testing.T, ix *rolloutIndex, lines []string, max int) {
	t.Helper()
	var all []rolloutLine
	for _, l := range lines {
		var x rolloutLine
		require.NoError(t, json.Unmarshal([]byte(l), &x))
		all = append(all, x)
	}
	require.LessOrEqual(t, len(ix.rows), max)
	require.GreaterOrEqual(t, len(ix.rows), max-max/forgetFraction, "no more let go than the bound needs")
	kept := all[len(all)-len(ix.rows):] // the last lines are of distinct rollouts
	for i, r := range ix.rows {
		assert.Equal(t, rolloutKey{kept[i].RunID, kept[i].RolloutID}, rolloutKey{r.Run, r.ID}, "row %d is the %d-th newest line", i, len(ix.rows)-i)
		assert.Same(t, r, ix.byKey[rolloutKey{r.Run, r.ID}])
		assert.Same(t, r, ix.byRoot[r.RootSpanID])
	}
	assert.Len(t, ix.byKey, len(ix.rows))
	assert.Len(t, ix.byRoot, len(ix.rows))
	for run, rows := range ix.byRun {
		want := slices.DeleteFunc(slices.Clone(ix.rows), func(r *rollout) bool { return r.Run != run })
		assert.Equal(t, want, rows, "run %s: its rows kept, in file order", run)
	}

	total, failed := map[string]int{}, map[string]int{}
	failedKeys := map[rolloutKey]bool{}
	for _, x := range all {
		k := rolloutKey{x.RunID, x.RolloutID}
		if _, seen := failedKeys[k]; !seen {
			total[x.RunID]++
			failedKeys[k] = false
		}
		if x.Status == "ERROR" && !failedKeys[k] {
			failedKeys[k] = true
			failed[x.RunID]++
		}
	}
	for run := range total {
		nk := ix.notKeptOf(run)
		n, f := nk.Rollouts, nk.Failed
		for _, r := range ix.byRun[run] {
			n++
			if r.failed() {
				f++
			}
		}
		assert.Equal(t, total[run], n, "run %s: rollouts kept and let go", run)
		assert.Equal(t, failed[run], f, "run %s: failed kept and let go", run)
		assert.NotZero(t, nk.Rollouts, "run %s lost rows", run)
		assert.NotZero(t, nk.Start)
	}
	for _, x := range all {
		assert.True(t, ix.done(x.RolloutID), "rollout %s has a line", x.RolloutID)
	}
	for _, id := range []string{"100", "nope", "-1", ""} {
		assert.False(t, ix.done(id), "rollout %q has no line", id)
	}
	assert.EqualValues(t, 1, ix.ids["7"], "7 is still a row of r2 (its r1 row was let go)")
	assert.Len(t, ix.ids, len(ix.rows), "ids: those of the rows kept (distinct here)")
}

// TestRolloutIndexBoundHeld: a long rollouts.jsonl read a chunk at a time
// keeps the index within its bound, the hashes of what it let go aside.
func TestRolloutIndexBoundHeld(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rollouts.jsonl")
	ix := newRolloutIndex(newCaptureDir(dir), 1000)
	for chunk := range 20 {
		var b strings.Builder
		for i := range 997 {
			b.WriteString(rolloutsLine(fmt.Sprintf("run-%d", chunk%3), fmt.Sprintf("%d-%d", chunk, i), "OK", 0, "01.000000"))
		}
		appendFile(t, path, b.String())
		require.NoError(t, ix.refresh())
		require.LessOrEqual(t, len(ix.rows), 1000)
		require.LessOrEqual(t, len(ix.byKey)+len(ix.byRoot)+len(ix.ids), 3000)
		require.LessOrEqual(t, cap(ix.rows), 2*1000, "the rows' array is not held past its bound")
	}
	assert.Len(t, ix.forgotten, 20*997-len(ix.rows))
	n := 0
	for _, nk := range ix.notKept {
		n += nk.Rollouts
	}
	assert.Equal(t, 20*997-len(ix.rows), n)
}

// TestPagesCountRowsNotKept: the runs page counts every rollout of a run,
// kept or not, and says how many are not listed; the run's list says it
// too; a rollout let go with its spans file still there is not taken for
// one in flight.
func TestPagesCountRowsNotKept(t *testing.T) {
	dir := t.TempDir()
	lines := boundLines()
	appendFile(t, filepath.Join(dir, "rollouts.jsonl"), strings.Join(lines, ""))
	// Rollout 1 (r1) is let go; its spans file stays.
	src, err := os.ReadFile(filepath.Join("testdata", "gymsim_retry_in_flight", "0-0.spans.jsonl"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "1.spans.jsonl"), src, 0o640))
	h := newTestHandler(t, dir, Options{MaxRollouts: 32})
	h.scan.next = time.Time{}

	var runs runsPage
	require.NoError(t, json.Unmarshal(get(t, h, "/api/runs").Body.Bytes(), &runs))
	assert.Equal(t, 32, runs.MaxRollouts)
	byRun := map[string]runRow{}
	for _, r := range runs.Runs {
		byRun[r.Run] = r
	}
	assert.Equal(t, 66, byRun["r1"].Rollouts, "every line of r1 counted")
	assert.Equal(t, 35, byRun["r2"].Rollouts, "every line of r2 counted")
	assert.Equal(t, 6, byRun["r1"].Failed)
	assert.Equal(t, 5, byRun["r2"].Failed, "rollout 3 failed at its second root")
	assert.Zero(t, byRun["r1"].InFlight+byRun["r2"].InFlight, "a rollout let go is not in flight")
	assert.NotContains(t, byRun, "goldrun", "the spans file of a rollout let go makes no run in flight")
	assert.Equal(t, 66-len(h.index.byRun["r1"]), byRun["r1"].NotKept)

	var page listPage
	require.NoError(t, json.Unmarshal(get(t, h, "/api/rollouts?run=r1&limit=1000").Body.Bytes(), &page))
	assert.Equal(t, len(h.index.byRun["r1"]), page.All)
	assert.Equal(t, 66-page.All, page.NotKept)
	assert.Equal(t, 32, page.MaxRollouts)
	for _, r := range page.Rows {
		assert.False(t, r.InFlight, "rollout %s", r.ID)
	}

	assert.Equal(t, 66+35-len(h.index.rows), h.Watch().NotKept, "the watcher's count of rows let go")

	// Rollout 1's page: its spans, from its file; no row, not in flight.
	var rp rolloutPage
	rec := get(t, h, "/api/rollout?run=goldrun&id=1")
	require.Equal(t, 200, rec.Code, rec.Body.String())
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &rp))
	assert.NotEmpty(t, rp.Spans)
	assert.True(t, rp.NotKept)
	assert.False(t, rp.InFlight)
	assert.Nil(t, rp.Summary)
}

// TestScanKeepsRolloutsWithoutLine: the directory scan keeps the ids of
// rollouts with no rollouts.jsonl line only, not the whole dir's; when the
// index starts over (rollouts.jsonl truncated: the dir's mtime unchanged)
// the next scan finds the rollouts it had left out, now in flight.
func TestScanKeepsRolloutsWithoutLine(t *testing.T) {
	dir := t.TempDir()
	spans, err := os.ReadFile(filepath.Join("testdata", "gymsim_retry_in_flight", "0-0.spans.jsonl"))
	require.NoError(t, err)
	for _, id := range []string{"a", "b", "c"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, id+".spans.jsonl"), spans, 0o640))
	}
	for _, id := range []string{"a", "c", "d"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, id+".capture.jsonl"), nil, 0o640))
	}
	rollouts := filepath.Join(dir, "rollouts.jsonl")
	appendFile(t, rollouts, boundLine("goldrun", "a", "OK", 0)+boundLine("goldrun", "b", "OK", 1))
	h := newTestHandler(t, dir, Options{})

	inFlight := func() []string {
		h.scan.next = time.Time{} // a scan may run now (they are a second apart otherwise)
		var page listPage
		require.NoError(t, json.Unmarshal(get(t, h, "/api/rollouts?run=goldrun").Body.Bytes(), &page))
		var ids []string
		for _, r := range page.Rows {
			if r.InFlight {
				ids = append(ids, r.ID)
			}
		}
		slices.Sort(ids)
		return ids
	}
	assert.Equal(t, []string{"c"}, inFlight())
	assert.Equal(t, map[string]struct{}{"c": {}}, h.scan.ids, "the spans files of rollouts with a line are not kept")
	assert.Equal(t, map[string]struct{}{"c": {}, "d": {}}, h.scan.capts, "nor their capture files")

	require.NoError(t, os.Truncate(rollouts, 0))
	assert.Equal(t, []string{"a", "b", "c"}, inFlight(), "the index started over: a and b have no line")
}
