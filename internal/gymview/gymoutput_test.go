// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymview

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	whyDir = "testdata/realgym_why"
	whyRun = "realgymlens1"
)

// TestWhyGolden: the rollout list's why columns, their sorts and filters,
// the run's percentiles, the state of Gym's output and a rollout's page,
// over a real Gym run with its split and Gym's output
// (testdata/realgym_why/README.md), compared whole with testdata/golden.
func TestWhyGolden(t *testing.T) {
	h := newTestHandler(t, filepath.Join(whyDir, "captures"), Options{GymOutput: filepath.Join(whyDir, "gym-output")})
	for name, target := range map[string]string{
		"why_rollouts_lowest_reward": "/api/rollouts?run=" + whyRun + "&sort=reward&order=asc",
		"why_rollouts_most_model":    "/api/rollouts?run=" + whyRun + "&sort=model_ms",
		"why_rollouts_gym_failed":    "/api/rollouts?run=" + whyRun + "&sort=id&order=asc&gymfailed=1",
		"why_rollouts_unhealthy":     "/api/rollouts?run=" + whyRun + "&sort=id&order=asc&unhealthy=1",
		"why_timesplit":              "/api/timesplit?run=" + whyRun,
		"why_gymoutput":              "/api/gymoutput?run=" + whyRun,
		"why_gymoutput_other_run":    "/api/gymoutput?run=other",
		"why_rollout_2-1":            "/api/rollout?run=" + whyRun + "&id=2-1",
	} {
		t.Run(name, func(t *testing.T) { checkGolden(t, h, name, target) })
	}
}

// TestWhyListOrder: the list sorted by reward or by a category, either
// way, puts the rollouts without one last; the filters keep exactly Gym's
// failed (unhealthy) rollouts.
func TestWhyListOrder(t *testing.T) {
	h := newTestHandler(t, filepath.Join(whyDir, "captures"), Options{GymOutput: filepath.Join(whyDir, "gym-output")})
	ids := func(target string) []string {
		rec := get(t, h, target)
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		var p listPage
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &p))
		var out []string
		for _, r := range p.Rows {
			out = append(out, r.ID)
		}
		return out
	}
	base := "/api/rollouts?run=" + whyRun
	for _, order := range []string{"asc", "desc"} {
		got := ids(base + "&sort=model_ms&order=" + order)
		require.Len(t, got, 10)
		assert.Equal(t, "4-1", got[9], "%s: the rollout without a split is last", order)
		got = ids(base + "&sort=reward&order=" + order)
		assert.Equal(t, "4-1", got[9], "%s: the rollout without a reward (dropped) is last", order)
	}
	assert.Equal(t, []string{"1-0", "2-1", "3-1"}, ids(base + "&sort=reward&order=asc")[:3], "the lowest reward first")
	assert.Equal(t, []string{"1-0", "2-1", "4-1"}, ids(base+"&sort=id&order=asc&gymfailed=1"))
	assert.Equal(t, []string{"2-1", "3-0"}, ids(base+"&sort=id&order=asc&unhealthy=1"))
	assert.Equal(t, []string{"2-1"}, ids(base+"&sort=id&order=asc&unhealthy=1&gymfailed=1"))
	rec := get(t, h, base+"&sort=nope_ms")
	assert.Equal(t, http.StatusBadRequest, rec.Code)
}

// TestGymOutputRows: what is kept of each row of a real Gym output: the
// ids Gym gives (attempts included), rewards, failures (hostile strings as
// they are: the page escapes them), dropped rows, verdicts; malformed rows
// skipped and counted, a blank line not.
func TestGymOutputRows(t *testing.T) {
	g := newGymOutput(filepath.Join(whyDir, "gym-output"), "")
	require.NoError(t, g.refresh())
	assert.Equal(t, gymFileStatus{Name: "rollouts.jsonl", Present: true, Rows: 10, Malformed: 2}, g.rollouts.status())
	assert.Equal(t, gymFileStatus{Name: "rollouts_failures.jsonl", Present: true, Rows: 1}, g.failures.status())
	assert.Equal(t, gymFileStatus{Name: "rollout_verdicts.jsonl", Present: true, Rows: 9}, g.verdicts.status())

	r := g.result("0-0")
	require.NotNil(t, r)
	assert.Equal(t, 1.0, *r.Reward)
	assert.Equal(t, "healthy", r.Verdict)
	require.NotNil(t, r.Perf)
	assert.Equal(t, 2.0, *r.Perf.NumTurns)
	assert.Equal(t, 1.0, *r.Perf.NumToolCalls)
	assert.False(t, r.failed())

	r = g.result("2-1")
	assert.Equal(t, `<script>alert("kind")</script>`, r.FailureKind)
	assert.Equal(t, `<img src=x onerror=alert("reason")>`+"\n"+`javascript:alert("reason2") & "quotes"`, r.FailureReason)
	assert.True(t, r.Masked)
	assert.True(t, r.failed())
	assert.True(t, g.unhealthy("2-1"))
	assert.True(t, g.failed("2-1"))
	assert.Equal(t, []string{`<script>alert("check")</script>: <img src=x onerror=alert("finding")>`}, r.Findings)

	r = g.result("4-1")
	assert.Nil(t, r.Reward)
	assert.True(t, r.Dropped)
	assert.Equal(t, "agent_run_error", r.FailureKind)
	assert.Contains(t, r.FailureReason, "Internal Server Error")
	assert.Empty(t, r.Verdict)

	assert.Equal(t, "unobserved", g.result("3-1").Verdict)
	assert.Equal(t, []string{"model_call_failed: a model call of the rollout failed", "rollout_ended_on_failed_model_call: the rollout ended on a failed model call"}, g.result("3-0").Findings)
	assert.NotNil(t, g.result("9-0"))
	assert.Nil(t, g.result("5-0"), "a malformed row is not kept")

	// Ids as Gym makes them: an explicit id wins, an attempt > 0 is a suffix.
	dir := t.TempDir()
	writeFile(t, dir, "rollouts.jsonl", `{"_ng_task_index":0,"_ng_rollout_index":1,"_ng_attempt_index":2,"reward":0.25}
{"_ng_task_index":0,"_ng_rollout_index":2,"_ng_attempt_index":0,"reward":1}
{"_ng_rollout_id":"job7.x","_ng_task_index":3,"_ng_rollout_index":4,"reward":1}
{"_ng_task_index":"t","_ng_rollout_index":5,"reward":null,"failure_kind":7,"ng_perf":{"num_turns":"many"}}
{"_ng_task_index":1.5,"_ng_rollout_index":0}
{"_ng_rollout_id":"`+strings.Repeat("x", maxGymIDBytes+1)+`"}
`)
	g = newGymOutput(dir, "")
	require.NoError(t, g.refresh())
	assert.Equal(t, 0.25, *g.result("0-1-a2").Reward)
	assert.NotNil(t, g.result("0-2"))
	assert.NotNil(t, g.result("job7.x"))
	r = g.result("t-5")
	require.NotNil(t, r)
	assert.Nil(t, r.Reward, "null is no reward")
	assert.Empty(t, r.FailureKind, "a kind that is no string")
	assert.Nil(t, r.Perf, "an ng_perf of the wrong shape")
	assert.Equal(t, gymFileStatus{Name: "rollouts.jsonl", Present: true, Rows: 4, Malformed: 2}, g.rollouts.status())
	assert.Equal(t, gymFileStatus{Name: "rollout_verdicts.jsonl"}, g.verdicts.status(), "no verdicts file: none")
}

// TestGymOutputIncremental: rows appended while Gym runs are read as they
// come, a torn row once whole; the verdicts file, missing until the run
// ends, is read when it appears and again whenever Gym rewrites it; a
// replaced rollouts file is read again.
func TestGymOutputIncremental(t *testing.T) {
	dir := t.TempDir()
	g := newGymOutput(filepath.Join(dir, "out"), "")
	require.NoError(t, g.refresh())
	assert.Nil(t, g.rollouts, "the output dir does not exist yet")

	out := filepath.Join(dir, "out")
	require.NoError(t, os.Mkdir(out, 0o750))
	path := filepath.Join(out, "rollouts.jsonl")
	appendFile(t, path, `{"_ng_task_index":0,"_ng_rollout_index":0,"reward":1}`+"\n"+`{"_ng_task_index":0,"_ng_rollout`)
	require.NoError(t, g.refresh())
	assert.NotNil(t, g.result("0-0"))
	assert.Equal(t, 1, g.rollouts.rows)
	gen := g.gen
	require.NoError(t, g.refresh())
	assert.Equal(t, gen, g.gen, "nothing new")
	appendFile(t, path, `_index":1,"reward":0}`+"\n")
	require.NoError(t, g.refresh())
	assert.Equal(t, 0.0, *g.result("0-1").Reward)
	assert.Equal(t, 0, g.rollouts.malformed, "the torn row was read whole")
	assert.Empty(t, g.result("0-1").Verdict)

	verdicts := filepath.Join(out, gymVerdictsFile)
	writeFile(t, out, gymVerdictsFile, `{"rollout_id":"0-1","verdict":"unhealthy","findings":[]}`+"\n")
	require.NoError(t, g.refresh())
	assert.Equal(t, "unhealthy", g.result("0-1").Verdict)
	// Rewritten in place (open "wb"), longer: read again whole.
	f, err := os.OpenFile(verdicts, os.O_WRONLY|os.O_TRUNC, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"rollout_id":"0-0","verdict":"healthy","findings":[]}` + "\n" + `{"rollout_id":"0-1","verdict":"healthy","findings":[]}` + "\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.NoError(t, g.refresh())
	assert.Equal(t, "healthy", g.result("0-1").Verdict)
	assert.Equal(t, 2, g.verdicts.rows)

	// A new run replaces the output: the old rows go.
	tmp := filepath.Join(out, "new")
	require.NoError(t, os.WriteFile(tmp, []byte(`{"_ng_task_index":7,"_ng_rollout_index":0,"reward":1}`+"\n"), 0o600))
	require.NoError(t, os.Rename(tmp, path))
	require.NoError(t, g.refresh())
	assert.NotNil(t, g.result("7-0"))
	assert.Nil(t, g.scored["0-0"])
	require.NoError(t, os.Remove(verdicts))
	require.NoError(t, g.refresh())
	assert.Empty(t, g.result("7-0").Verdict)
}

// TestGymOutputHugeRow: a row of 64 MiB (a whole response) is read with a
// bounded amount of memory, its reward and failure kept; a failure reason
// of megabytes is cut.
func TestGymOutputHugeRow(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "rollouts.jsonl"))
	require.NoError(t, err)
	chunk := strings.Repeat(`{"type":"output_text","text":"`+strings.Repeat("lorem ipsum ", 80)+`"},`, 64)
	_, err = f.WriteString(`{"_ng_task_index":0,"_ng_rollout_index":0,"response":{"output":[`)
	require.NoError(t, err)
	for written := 0; written < 64<<20; written += len(chunk) {
		_, err = f.WriteString(chunk)
		require.NoError(t, err)
	}
	_, err = f.WriteString(`{}]},"failure_reason":"` + strings.Repeat("why ", 1<<20) + `","failure_kind":"verifier_error","reward":0.75}` + "\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())

	g := newGymOutput(dir, "")
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	require.NoError(t, g.refresh())
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	assert.Less(t, allocated, uint64(4<<20), "bytes allocated to read a 68 MiB row")
	r := g.result("0-0")
	require.NotNil(t, r)
	assert.Equal(t, 0.75, *r.Reward)
	assert.Equal(t, "verifier_error", r.FailureKind)
	assert.Equal(t, maxReasonChars+1, len([]rune(r.FailureReason)), "cut, with an ellipsis")
	assert.True(t, strings.HasSuffix(r.FailureReason, "…"))
}

// TestGymOutputFile: given the output file itself (any name), its
// failures file is <stem>_failures.jsonl and the verdicts are beside it.
func TestGymOutputFile(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "eval.jsonl", `{"_ng_task_index":0,"_ng_rollout_index":0,"reward":1}`+"\n")
	writeFile(t, dir, "eval_failures.jsonl", `{"_ng_task_index":0,"_ng_rollout_index":1,"_ng_failure_class":"agent_request_failed"}`+"\n")
	writeFile(t, dir, "rollouts.jsonl", `{"_ng_task_index":9,"_ng_rollout_index":9,"reward":1}`+"\n")
	writeFile(t, dir, gymVerdictsFile, `{"rollout_id":"0-0","verdict":"healthy","findings":[]}`+"\n")
	g := newGymOutput(filepath.Join(dir, "eval.jsonl"), "")
	require.NoError(t, g.refresh())
	assert.Equal(t, "healthy", g.result("0-0").Verdict)
	assert.Equal(t, "agent_request_failed", g.result("0-1").FailureKind)
	assert.Nil(t, g.result("9-9"), "another output's file")

	// A path that is neither: said, not read.
	g = newGymOutput("/dev/null", "")
	assert.ErrorContains(t, g.refresh(), "neither a directory nor a regular file")
}

// TestGymOutputJoinsOneRun: Gym's rows carry no run id; they join the run
// configured, else the run that started last, and no other.
func TestGymOutputJoinsOneRun(t *testing.T) {
	dir := t.TempDir()
	capt := filepath.Join(dir, "captures")
	require.NoError(t, os.Mkdir(capt, 0o750))
	appendFile(t, filepath.Join(capt, "rollouts.jsonl"), rolloutsLine("early", "0-0", "OK", 0, "01.000000")+rolloutsLine("late", "0-0", "OK", 0, "05.000000"))
	writeFile(t, dir, "rollouts.jsonl", `{"_ng_task_index":0,"_ng_rollout_index":0,"reward":0.5}`+"\n")
	for _, tc := range []struct{ cfg, joined string }{{"", "late"}, {"early", "early"}} {
		h := newTestHandler(t, capt, Options{GymOutput: dir, GymRun: tc.cfg})
		for _, run := range []string{"early", "late"} {
			var p listPage
			require.NoError(t, json.Unmarshal(get(t, h, "/api/rollouts?run="+run).Body.Bytes(), &p))
			require.Len(t, p.Rows, 1)
			if run == tc.joined {
				require.NotNil(t, p.Rows[0].Gym, "gym_run %q: run %s", tc.cfg, run)
				assert.Equal(t, 0.5, *p.Rows[0].Gym.Reward)
			} else {
				assert.Nil(t, p.Rows[0].Gym, "gym_run %q: run %s", tc.cfg, run)
			}
			var gp gymPage
			require.NoError(t, json.Unmarshal(get(t, h, "/api/gymoutput?run="+run).Body.Bytes(), &gp))
			assert.Equal(t, tc.joined, gp.Run)
			assert.Equal(t, run == tc.joined, gp.Here)
		}
	}
}

func writeFile(t *testing.T, dir, name, s string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(s), 0o600))
}
