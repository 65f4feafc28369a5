// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bufio"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue #55, acceptance 3: `otelcol-gym instrument -- CMD` starts the
// embedded-default collector when none answers, keeps it for the command's
// life and drains it when the command ends. The command here stands in for
// Gym: a shell that runs gymsim (which sends a Gym run's spans over OTLP/HTTP
// to the endpoint and writes each span id it sent to a truth file) and then
// does what the case needs.

// tracedRun is one instrumented run on loopback ports of its own.
type tracedRun struct {
	p          ports
	captureDir string
	truth      string
}

func newTracedRun(t *testing.T) tracedRun {
	return tracedRun{p: newPorts(t), captureDir: filepath.Join(t.TempDir(), "captures"), truth: filepath.Join(t.TempDir(), "truth.jsonl")}
}

func (r tracedRun) endpoint() string { return fmt.Sprintf("http://127.0.0.1:%d", r.p.HTTP) }

// args are instrument's flags: the endpoint, and the started collector's
// other listeners moved to this run's ports (its own metrics off).
func (r tracedRun) args(extra ...string) []string {
	return append([]string{
		"--endpoint", r.endpoint(),
		fmt.Sprintf("--collector-set=receivers::otlp::protocols::grpc::endpoint=127.0.0.1:%d", r.p.GRPC),
		fmt.Sprintf("--collector-set=extensions::health_check::endpoint=127.0.0.1:%d", r.p.Health),
		fmt.Sprintf("--collector-set=extensions::gymview::endpoint=127.0.0.1:%d", r.p.View),
		"--collector-set=service::telemetry::metrics::level=none",
	}, extra...)
}

func (r tracedRun) env() []string { return []string{"NEMO_GYM_CAPTURE_DIR=" + r.captureDir} }

// gymsim is the stand-in's shell line that sends a run's spans and returns
// once the collector accepted every one (--blocking, the SDK's shutdown).
func (r tracedRun) gymsim(t *testing.T) string {
	return fmt.Sprintf("%q --protocol=http --endpoint=127.0.0.1:%d --rollouts=8 --concurrency=4 --blocking --batch-delay=100ms --capture-dir=%q --truth=%q",
		gymsimBinary(t), r.p.HTTP, r.captureDir, r.truth)
}

var startedPID = regexp.MustCompile(`started otelcol-gym \(pid (\d+)\)`)

// startedCollector is the pid instrument says it started, 0 if none.
func startedCollector(t *testing.T, stderr string) int {
	m := startedPID.FindStringSubmatch(stderr)
	if m == nil {
		return 0
	}
	pid, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	return pid
}

// assertGoneProcess: pid no longer exists (instrument waited for it, so it
// is reaped, not a zombie).
func assertGoneProcess(t *testing.T, pid int) {
	t.Helper()
	assert.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH, "the collector (pid %d) is gone after instrument", pid)
}

// assertDrained: every span the stand-in sent (the collector accepted it:
// gymsim's export returned) is in the combined spans file exactly once, and
// the summary counts rollouts.jsonl's lines.
func (r tracedRun) assertDrained(t *testing.T, stderr string) {
	t.Helper()
	truth := readJSONLines[truthSpan](t, r.truth)
	require.NotEmpty(t, truth)
	written := map[string]int{}
	for _, s := range readJSONLines[outSpan](t, filepath.Join(r.captureDir, "spans.jsonl")) {
		if !s.synthetic() {
			written[s.SpanID]++
		}
	}
	for _, s := range truth {
		assert.Equal(t, 1, written[s.SpanID], "span %s (%s) written once", s.SpanID, s.Name)
		delete(written, s.SpanID)
	}
	assert.Empty(t, written, "spans written that the stand-in did not send")

	type rollout struct {
		Status string `json:"status"`
	}
	rollouts := readJSONLines[rollout](t, filepath.Join(r.captureDir, "rollouts.jsonl"))
	failed := 0
	for _, l := range rollouts {
		if l.Status == "ERROR" {
			failed++
		}
	}
	require.NotEmpty(t, rollouts)
	assert.Contains(t, stderr, fmt.Sprintf("otelcol-gym instrument: %d rollouts, %d failed; duration p50 ", len(rollouts), failed))
	assert.Contains(t, stderr, "otelcol-gym instrument: where the time went: model ")
	assert.Contains(t, stderr, "otelcol-gym instrument: to see the run: otelcol-gym view --capture-dir '"+r.captureDir+"'")
}

// None up: instrument starts the collector, the command's spans are all
// written when it has drained it, and it is gone; the exit code is the
// command's. A command that fails: its exit code passes through and the
// collector is drained all the same.
func TestInstrumentStartsAndDrainsTheCollector(t *testing.T) {
	for _, code := range []int{0, 3} {
		t.Run(fmt.Sprintf("exit %d", code), func(t *testing.T) {
			r := newTracedRun(t)
			run := runInstrument(t, "", r.env(), append(r.args(), "--", "sh", "-c", fmt.Sprintf("%s && exit %d", r.gymsim(t), code))...)
			assert.Equal(t, code, run.exitCode(), run.stderr)
			pid := startedCollector(t, run.stderr)
			require.NotZero(t, pid, "instrument says it started a collector:\n%s", run.stderr)
			assertGoneProcess(t, pid)
			r.assertDrained(t, run.stderr)
			assert.FileExists(t, filepath.Join(r.captureDir, "otelcol-gym.log"), "the started collector's log is in the capture dir")
		})
	}
}

// Already up: the collector that answers is used; instrument starts none and
// leaves it running, and (having started none) becomes the command;
// --collector=always refuses to start a second one at its endpoint.
func TestInstrumentUsesTheCollectorThatAnswers(t *testing.T) {
	r := newTracedRun(t)
	col := startCollector(t, r.p, r.env(), "--config", onFreePorts(t, "standalone.yaml", r.p))
	run := runInstrument(t, "", r.env(), append(r.args(), "--", "sh", "-c", r.gymsim(t)+` && echo "pid $$"`)...)
	require.NoError(t, run.err, run.stderr)
	assert.Zero(t, startedCollector(t, run.stderr), "no collector started:\n%s", run.stderr)
	assert.Equal(t, fmt.Sprintf("pid %d\n", run.pid), lastLine(run.stdout), "instrument became the command")

	// --collector=always refuses to start a second one there, and runs nothing.
	marker := filepath.Join(t.TempDir(), "ran")
	always := runInstrument(t, "", r.env(), append(r.args("--collector=always"), "--", "sh", "-c", "touch "+marker)...)
	assert.Equal(t, 125, always.exitCode(), always.stderr)
	assert.Equal(t, []string{"otelcol-gym instrument: a collector already answers at " + r.endpoint() +
		" and --collector=always starts one there: drop --collector=always to use it, or pass another --endpoint; the command was not run"},
		always.instrumentLines())
	assert.NoFileExists(t, marker)

	select {
	case <-col.done:
		t.Fatalf("the user's collector exited: %v", col.err)
	default:
	}
	require.NoError(t, col.stop())
	r.assertSpansWritten(t)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	return lines[len(lines)-1] + "\n"
}

// assertSpansWritten: the truth's spans are all in the combined file.
func (r tracedRun) assertSpansWritten(t *testing.T) {
	t.Helper()
	written := map[string]bool{}
	for _, s := range readJSONLines[outSpan](t, filepath.Join(r.captureDir, "spans.jsonl")) {
		written[s.SpanID] = true
	}
	for _, s := range readJSONLines[truthSpan](t, r.truth) {
		assert.True(t, written[s.SpanID], "span %s written", s.SpanID)
	}
}

// Ctrl-C during the run: SIGINT to instrument's process group (as a
// terminal sends it) stops the command as it would without instrument;
// the collector, in a group of its own, is drained, and instrument dies of
// SIGINT as the command did.
func TestInstrumentCtrlCDrainsTheCollector(t *testing.T) {
	r := newTracedRun(t)
	cmd := exec.Command(collectorBinary(t), append([]string{"instrument"}, r.args("--", "sh", "-c", r.gymsim(t)+" >&2 && echo ready && exec cat")...)...)
	cmd.Env = append(instrumentBaseEnv(t), r.env()...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, stderr.String())
	require.Equal(t, "ready\n", line)

	require.NoError(t, syscall.Kill(-cmd.Process.Pid, syscall.SIGINT))
	err = cmd.Wait()
	var ee *exec.ExitError
	require.True(t, errors.As(err, &ee), "%v\n%s", err, stderr.String())
	ws := ee.Sys().(syscall.WaitStatus)
	assert.True(t, ws.Signaled() && ws.Signal() == syscall.SIGINT, "instrument died of SIGINT as the command did: %v\n%s", ee, stderr.String())
	pid := startedCollector(t, stderr.String())
	require.NotZero(t, pid, stderr.String())
	assertGoneProcess(t, pid)
	r.assertDrained(t, stderr.String())
}

// The endpoint's port taken by something that is not a collector: a clear
// error, and the command is not run.
func TestInstrumentRefusesAPortTakenByANonCollector(t *testing.T) {
	notOTLP := httptest.NewServer(http.NotFoundHandler())
	defer notOTLP.Close()
	marker := filepath.Join(t.TempDir(), "ran")
	r := newTracedRun(t)
	args := append(r.args(), "--endpoint", notOTLP.URL, "--", "sh", "-c", "touch "+marker)
	run := runInstrument(t, "", r.env(), args...)
	assert.Equal(t, 125, run.exitCode(), run.stderr)
	assert.Equal(t, []string{"otelcol-gym instrument: something that is not an OTLP collector answers at " + notOTLP.URL +
		" (it answered an empty OTLP export with 404 Not Found): stop it, or pass --endpoint with a free port (or a collector's); the command was not run"},
		run.instrumentLines())
	assert.NoFileExists(t, marker, "the command did not run")
	assert.NoDirExists(t, r.captureDir, "no collector started")
}

// A port of the started collector taken (here its health check, as by a
// second otelcol-gym's): instrument says what the collector said and that
// the command was not run.
func TestInstrumentSaysWhyTheCollectorDidNotStart(t *testing.T) {
	r := newTracedRun(t)
	taken := httptest.NewServer(http.NotFoundHandler())
	defer taken.Close()
	marker := filepath.Join(t.TempDir(), "ran")
	args := append(r.args(), "--collector-set=extensions::health_check::endpoint="+strings.TrimPrefix(taken.URL, "http://"), "--", "sh", "-c", "touch "+marker)
	run := runInstrument(t, "", r.env(), args...)
	assert.Equal(t, 125, run.exitCode(), run.stderr)
	assert.Contains(t, run.stderr, strings.TrimPrefix(taken.URL, "http://"), "the taken address is named")
	assert.NotContains(t, run.stderr, "goroutine ", "no stack trace")
	assert.Contains(t, run.stderr, "otelcol-gym instrument: the collector did not start, so the command was not run; --collector-set=<key>=<value> passes a --set to it")
	assert.NoFileExists(t, marker, "the command did not run")
}

// A command that sends nothing: the line names where the collector writes,
// and the summary says that no rollout arrived.
func TestInstrumentNamesTheCaptureDir(t *testing.T) {
	r := newTracedRun(t)
	run := runInstrument(t, "", r.env(), append(r.args(), "--", "true")...)
	require.NoError(t, run.err, run.stderr)
	assert.Contains(t, run.stderr, "writing to "+r.captureDir+", log in otelcol-gym.log; it is drained when the command ends")
	assert.Contains(t, run.stderr, "otelcol-gym instrument: no rollout reached "+filepath.Join(r.captureDir, "rollouts.jsonl"))
}

// A gym command (a Python program of a Python with Gym) gets the settings a
// traced run needs when it lacks them, said on the choice line; the
// collector instrument starts is told Gym's --output (the view command names
// it); --no-gym-overrides leaves the command line alone.
func TestInstrumentAddsGymOverrides(t *testing.T) {
	py := needPython3(t)
	site := fakeGymSite(t, "working", true)
	bin := t.TempDir()
	writeFile(t, bin, "gym", "#!"+py+"\nimport sys\nprint(' '.join(sys.argv[1:]))\n")
	require.NoError(t, os.Chmod(filepath.Join(bin, "gym"), 0o755))
	r := newTracedRun(t)
	env := append(r.env(), "PYTHONPATH="+site, "PATH="+bin+":"+filepath.Dir(py)+":/usr/bin:/bin")
	work := t.TempDir()
	output := filepath.Join(work, "gym-output", "rollouts.jsonl")

	run := runInstrumentIn(t, work, env, r.args("--", "gym", "eval", "run", "--output", "gym-output/rollouts.jsonl")...)
	require.NoError(t, run.err, run.stderr)
	added := "++observability_enabled=true ++model_call_capture_dir=" + r.captureDir
	assert.Equal(t, "eval run --output gym-output/rollouts.jsonl "+added+"\n", run.stdout)
	lines := run.instrumentLines()
	require.GreaterOrEqual(t, len(lines), 2, run.stderr)
	assert.True(t, strings.HasSuffix(lines[1], "; added "+added+" (--no-gym-overrides: not)"), lines[1])
	assert.Contains(t, run.stderr, "to see the run: otelcol-gym view --capture-dir '"+r.captureDir+"' --gym-output '"+output+"'")
	assert.NotZero(t, startedCollector(t, run.stderr))

	run = runInstrumentIn(t, work, env, r.args("--no-gym-overrides", "--", "gym", "eval", "run", "++observability_enabled=false")...)
	require.NoError(t, run.err, run.stderr)
	assert.Equal(t, "eval run ++observability_enabled=false\n", run.stdout)
	assert.NotContains(t, run.stderr, "; added ")
}

// runInstrumentIn is runInstrument in the working directory dir.
func runInstrumentIn(t *testing.T, dir string, env []string, args ...string) instrumentRun {
	t.Helper()
	cmd := exec.Command(collectorBinary(t), append([]string{"instrument"}, args...)...)
	cmd.Env = append(instrumentBaseEnv(t), env...)
	cmd.Dir = dir
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return instrumentRun{stdout: stdout.String(), stderr: stderr.String(), err: err}
}
