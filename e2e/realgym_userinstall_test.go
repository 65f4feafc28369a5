// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue #34, acceptance 1: Gym as users install it. The README's "From a
// clone" shows docs/trace-your-gym-run.sh (TestReadmeShowsTheQuickstart
// holds the two equal), and TestRealGymUserInstall runs that file as it is:
// in the venv e2e/realgym/setup-userinstall-venv.sh made with its step 1
// (`pip install --ignore-requires-python "nemo-gym[telemetry]==0.7.0"`, so
// nemo-lens 0.1.0: `instrument` chooses the bridge), with the embedded
// default collector on its fixed ports (`make test-realgym` runs in a
// network namespace of its own) and the stub model; then every check of
// the other real-Gym modes.

const quickstartScript = "docs/trace-your-gym-run.sh"

// userInstallMode is the user-install run as a realGymMode: Gym's own
// telemetry through the bridge with Gym's default span groups.
func userInstallMode() realGymMode {
	return realGymMode{
		name: "user_install", runID: "realgymuser1",
		choice: "Gym's own telemetry through otelcol-gym's nemo-lens bridge: the installed nemo-lens 0.1.0 lacks ",
		driver: "", env_: "nemo-gym/example_single_tool_call_environment_server",
		agent: "nemo-gym/example_single_tool_call_simple_agent", model: "nemo-gym/policy_model",
		resources: "nemo-gym/example_single_tool_call", ownTelemetry: true,
	}
}

func TestReadmeShowsTheQuickstart(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	require.NoError(t, err)
	script, err := os.ReadFile(filepath.Join(repoRoot(t), quickstartScript))
	require.NoError(t, err)
	section := regexp.MustCompile("(?ms)^## From a clone\n.*?^```sh\n(#!.*?)^```$").FindSubmatch(readme)
	require.NotNil(t, section, "README.md: a section \"## From a clone\" with a ```sh block that starts with #!")
	assert.Equal(t, string(script), string(section[1]), "README.md's \"From a clone\" script is %s, line for line", quickstartScript)
}

func TestRealGymUserInstall(t *testing.T) {
	venv := userInstallVenv(t)
	m := userInstallMode()
	dir := t.TempDir()
	if keep := os.Getenv(realGymOutEnv); keep != "" {
		dir = filepath.Join(keep, m.name)
		require.NoError(t, os.RemoveAll(dir))
		require.NoError(t, os.MkdirAll(dir, 0o750))
	}
	run := &realGymRun{dir: dir, captureDir: filepath.Join(dir, "captures"), live: true, exchanges: map[string]int{}}
	// The script runs where a user runs it, in a clone after `make build`
	// with its step 1 done: bin/ and gym-venv/ are there.
	require.NoError(t, os.Symlink(filepath.Dir(collectorBinary(t)), filepath.Join(dir, "bin")))
	require.NoError(t, os.Symlink(venv, filepath.Join(dir, "gym-venv")))
	model := startStubModel(t, realGymModelDelay, 0)
	env := []string{
		"MODEL_URL=" + model.URL, "MODEL=stub",
		// Not the script's: a known run id to check the trace ids by, and no
		// usage reports or bytecode from the shared venv.
		"NEMO_GYM_OTEL_RUN_ID=" + m.runID, "RAY_USAGE_STATS_ENABLED=0", "PYTHONDONTWRITEBYTECODE=1",
	}
	start := time.Now()
	var script *quickstartRun
	for attempt := 1; ; attempt++ {
		script = startQuickstart(t, dir, env)
		if script.waitFor(10*time.Minute, "otelcol-gym: the viewer is at http://127.0.0.1:13180/") {
			break
		}
		// Ray gives its raylet a fixed 30 s to register (see runRealGym):
		// Ray's start, not the path under test: once more.
		if attempt == 1 && strings.Contains(readFileString(filepath.Join(dir, "gym.log")), "The current node timed out during startup") {
			t.Logf("Ray's node did not start within its 30 s; running the script again")
			continue
		}
		t.Fatalf("%s ended before it showed the viewer:\n%s\ngym.log:\n%s", quickstartScript, script.log(), readFileString(filepath.Join(dir, "gym.log")))
	}
	ran := time.Since(start)
	checkInstrumentChoice(t, m, readFileString(filepath.Join(dir, "gym.log")))
	assert.Contains(t, script.log(), "otelcol-gym instrument: "+m.choice, "the script shows which telemetry Gym got")

	run.rollouts = gymRolloutIDs(t, filepath.Join(dir, "gym-output", "rollouts.jsonl"))
	require.Len(t, run.rollouts, realGymTasks*realGymRepeats, "rollouts in Gym's output")
	assert.EqualValues(t, 2*len(run.rollouts), model.calls.Load(), "model calls: a tool call and a final message per rollout")
	// Gym has stopped; its servers' last spans settle in the collector.
	if !waitFor(90*time.Second, func() bool {
		return len(rolloutsFileIDs(filepath.Join(run.captureDir, "rollouts.jsonl"))) >= len(run.rollouts)
	}) {
		t.Logf("not every rollout's root reached rollouts.jsonl within 90s")
	}
	checkViewerShowsRun(t, "http://127.0.0.1:13180", m.runID, len(run.rollouts))
	checkViewerShowsGymResults(t, "http://127.0.0.1:13180", m.runID, run.rollouts)
	run.accepted, _ = scrapeMetric(t, 8888, "otelcol_receiver_accepted_spans")
	require.NoError(t, script.stop(), "the script ends with 0 once the collector stopped cleanly:\n%s", script.log())
	run.collectorLog = script.log()
	run.combined = readJSONLines[outSpan](t, filepath.Join(run.captureDir, "spans.jsonl"))
	for _, r := range run.rollouts {
		if b, err := os.ReadFile(filepath.Join(run.captureDir, r+".capture.jsonl")); err == nil {
			run.exchanges[r] = strings.Count(string(b), "\n")
		}
	}
	t.Logf("%s: the viewer after %s; %d rollouts, %d spans accepted", quickstartScript, ran.Round(time.Second), len(run.rollouts), int(run.accepted))
	checkRealGym(t, m, run)
}

// checkViewerShowsRun: the viewer the script points the user at lists the
// run with its rollouts.
func checkViewerShowsRun(t *testing.T, viewer, runID string, rollouts int) {
	t.Helper()
	resp, err := http.Get(viewer + "/api/runs")
	require.NoError(t, err)
	defer resp.Body.Close()
	var page struct {
		Runs []struct {
			Run      string `json:"run"`
			Rollouts int    `json:"rollouts"`
		} `json:"runs"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&page))
	got := map[string]int{}
	for _, r := range page.Runs {
		got[r.Run] = r.Rollouts
	}
	assert.Equal(t, map[string]int{runID: rollouts}, got, "the runs the viewer lists, with their rollouts")
}

// checkViewerShowsGymResults: the viewer the script points the user at
// (the collector's own, told where Gym's output goes) shows each rollout's
// reward from Gym's rollouts.jsonl (issue #55: no second viewer to start).
func checkViewerShowsGymResults(t *testing.T, viewer, runID string, rollouts []string) {
	t.Helper()
	resp, err := http.Get(viewer + "/api/rollouts?run=" + runID)
	require.NoError(t, err)
	defer resp.Body.Close()
	var page struct {
		Rows []struct {
			ID  string `json:"id"`
			Gym *struct {
				Reward *float64 `json:"reward"`
			} `json:"gym"`
		} `json:"rows"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&page))
	rewarded := map[string]bool{}
	for _, r := range page.Rows {
		if r.Gym != nil && r.Gym.Reward != nil {
			rewarded[r.ID] = true
		}
	}
	assert.ElementsMatch(t, rollouts, keys(rewarded), "the rollouts the viewer shows with Gym's reward")
}

// quickstartRun is the script running: bash in a process group of its own,
// its output in a file.
type quickstartRun struct {
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	err     error
}

func startQuickstart(t *testing.T, dir string, env []string) *quickstartRun {
	t.Helper()
	logPath := filepath.Join(dir, "quickstart.log")
	f, err := os.Create(logPath)
	require.NoError(t, err)
	// -x, each line stamped with the time it came: how long each command of
	// the user's path took is in the log (the script's commands unchanged).
	cmd := exec.Command("bash", "-x", filepath.Join(repoRoot(t), quickstartScript))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	stamped := &lineStamper{w: f}
	cmd.Stdout, cmd.Stderr = stamped, stamped
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	q := &quickstartRun{cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() { q.err = cmd.Wait(); f.Close(); close(q.done) }()
	t.Cleanup(func() {
		// A failed test: the script's own trap stops Gym and the collector.
		if q.stop() != nil {
			t.Logf("%s:\n%s", quickstartScript, q.log())
		}
	})
	return q
}

// waitFor polls the script's output for line until within passed or the
// script ended; true when the line came.
func (q *quickstartRun) waitFor(within time.Duration, line string) bool {
	return waitFor(within, func() bool {
		select {
		case <-q.done:
			return true
		default:
		}
		return q.hasLine(line)
	}) && q.hasLine(line)
}

// hasLine: the script printed a line that starts with prefix (after its
// time stamp).
func (q *quickstartRun) hasLine(prefix string) bool {
	sc := bufio.NewScanner(strings.NewReader(q.log()))
	for sc.Scan() {
		if _, line, ok := strings.Cut(sc.Text(), " "); ok && strings.HasPrefix(line, prefix) {
			return true
		}
	}
	return false
}

// lineStamper writes each line with the wall-clock time it came first.
// exec.Cmd calls it from one goroutine (Stdout and Stderr are the same).
type lineStamper struct {
	w       io.Writer
	midLine bool
}

func (l *lineStamper) Write(p []byte) (int, error) {
	var b []byte
	for _, c := range p {
		if !l.midLine {
			b = time.Now().AppendFormat(b, "15:04:05.000 ")
			l.midLine = true
		}
		b = append(b, c)
		l.midLine = c != '\n'
	}
	if _, err := l.w.Write(b); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (q *quickstartRun) log() string { return readFileString(q.logPath) }

// stop sends SIGTERM to the script, as `kill` would, and returns how it
// ended (its trap stops Gym, then the collector, and exits 0).
func (q *quickstartRun) stop() error {
	select {
	case <-q.done:
		return q.err
	default:
	}
	_ = q.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-q.done:
		return q.err
	case <-time.After(3 * time.Minute):
		_ = syscall.Kill(-q.cmd.Process.Pid, syscall.SIGKILL)
		<-q.done
		return q.err
	}
}

func readFileString(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}
