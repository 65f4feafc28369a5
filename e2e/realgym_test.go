// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue #17: the real NeMo Gym package, its real servers and rollouts, into
// the built collector. `make test-realgym` makes the venv
// (e2e/realgym/setup-venv.sh), names it in OTELCOL_GYM_REALGYM_VENV and runs
// these tests in a network namespace of their own with only loopback
// (Ray binds the machine's address otherwise; there, everything binds
// 127.0.0.1 and nothing reaches the network). Without the variable they skip,
// so `make test` stays Go-only.
//
// One run: the collector (testdata/realgym_collector.yaml: the standalone
// pipeline plus a recording pipeline), the stub model, and each Gym command
// under `otelcol-gym instrument` (the mode's flags): `gym env start` with
// example_single_tool_call and openai_model (its four servers run from the
// prebuilt venv: skip_venv_if_present with <uv_venv_dir>/<type>/<dir>/.venv
// linked to it, and no uv installed, so an install would fail the run), then
// `gym eval run --no-serve` over the 5 example tasks × 2 repeats at
// concurrency 4 with observability_enabled and the collector's capture dir as
// model_call_capture_dir. Gym is stopped with SIGINT (its Ctrl-C), then the
// collector with SIGTERM, and the outputs are checked.

const (
	realGymVenvEnv = "OTELCOL_GYM_REALGYM_VENV"
	// realGymOutEnv names a directory to keep each run's files in (the
	// recorded OTLP requests among them) instead of a temporary one.
	realGymOutEnv = "OTELCOL_GYM_REALGYM_OUT"

	// realGymRecordEnv names the directory (../testdata) to write the run's
	// recorded OTLP requests and what the replay needs of the run into, as
	// real_gym_<mode>/ (see realgym_replay_test.go).
	realGymRecordEnv = "OTELCOL_GYM_REALGYM_RECORD"

	realGymTasks      = 5
	realGymRepeats    = 2
	realGymModelDelay = 100 * time.Millisecond
)

// The server directories `gym env start` runs for
// --resources-server example_single_tool_call --model-type openai_model.
var realGymServerDirs = []string{
	"resources_servers/example_single_tool_call",
	"responses_api_agents/simple_agent",
	"responses_api_models/openai_model",
	"environment_servers/legacy_agent",
}

// realGymMode is one way of getting telemetry out of the real Gym: every Gym
// command runs under `otelcol-gym instrument` (issue #34) with these flags.
type realGymMode struct {
	name  string
	runID string
	// instrument are the flags of `otelcol-gym instrument`; env the Gym
	// settings of every Gym process.
	instrument, env []string
	// choice starts the line instrument prints for the venv's Python.
	choice string
	// Service names (resource service.name) of the processes.
	driver, env_, agent, model, resources string
	// driverTraced: the `gym eval run --no-serve` process emits spans.
	driverTraced bool
	// ownTelemetry: Gym's own telemetry, with its gym.rollout span.
	ownTelemetry bool
	// uninstrumented: Gym runs without `otelcol-gym instrument`, pointed at
	// the collector by hand (OTEL_EXPORTER_OTLP_* and env).
	uninstrumented bool
	// content: the collector runs with gymcapture's
	// capture_message_content on (issue #57; off in the other modes).
	content bool
}

func realGymModes() []realGymMode {
	return []realGymMode{
		{
			// The realgym venv has no nemo-lens: instrument's generic
			// OpenTelemetry instrumentation in every Gym process (not Ray's),
			// FastAPI and aiohttp-client, OTLP/HTTP; Gym's own telemetry off.
			name: "generic_otel", runID: "realgymgeneric1",
			env:    []string{"NEMO_GYM_OTEL_RUN_ID=realgymgeneric1"},
			choice: "generic OpenTelemetry instrumentation (FastAPI, ASGI, aiohttp client): nemo-lens, which Gym's own telemetry needs, is not installed",
			driver: "nemo-gym/gym-eval-run", env_: "nemo-gym/legacy_agent", agent: "nemo-gym/simple_agent",
			model: "nemo-gym/openai_model", resources: "nemo-gym/example_single_tool_call",
			driverTraced: true,
		},
		{
			// Gym's own telemetry (--telemetry gym) through otelcol-gym's
			// nemo-lens bridge, every span group on, so every Gym call site
			// emits.
			name: "gym_telemetry", runID: "realgymlens1",
			instrument: []string{"--telemetry", "gym"},
			env:        []string{"NEMO_GYM_OTEL_RUN_ID=realgymlens1", "NEMO_GYM_OTEL_SPAN_GROUPS=all"},
			choice:     "Gym's own telemetry through otelcol-gym's nemo-lens bridge: nemo-lens is not installed, and --telemetry gym asks for Gym's own telemetry",
			driver:     "", env_: "nemo-gym/example_single_tool_call_environment_server",
			agent: "nemo-gym/example_single_tool_call_simple_agent", model: "nemo-gym/policy_model",
			resources: "nemo-gym/example_single_tool_call", ownTelemetry: true, content: true,
		},
	}
}

// instrumented is argv under `otelcol-gym instrument` for mode m, sending to
// the collector's OTLP/HTTP port.
func instrumented(t *testing.T, m realGymMode, p ports, argv ...string) []string {
	if m.uninstrumented {
		return argv
	}
	return append(append([]string{collectorBinary(t), "instrument", "--endpoint", fmt.Sprintf("http://127.0.0.1:%d", p.HTTP)},
		m.instrument...), append([]string{"--"}, argv...)...)
}

func realGymVenv(t *testing.T) string {
	v := os.Getenv(realGymVenvEnv)
	if v == "" {
		t.Skipf("%s is not set: `make test-realgym` runs the real-Gym tests", realGymVenvEnv)
	}
	return v
}

func TestRealGym(t *testing.T) {
	venv := realGymVenv(t)
	for _, m := range realGymModes() {
		t.Run(m.name, func(t *testing.T) {
			run := runRealGym(t, venv, m, realGymOpts{observability: true, live: stallWatch(m), scores: true})
			checkRealGym(t, m, run)
		})
	}
}

// realGymOpts are the timings and Gym settings of one run.
type realGymOpts struct {
	observability bool // Gym's observability_enabled
	// slow, when set, is the gym processor's wait in a run whose first model
	// call of each rollout and whose gap between the servers' start-up and
	// `gym eval run` both take 1.5 × wait (issue #25: 45 s each against the
	// shipped 30 s), with settle and the SDKs' batch delay at wait/6.
	slow time.Duration
	// live, when set, watches the run's viewer (realgym_live_test.go).
	live *realGymLive
	// console: Gym's telemetry prints its spans (NEMO_GYM_OTEL_EXPORTER=console
	// in the mode's env) and the collector must receive none; the run ends
	// when Gym has stopped (realgym_consolereplay_test.go).
	console bool
	// scores: Gym's scores go to Phoenix and the run to MLflow too
	// (realgym_scores_test.go).
	scores bool
}

// TestRealGymGenericSlow (issue #25): Gym under generic OpenTelemetry
// instrumentation, with a first model call of each rollout slower than
// `wait` and a start-up gap longer than `wait`, at a tenth of the real
// run's timings. With observability on, every span that an ancestor or a
// descendant puts in a rollout carries its id and is in its file; with it
// off, every span is on disk within 10 s of the run's end, the collector
// still running.
func TestRealGymGenericSlow(t *testing.T) {
	venv := realGymVenv(t)
	m := realGymModes()[0]
	require.Equal(t, "generic_otel", m.name)
	t.Run("observability_on", func(t *testing.T) {
		run := runRealGym(t, venv, m, realGymOpts{observability: true, slow: 3 * time.Second})
		checkRealGym(t, m, run)
	})
	t.Run("observability_off", func(t *testing.T) {
		runRealGym(t, venv, m, realGymOpts{slow: 3 * time.Second})
	})
}

// realGymRun is what one run left.
type realGymRun struct {
	dir, captureDir string
	rollouts        []string       // the rollout ids of Gym's output rows
	exchanges       map[string]int // model exchanges per rollout, in Gym's capture files
	live            bool           // a real run (not a replay): Gym's capture files are there
	forwarded       string         // the OTLP/JSON traces the collector sent on ("" when it sent none)
	accepted        float64        // otelcol_receiver_accepted_spans at the end
	combined        []outSpan
	collectorLog    string
	phoenix         *phoenix // the run's Arize Phoenix, when there is one (realgym_phoenix_test.go)
	// scores: the run's scores go to Phoenix, and the run to MLflow too when
	// there is one (realgym_scores_test.go).
	scores bool
	mlflow *mlflowServer
	// timingsEdited: the run's gym processor had other waits than the
	// defaults a replay runs with (realgym_replaycmd_test.go).
	timingsEdited bool
	// console: Gym prints its spans; the collector has nothing to forward.
	console bool
	// content: gymcapture put the model's messages on the spans.
	content bool
}

func runRealGym(t *testing.T, venv string, m realGymMode, o realGymOpts) *realGymRun {
	dir := t.TempDir()
	if keep := os.Getenv(realGymOutEnv); keep != "" {
		dir = filepath.Join(keep, m.name)
		require.NoError(t, os.RemoveAll(dir))
		require.NoError(t, os.MkdirAll(dir, 0o750))
	}
	run := &realGymRun{dir: dir, captureDir: filepath.Join(dir, "captures"), live: true, exchanges: map[string]int{},
		forwarded: filepath.Join(dir, "otlp-traces.jsonl"), console: o.console, scores: o.scores}
	require.NoError(t, os.MkdirAll(run.captureDir, 0o750))

	var edit func(string) string
	var firstCall time.Duration
	if o.slow > 0 {
		run.timingsEdited = true
		// The gym processor's timings at the same scale: settle at wait/6.
		// gymcapture's capture_wait at settle/2, not the shipped settle/5
		// (5 s and 1 s): it is also how long a span waits for Gym to write
		// its line, which does not get faster with the test's timings (a
		// CLIENT span ends before its line is written: linewait.go; at
		// 100 ms a loaded machine's first write of a rollout outlasted it).
		// It stays under settle: a capture_wait longer than settle would let
		// a rollout's root reach gymspans before the model-call spans
		// gymcapture holds, and its time split would miss them (design §4.8).
		edit = func(cfg string) string {
			cfg = strings.Replace(cfg, "  gym:\n", fmt.Sprintf("  gym:\n    wait: %s\n    settle: %s\n", o.slow, o.slow/6), 1)
			return strings.Replace(cfg, "  gymcapture:\n", fmt.Sprintf("  gymcapture:\n    capture_wait: %s\n", o.slow/12), 1)
		}
		firstCall = o.slow * 3 / 2
	}
	if m.content {
		run.content = true
		prev := edit
		edit = func(cfg string) string {
			if prev != nil {
				cfg = prev(cfg)
			}
			return strings.Replace(cfg, "  gymcapture:\n", "  gymcapture:\n    capture_message_content: true\n", 1)
		}
	}
	col, p := startRealGymCollector(t, run, o.live.config(edit))
	model := startStubModel(t, realGymModelDelay, firstCall)
	o.live.start(t, run, col, p, model)

	// The prebuilt venv under every server's uv_venv_dir path.
	venvs := filepath.Join(dir, "venvs")
	for _, d := range realGymServerDirs {
		require.NoError(t, os.MkdirAll(filepath.Join(venvs, d), 0o750))
		require.NoError(t, os.Symlink(venv, filepath.Join(venvs, d, ".venv")))
	}
	_, err := os.Stat(filepath.Join(venv, "bin", "uv"))
	require.True(t, os.IsNotExist(err), "the venv has no uv: Gym cannot install anything at run time")

	env := append([]string{"RAY_USAGE_STATS_ENABLED=0", "PYTHONDONTWRITEBYTECODE=1"}, m.env...)
	if m.uninstrumented {
		env = append(env, fmt.Sprintf("OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:%d", p.HTTP), "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf")
	}
	if o.slow > 0 {
		env = append(env, fmt.Sprintf("OTEL_BSP_SCHEDULE_DELAY=%d", (o.slow/6).Milliseconds()))
	}
	gym := filepath.Join(venv, "bin", "gym")
	common := []string{
		fmt.Sprintf("++observability_enabled=%v", o.observability), "++model_call_capture_dir=" + run.captureDir,
	}

	start := time.Now()
	envArgs := append([]string{"env", "start",
		"--resources-server", "example_single_tool_call", "--model-type", "openai_model",
		"--model-url", model.URL, "--model-api-key", "stub", "--model", "stub",
		"++skip_venv_if_present=true", "++uv_venv_dir=" + venvs,
	}, common...)
	var envStart *gymProcess
	for attempt := 1; ; attempt++ {
		envStart = startGym(t, dir, env, instrumented(t, m, p, append([]string{gym}, envArgs...)...)...)
		pollUntil(t, 5*time.Minute, "Gym's servers ready", func() bool {
			return envStart.exited() || strings.Contains(envStart.log(), "servers ready!")
		})
		if !envStart.exited() {
			break
		}
		// Ray gives its raylet a fixed 30 s to register (ray/_private/node.py);
		// on a loaded 2-core machine it can take longer. That is Ray's start,
		// not the run under test: start once more.
		if attempt == 1 && strings.Contains(envStart.log(), "The current node timed out during startup") {
			t.Logf("Ray's node did not start within its 30 s; starting gym env start again")
			continue
		}
		t.Fatalf("gym env start exited before its servers were ready:\n%s", envStart.log())
	}
	ready := time.Since(start)
	checkInstrumentChoice(t, m, envStart.log()) // realgym_instrument_test.go
	for _, d := range realGymServerDirs {
		assert.Contains(t, envStart.log(), "from venv "+filepath.Join(venvs, d, ".venv"), "%s ran from the prebuilt venv", d)
	}
	if o.slow > 0 {
		time.Sleep(o.slow * 3 / 2) // the start-up gap under test, not synchronization
	}

	dataset := filepath.Join(venv, "lib", "python3.13", "site-packages", "resources_servers", "example_single_tool_call", "data", "example.jsonl")
	output := filepath.Join(dir, "gym-output", "rollouts.jsonl")
	collectStart := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	evalArgv := instrumented(t, m, p, append([]string{gym, "eval", "run", "--no-serve",
		"--agent", "example_single_tool_call_simple_agent", "--input", dataset, "--output", output,
		"--num-repeats", fmt.Sprint(realGymRepeats), "--concurrency", "4",
	}, common...)...)
	evalRun := exec.CommandContext(ctx, evalArgv[0], evalArgv[1:]...)
	evalRun.Dir = dir // Hydra writes outputs/ into the working directory
	evalRun.Env = append(os.Environ(), env...)
	outb, err := evalRun.CombinedOutput()
	out := string(outb)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "gym-eval-run.log"), outb, 0o600))
	require.NoError(t, err, "gym eval run:\n%s", out)
	collected := time.Since(collectStart)
	run.rollouts = gymRolloutIDs(t, output)
	require.Len(t, run.rollouts, realGymTasks*realGymRepeats, "rollouts in Gym's output")
	o.live.wait()
	assert.EqualValues(t, 2*len(run.rollouts), model.calls.Load(), "model calls: a tool call and a final message per rollout")
	if o.console {
		envStart.stop(t) // Gym's servers print their last spans as they stop
		accepted, _ := scrapeMetric(t, p.Metrics, "otelcol_receiver_accepted_spans")
		assert.Zero(t, accepted, "spans the collector received from a run that prints them")
		require.NoError(t, col.stop(), "collector exit")
		readExchanges(run)
		t.Logf("%s (console): servers ready in %s, %d rollouts collected in %s, Gym stopped at %s",
			m.name, ready.Round(time.Second), len(run.rollouts), collected.Round(time.Second), time.Since(start).Round(time.Second))
		return run
	}
	if o.live.noSpans() {
		envStart.stop(t)
		require.NoError(t, col.stop(), "collector exit")
		return run
	}
	if !o.observability {
		checkPassedThroughSoon(t, p, run, len(run.rollouts))
		envStart.stop(t)
		require.NoError(t, col.stop(), "collector exit")
		return run
	}

	// Every rollout's root reaches rollouts.jsonl once its spans arrived and
	// settled (the SDK sends a batch every 5 s; an upward decision takes
	// settle, 5 s); a rollout whose root never comes is reported below.
	if !waitFor(90*time.Second, func() bool {
		return len(rolloutsFileIDs(filepath.Join(run.captureDir, "rollouts.jsonl"))) >= len(run.rollouts)
	}) {
		t.Logf("not every rollout's root reached rollouts.jsonl within 90s")
	}
	envStart.stop(t)
	stopped := time.Since(start)
	awaitScores(t, run) // realgym_scores_test.go

	run.accepted, _ = scrapeMetric(t, p.Metrics, "otelcol_receiver_accepted_spans")
	run.collectorLog = col.stderr.String()
	require.NoError(t, col.stop(), "collector exit")
	run.combined = readJSONLines[outSpan](t, filepath.Join(run.captureDir, "spans.jsonl"))
	readExchanges(run)
	if dst := os.Getenv(realGymRecordEnv); dst != "" {
		recordRealGym(t, m, run, filepath.Join(dst, "real_gym_"+m.name))
	}
	t.Logf("%s: servers ready in %s, %d rollouts collected in %s, Gym stopped at %s; %d spans accepted",
		m.name, ready.Round(time.Second), len(run.rollouts), collected.Round(time.Second), stopped.Round(time.Second), int(run.accepted))
	return run
}

// readExchanges counts the model exchanges in each rollout's capture file.
func readExchanges(run *realGymRun) {
	for _, r := range run.rollouts {
		if b, err := os.ReadFile(filepath.Join(run.captureDir, r+".capture.jsonl")); err == nil {
			run.exchanges[r] = strings.Count(string(b), "\n")
		}
	}
}

// gymProcess is `gym env start`: its own process group (it starts Ray and
// the servers), its output in a file.
type gymProcess struct {
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
}

func startGym(t *testing.T, dir string, env []string, argv ...string) *gymProcess {
	logPath := filepath.Join(dir, "gym-env-start.log")
	if _, err := os.Stat(logPath); err == nil {
		require.NoError(t, os.Rename(logPath, logPath+".previous"))
	}
	f, err := os.Create(logPath)
	require.NoError(t, err)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	g := &gymProcess{cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); f.Close(); close(g.done) }()
	t.Cleanup(func() {
		// Whatever is left of the group (a failed test, a server Gym did
		// not stop) goes too.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-g.done
	})
	return g
}

func (g *gymProcess) exited() bool {
	select {
	case <-g.done:
		return true
	default:
		return false
	}
}

func (g *gymProcess) log() string {
	b, _ := os.ReadFile(g.logPath)
	return string(b)
}

// stop sends SIGINT to the group, as Ctrl-C does, and waits for Gym to shut
// its servers and Ray down.
func (g *gymProcess) stop(t *testing.T) {
	_ = syscall.Kill(-g.cmd.Process.Pid, syscall.SIGINT)
	select {
	case <-g.done:
	case <-time.After(2 * time.Minute):
		t.Errorf("gym env start did not exit within 2 min of SIGINT")
	}
}

// waitFor polls cond every 100ms until it holds (true) or within passed
// (false): the condition is a file of another process, which cannot signal.
func waitFor(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond) // poll interval, not synchronization
	}
	return true
}

// gymRolloutIDs reads Gym's output rows: each row's rollout id is
// <_ng_task_index>-<_ng_rollout_index> (Gym's own scheme).
func gymRolloutIDs(t *testing.T, path string) []string {
	type row struct {
		Task    *int `json:"_ng_task_index"`
		Rollout *int `json:"_ng_rollout_index"`
	}
	var ids []string
	for _, r := range readJSONLines[row](t, path) {
		require.NotNil(t, r.Task)
		require.NotNil(t, r.Rollout)
		ids = append(ids, fmt.Sprintf("%d-%d", *r.Task, *r.Rollout))
	}
	sort.Strings(ids)
	return ids
}

// rolloutsFileIDs counts the lines of rollouts.jsonl by rollout id.
func rolloutsFileIDs(path string) map[string]int {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	ids := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l struct {
			RolloutID string `json:"rollout_id"`
		}
		if json.Unmarshal(sc.Bytes(), &l) == nil {
			ids[l.RolloutID]++
		}
	}
	return ids
}
