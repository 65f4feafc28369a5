// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRealGymConsoleReplay (issue #56, acceptance 2, its console half): a
// real Gym run with NEMO_GYM_OTEL_EXPORTER=console, in each venv whose Gym
// telemetry a user can have (the realgym venv, nemo-lens absent, and the
// user-install venv, nemo-lens 0.1.0 from the index: both through
// otelcol-gym's nemo-lens bridge, as instrument chooses, one-line JSON;
// nemo-lens 0.1.0 alone prints nothing: TestRealGymLensFromIndexPrintsNoSpans),
// prints its spans into the servers' output instead of sending them: the
// collector receives none, the capture dir holds Gym's captures only. `otelcol-gym replay` of
// what the user has, the console logs of `gym env start` and `gym eval run`,
// beside a copy of the captures, writes what a live run writes: every
// rollout's spans file beside its capture with the rollout's spans, no
// rollout span without its id, GenAI on every model call, a rollouts.jsonl
// line for every rollout Gym ran; and the viewer, given Gym's output, shows
// the replayed run with Gym's rewards in Chromium.
func TestRealGymConsoleReplay(t *testing.T) {
	for _, c := range []struct {
		venv func(*testing.T) string
		mode realGymMode
	}{
		{realGymVenv, realGymModeNamed(t, "gym_telemetry")},
		{userInstallVenv, userInstallMode()},
	} {
		m := c.mode
		m.name += "_console"
		m.env = append(m.env[:len(m.env):len(m.env)], "NEMO_GYM_OTEL_EXPORTER=console")
		if !slices.Contains(m.env, "NEMO_GYM_OTEL_RUN_ID="+m.runID) { // the user-install mode has none (TestRealGymUserInstall gives its script the run id)
			m.env = append(m.env, "NEMO_GYM_OTEL_RUN_ID="+m.runID)
		}
		t.Run(m.name, func(t *testing.T) {
			venv := c.venv(t)
			start := time.Now()
			run := runRealGym(t, venv, m, realGymOpts{observability: true, console: true})
			t.Logf("%s: the run took %s", m.name, time.Since(start).Round(time.Second))
			checkRealGymConsoleReplayed(t, m, run)
		})
	}
}

func realGymModeNamed(t *testing.T, name string) realGymMode {
	for _, m := range realGymModes() {
		if m.name == name {
			return m
		}
	}
	t.Fatalf("no real-Gym mode %q", name)
	return realGymMode{}
}

// printedSpanHead is the start of a span as Gym's console exporter prints
// it, one-line (the bridge's and Gym's pinned nemo-lens's) or indent-4 (the
// SDK's default) without prefixes inside, whatever precedes it on the line;
// [1] is its span id.
var printedSpanHead = regexp.MustCompile(`\{\s*"name": "(?:[^"\\]|\\.)*",\s*"context": \{\s*"trace_id": "0x[0-9a-f]{32}",\s*"span_id": "0x([0-9a-f]{16})"`)

// realGymConsoleLogs are the files a console run leaves its user: what
// `gym env start` (the servers, each line "(<server name>) ") and
// `gym eval run` printed.
var realGymConsoleLogs = []string{"gym-env-start.log", "gym-eval-run.log"}

func checkRealGymConsoleReplayed(t *testing.T, m realGymMode, run *realGymRun) {
	t.Helper()
	spanFiles, err := filepath.Glob(filepath.Join(run.captureDir, "*.spans.jsonl"))
	require.NoError(t, err)
	assert.Empty(t, spanFiles, "no rollout spans file before the replay: no collector received the spans")
	assert.NoFileExists(t, filepath.Join(run.captureDir, "rollouts.jsonl"), "no rollouts.jsonl before the replay")
	var logs []string
	printed := map[string]bool{} // span ids, as the console exporter prints a span's head
	for _, name := range realGymConsoleLogs {
		logs = append(logs, filepath.Join(run.dir, name))
		for _, m := range printedSpanHead.FindAllStringSubmatch(readFileString(filepath.Join(run.dir, name)), -1) {
			printed[m[1]] = true
		}
	}
	require.NotEmpty(t, printed, "Gym printed its spans into %v", realGymConsoleLogs)

	out := filepath.Join(t.TempDir(), "replayed")
	copyCaptures(t, run.captureDir, out)
	start := time.Now()
	log, err := runCmd(t, 2*time.Minute, nil, collectorBinary(t), append([]string{"replay", "--capture-dir", out}, logs...)...)
	require.NoError(t, err, "otelcol-gym replay:\n%s", log)
	t.Logf("replayed %v (%d spans printed) in %s:\n%s", realGymConsoleLogs, len(printed), time.Since(start).Round(time.Millisecond), log)

	combined := readJSONLines[outSpan](t, filepath.Join(out, "spans.jsonl"))
	var replayed []string
	for _, s := range combined {
		if !s.synthetic() {
			replayed = append(replayed, s.SpanID)
		}
	}
	assert.ElementsMatch(t, keys(printed), replayed, "every span Gym printed is replayed, once")
	inRollout := map[string]int{}
	for _, s := range combined {
		if r := s.str("nemo.gym.rollout.id"); r != "" {
			inRollout[r]++
		}
	}
	assert.ElementsMatch(t, run.rollouts, keys(inRollout), "the rollouts that have spans are the rollouts Gym ran")
	assert.Empty(t, lostRolloutSpans(combined), "spans without the rollout id their URLs, ancestors or descendants give")
	for _, r := range run.rollouts {
		assert.FileExists(t, filepath.Join(out, r+".capture.jsonl"))
		path := filepath.Join(out, r+".spans.jsonl")
		if !assert.FileExists(t, path, "spans of %s beside its capture after the replay", r) {
			continue
		}
		spans := readJSONLines[outSpan](t, path)
		assert.Len(t, spans, inRollout[r], "%s.spans.jsonl holds every span of %s", r, r)
		for _, s := range spans {
			assert.Equal(t, r, s.str("nemo.gym.rollout.id"), "span %s (%s) in the replayed %s.spans.jsonl", s.SpanID, s.Name, r)
		}
		checkRolloutShape(t, m, r, spans, run.exchanges[r])
	}
	lines := rolloutsFileIDs(filepath.Join(out, "rollouts.jsonl"))
	assert.ElementsMatch(t, run.rollouts, keys(lines), "rollouts.jsonl names every rollout Gym ran, and no other")
	for r, n := range lines {
		assert.Equal(t, 1, n, "lines of rollout %s in rollouts.jsonl", r)
	}
	checkGenAI(t, out, "", "") // every model call's capture line on its span
	checkReplayedViewer(t, m, run, out)
}

// checkReplayedViewer: `otelcol-gym view --capture-dir <replayed>
// --gym-output <Gym's output>` lists every rollout of the run with Gym's
// reward (its API and its page in Chromium), and a rollout's page draws
// every span of its file.
func checkReplayedViewer(t *testing.T, m realGymMode, run *realGymRun, replayed string) {
	t.Helper()
	chromiumPath(t)
	gymOut := filepath.Join(run.dir, "gym-output")
	v := startViewer(t, replayed, "--gym-output", gymOut)
	checkViewerShowsGymResults(t, v.base, m.runID, run.rollouts)

	e := readWhyExpect(t, replayed, gymOut, m.runID)
	require.ElementsMatch(t, run.rollouts, e.ids, "the run's rollouts in the replayed rollouts.jsonl")
	require.Len(t, e.reward, len(run.rollouts), "Gym's output has a reward for every rollout")
	b := newBrowser(t, v.base)
	shots := os.Getenv("OTELCOL_GYM_SHOTS") // to keep them (shotsDir)
	if shots == "" {
		shots = t.TempDir()
	}
	checkWhyList(t, b, e, m.runID, shots) // each row's reward as Gym's output has it

	r := run.rollouts[0]
	spans := readJSONLines[outSpan](t, filepath.Join(replayed, r+".spans.jsonl"))
	b.open("/rollout?run="+m.runID+"&id="+r, `document.querySelectorAll('#waterfall .span-row').length`)
	assert.Equal(t, len(spans), evalJS[int](b, `document.querySelectorAll('#waterfall .span-row').length`),
		"rollout %s's page draws every span of its file", r)
	got, ok := parseMS(t, evalJS[string](b, `(document.getElementById('gym-reward') || {dataset: {}}).dataset.reward || ''`))
	assert.True(t, ok, "rollout %s's page shows Gym's reward", r)
	assert.Equal(t, e.reward[r], got, "rollout %s's reward", r)
	shot := fmt.Sprintf("replayed-%s-rollout-%s.png", m.name, r)
	b.shot(shots, shot)
	t.Logf("the replayed rollout %s in the viewer: %s", r, filepath.Join(shots, shot))
	b.clean()
}

// copyCaptures copies Gym's capture files from dir into a new dir to.
func copyCaptures(t *testing.T, dir, to string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(to, 0o750))
	captures, err := filepath.Glob(filepath.Join(dir, "*.capture.jsonl"))
	require.NoError(t, err)
	require.NotEmpty(t, captures, "Gym's captures in %s", dir)
	for _, c := range captures {
		b, err := os.ReadFile(c)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(to, filepath.Base(c)), b, 0o640))
	}
}

// TestRealGymLensFromIndexPrintsNoSpans: the SDK's indent-4 console objects
// would come from nemo-lens 0.1.0's exporter, but nemo-gym 0.7.0's own
// telemetry imports names 0.1.0 lacks and switches itself off with it, so a
// real run prints no span in that shape (design §10). Gym's own
// init_telemetry, in the user-install venv without otelcol-gym's bridge,
// with telemetry on and the console exporter, gives no handle.
func TestRealGymLensFromIndexPrintsNoSpans(t *testing.T) {
	venv := userInstallVenv(t)
	out, err := runCmd(t, time.Minute, []string{"NEMO_GYM_OTEL_ENABLED=1", "NEMO_GYM_OTEL_EXPORTER=console", "PYTHONDONTWRITEBYTECODE=1"},
		filepath.Join(venv, "bin", "python"), "-c", `
import importlib.metadata, logging
logging.basicConfig(level=logging.DEBUG, format="%(message)s")
from nemo_gym.telemetry.setup import init_telemetry
print("nemo-lens", importlib.metadata.version("nemo-lens"), "handle", init_telemetry("policy_model"))
`)
	require.NoError(t, err, out)
	assert.Contains(t, out, "nemo-lens 0.1.0 handle None", "Gym's telemetry with nemo-lens 0.1.0 from the index")
	assert.Contains(t, out, "telemetry stays disabled", "Gym says why")
	assert.NotContains(t, out, `"span_id"`, "no span printed")
}
