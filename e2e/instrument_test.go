// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue #34: `otelcol-gym instrument -- <command>` with the built binary.
// These tests need only sh and a python3 (any version from 3.8): Gym,
// nemo-lens and the OpenTelemetry packages are small fakes in a directory on
// PYTHONPATH (fakeGymSite), standing in for what each choice looks at, so
// `make test` covers every choice; realgym_instrument_test.go repeats them
// with the real packages under `make test-realgym`.

// instrumentRun is one run of `otelcol-gym instrument`.
type instrumentRun struct {
	stdout, stderr string
	err            error
	pid            int
}

func (r instrumentRun) exitCode() int {
	var ee *exec.ExitError
	if errors.As(r.err, &ee) {
		return ee.ExitCode()
	}
	return 0
}

// instrumentLines are instrument's own lines on stderr.
func (r instrumentRun) instrumentLines() []string {
	var out []string
	for _, l := range strings.Split(r.stderr, "\n") {
		if strings.HasPrefix(l, "otelcol-gym instrument: ") {
			out = append(out, l)
		}
	}
	return out
}

// runInstrument runs `otelcol-gym instrument args...` with env on top of
// a minimal environment (PATH of /usr/bin and /bin and python3's directory,
// so no gym is found there, and HOME an empty directory of its own).
func runInstrument(t *testing.T, stdin string, env []string, args ...string) instrumentRun {
	t.Helper()
	cmd := exec.Command(collectorBinary(t), append([]string{"instrument"}, args...)...)
	cmd.Env = append(instrumentBaseEnv(t), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Start())
	pid := cmd.Process.Pid
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return instrumentRun{stdout: stdout.String(), stderr: stderr.String(), err: err, pid: pid}
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		err := <-done
		t.Fatalf("otelcol-gym instrument %q did not end within 2 min (%v):\n%s", args, err, stderr.String())
		return instrumentRun{}
	}
}

func instrumentBaseEnv(t *testing.T) []string {
	t.Helper()
	path := "/usr/bin:/bin"
	if py, err := exec.LookPath("python3"); err == nil {
		path = filepath.Dir(py) + ":" + path
	}
	env := []string{"PATH=" + path, "HOME=" + t.TempDir(), "TMPDIR=" + os.TempDir()}
	for _, k := range []string{"PYENV_ROOT", "PYENV_VERSION", "LANG"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

func needPython3(t *testing.T) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 on PATH")
	}
	return py
}

// A command that is not Gym runs as if instrument were not there: the same
// pid (instrument becomes it), stdin, stdout, stderr, environment and exit
// code, and one line on stderr that says so.
func TestInstrumentPassesThroughANonGymCommand(t *testing.T) {
	r := runInstrument(t, "hello from stdin\n", nil, "--collector=never", "--", "sh", "-c",
		`echo "pid $$"; cat; echo "to stderr" >&2; echo "env ${PYTHONPATH-unset} ${OTEL_EXPORTER_OTLP_ENDPOINT-unset}"; exit 7`)
	assert.Equal(t, 7, r.exitCode(), r.stderr)
	assert.Equal(t, fmt.Sprintf("pid %d\nhello from stdin\nenv unset unset\n", r.pid), r.stdout, "the command is instrument's own process, with its stdin and an untouched environment")
	assert.Equal(t, []string{"otelcol-gym instrument: not Gym (/usr/bin/sh is no Python program and no gym is on PATH): running it untouched"},
		fixSh(r.instrumentLines()))
	assert.Contains(t, r.stderr, "to stderr\n")

	r = runInstrument(t, "", nil, "--collector=never", "--", "no-such-command-here")
	assert.Equal(t, 127, r.exitCode())
	assert.Contains(t, r.stderr, `otelcol-gym instrument: exec: "no-such-command-here": executable file not found in $PATH`)
}

// fixSh reads /bin/sh and /usr/bin/sh as one (merged /usr or not).
func fixSh(lines []string) []string {
	for i, l := range lines {
		lines[i] = strings.Replace(l, "(/bin/sh ", "(/usr/bin/sh ", 1)
	}
	return lines
}

// Signals sent to instrument's pid reach the command, and its end (an exit
// status, or death by a signal) is what instrument's parent sees.
func TestInstrumentPassesSignalsThrough(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script string
		sig    syscall.Signal
		check  func(t *testing.T, ps *os.ProcessState)
	}{
		{"SIGTERM, trapped", `trap "exit 42" TERM; echo ready; read x`, syscall.SIGTERM, func(t *testing.T, ps *os.ProcessState) {
			assert.Equal(t, 42, ps.ExitCode(), "the command's own exit status")
		}},
		{"SIGINT", `echo ready; exec cat`, syscall.SIGINT, func(t *testing.T, ps *os.ProcessState) {
			ws := ps.Sys().(syscall.WaitStatus)
			assert.True(t, ws.Signaled() && ws.Signal() == syscall.SIGINT, "died of SIGINT: %v", ps)
		}},
		{"SIGTERM", `echo ready; exec cat`, syscall.SIGTERM, func(t *testing.T, ps *os.ProcessState) {
			ws := ps.Sys().(syscall.WaitStatus)
			assert.True(t, ws.Signaled() && ws.Signal() == syscall.SIGTERM, "died of SIGTERM: %v", ps)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd, line := startInstrumentUntilLine(t, nil, "--collector=never", "--", "sh", "-c", tc.script)
			require.Equal(t, "ready", line)
			require.NoError(t, cmd.Process.Signal(tc.sig))
			_ = cmd.Wait()
			tc.check(t, cmd.ProcessState)
		})
	}
}

// startInstrumentUntilLine starts `otelcol-gym instrument args...` with its
// stdin held open (the command may block reading it) and returns once the
// command printed its first line, without the newline.
func startInstrumentUntilLine(t *testing.T, env []string, args ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(collectorBinary(t), append([]string{"instrument"}, args...)...)
	cmd.Env = append(instrumentBaseEnv(t), env...)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	t.Cleanup(func() { stdin.Close() })
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	return cmd, strings.TrimSuffix(line, "\n")
}

// fakeGymSite writes a directory for PYTHONPATH with a fake nemo-gym 0.7.0
// whose telemetry imports a few of the names the real one imports from
// nemo-lens; lens is "" (no nemo-lens), "working" (9.9.9, every name) or
// "broken" (0.1.0, no NV_DL_RANK, no SpanRegistry); otel stubs the
// OpenTelemetry packages by name (enough for the bridge to import; the
// generic setup fails on them, in its process only).
func fakeGymSite(t *testing.T, lens string, otel bool) string {
	t.Helper()
	site := t.TempDir()
	files := map[string]string{
		"nemo_gym/__init__.py":           "",
		"nemo_gym/telemetry/__init__.py": "",
		"nemo_gym/telemetry/setup.py": `def init_telemetry():
    try:
        from nemo.lens import NemoLensConfig, setup_telemetry
        from nemo.lens import handle as lens_handle
        from nemo.lens.semconv import NV_DL_RANK, NV_DL_WORLD_SIZE
    except ImportError:
        return None
    from nemo.lens.groups import SpanRegistry
    if False:
        from nemo.lens.logging_bridge import setup_logging_bridge  # optional: only with logs_enabled
`,
		"nemo_gym-0.7.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: nemo-gym\nVersion: 0.7.0\n",
	}
	switch lens {
	case "working", "broken":
		version := map[string]string{"working": "9.9.9", "broken": "0.1.0"}[lens]
		files["nemo/lens/__init__.py"] = "from nemo.lens import handle\nclass NemoLensConfig: pass\ndef setup_telemetry(*a, **k): pass\n"
		files["nemo/lens/handle.py"] = "_INITIALIZED = False\n"
		files["nemo/lens/semconv.py"] = "NV_DL_WORLD_SIZE = 'dl.world_size'\n"
		files["nemo/lens/groups.py"] = "class SpanGroup: pass\n"
		if lens == "working" {
			files["nemo/lens/semconv.py"] += "NV_DL_RANK = 'dl.rank'\n"
			files["nemo/lens/groups.py"] += "class SpanRegistry: pass\n"
		}
		files["nemo_lens-"+version+".dist-info/METADATA"] = "Metadata-Version: 2.1\nName: nemo-lens\nVersion: " + version + "\n"
	}
	if otel {
		for _, f := range []string{"opentelemetry/__init__.py", "opentelemetry/context.py",
			"opentelemetry/propagate.py", "opentelemetry/sdk/__init__.py", "opentelemetry/exporter/otlp/proto/http/__init__.py",
			"opentelemetry/instrumentation/fastapi/__init__.py", "opentelemetry/instrumentation/aiohttp_client/__init__.py"} {
			files[f] = ""
		}
		files["opentelemetry/trace.py"] = "class StatusCode:\n    ERROR = 2\nclass Tracer: pass\n"
		files["opentelemetry/metrics.py"] = "class Meter: pass\n"
		files["opentelemetry/sdk/resources.py"] = "class Resource: pass\n"
	}
	for name, content := range files {
		p := filepath.Join(site, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o750))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	}
	return site
}

// fakeServer writes a Gym-server-like app.py that prints, as JSON, what its
// process got: the sitecustomize's choice, where nemo.lens comes from,
// Gym's switch and the private dir on PYTHONPATH.
func fakeServer(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "fake_server")
	require.NoError(t, os.MkdirAll(dir, 0o750))
	return writeFile(t, dir, "app.py", `import importlib.util, json, os, sys
import sitecustomize
try:
    spec = importlib.util.find_spec("nemo.lens")
except ModuleNotFoundError:  # no nemo at all
    spec = None
json.dump({
    "telemetry": getattr(sitecustomize, "TELEMETRY", None),
    "lens": spec.origin if spec else None,
    "enabled": os.environ.get("NEMO_GYM_OTEL_ENABLED"),
    "pythonpath": os.environ.get("PYTHONPATH", "").split(os.pathsep)[0],
}, sys.stdout)
`)
}

type fakeServerOut struct {
	Telemetry  *string `json:"telemetry"`
	Lens       *string `json:"lens"`
	Enabled    *string `json:"enabled"`
	PythonPath string  `json:"pythonpath"`
}

func (o fakeServerOut) telemetry() string { return deref(o.Telemetry) }
func (o fakeServerOut) lens() string      { return deref(o.Lens) }

func deref(s *string) string {
	if s == nil {
		return "<none>"
	}
	return *s
}

// TestInstrumentChoosesByLens: each choice, announced on stderr for the
// command's Python and made again in the Gym process itself; the bridge
// stands in front of a nemo-lens that lacks what Gym imports, never of one
// that has it.
func TestInstrumentChoosesByLens(t *testing.T) {
	py := needPython3(t)
	app := fakeServer(t)
	for _, tc := range []struct {
		name, lens, telemetry string
		want                  string // the process's choice
		lensFrom              string // "site", "bridge" or "" (no nemo.lens)
		line                  string // the start of the choice line, after "otelcol-gym instrument: "
	}{
		{"working lens", "working", "auto", "gym", "site",
			"Gym's own telemetry: nemo-lens 9.9.9 has everything nemo-gym 0.7.0 imports from it"},
		{"working lens, --telemetry gym", "working", "gym", "gym", "site",
			"Gym's own telemetry: nemo-lens 9.9.9 has everything nemo-gym 0.7.0 imports from it"},
		{"lens 0.1.0", "broken", "auto", "bridge", "bridge",
			"Gym's own telemetry through otelcol-gym's nemo-lens bridge: the installed nemo-lens 0.1.0 lacks nemo.lens.groups.SpanRegistry, nemo.lens.semconv.NV_DL_RANK, which nemo-gym 0.7.0 imports"},
		{"lens 0.1.0, --telemetry generic", "broken", "generic", "generic", "site",
			"generic OpenTelemetry instrumentation (FastAPI, ASGI, aiohttp client), as --telemetry generic asks"},
		{"no lens", "", "auto", "generic", "",
			"generic OpenTelemetry instrumentation (FastAPI, ASGI, aiohttp client): nemo-lens, which Gym's own telemetry needs, is not installed"},
		{"no lens, --telemetry gym", "", "gym", "bridge", "bridge",
			"Gym's own telemetry through otelcol-gym's nemo-lens bridge: nemo-lens is not installed, and --telemetry gym asks for Gym's own telemetry"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			site := fakeGymSite(t, tc.lens, true)
			r := runInstrument(t, "", []string{"PYTHONPATH=" + site, "NEMO_GYM_CONFIG_PATH=fake_server"},
				"--collector=never", "--telemetry", tc.telemetry, "--endpoint", "http://127.0.0.1:9", "--", py, app)
			require.NoError(t, r.err, r.stderr)
			lines := r.instrumentLines()
			require.NotEmpty(t, lines, r.stderr)
			assert.True(t, strings.HasPrefix(lines[0], "otelcol-gym instrument: "+tc.line+" ("), "the choice line:\n%s\nwant it to start with:\n%s", lines[0], tc.line)
			assert.Contains(t, lines[0], ", nemo-gym 0.7.0); OTLP/HTTP to http://127.0.0.1:9")
			var out fakeServerOut
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &out), r.stdout+r.stderr)
			assert.Equal(t, tc.want, out.telemetry(), r.stderr)
			switch tc.lensFrom {
			case "site":
				assert.Equal(t, filepath.Join(site, "nemo", "lens", "__init__.py"), out.lens(), "the installed nemo-lens")
			case "bridge":
				assert.Equal(t, filepath.Join(filepath.Dir(out.PythonPath), "bridge", "nemo", "lens", "__init__.py"), out.lens(), "the bridge")
			default:
				assert.Nil(t, out.Lens)
			}
			assert.Equal(t, map[bool]string{true: "1", false: "0"}[tc.want != "generic"], deref(out.Enabled), "Gym's own telemetry switched to match")
			for _, l := range lines[1:] {
				assert.NotContains(t, l, "fake_server (", "the process decided as announced")
			}
		})
	}
}

// TestInstrumentNamesMissingOpenTelemetry: a Gym whose Python lacks the
// OpenTelemetry packages is told which and the one pip command, and still runs.
func TestInstrumentNamesMissingOpenTelemetry(t *testing.T) {
	py := needPython3(t)
	site := fakeGymSite(t, "", false)
	r := runInstrument(t, "", []string{"PYTHONPATH=" + site, "NEMO_GYM_CONFIG_PATH=fake_server"}, "--collector=never", "--", py, fakeServer(t))
	require.NoError(t, r.err, r.stderr)
	lines := r.instrumentLines()
	require.Len(t, lines, 1, "one line, and no collector check for no telemetry:\n%s", r.stderr)
	pkgs := "opentelemetry-sdk opentelemetry-exporter-otlp-proto-http opentelemetry-instrumentation-fastapi opentelemetry-instrumentation-aiohttp-client"
	assert.Regexp(t, `^otelcol-gym instrument: no telemetry: (\S+) lacks `+strings.ReplaceAll(pkgs, " ", ", ")+`; install them with: (\S+) -m pip install `+pkgs+` \(`, lines[0])
	var out fakeServerOut
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out), r.stdout)
	assert.Equal(t, "off", out.telemetry(), "the command ran, without telemetry")
}

// TestInstrumentSaysWhenNoCollectorAnswers: one line at once when nothing
// answers at the endpoint (or something that is not a collector does), none
// when a collector does; the command runs either way.
func TestInstrumentSaysWhenNoCollectorAnswers(t *testing.T) {
	py := needPython3(t)
	site := fakeGymSite(t, "working", true)
	env := []string{"PYTHONPATH=" + site}
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/v1/traces" && r.Header.Get("Content-Type") == "application/x-protobuf" {
			w.WriteHeader(http.StatusOK)
			return
		}
		http.NotFound(w, r)
	}))
	defer ok.Close()
	notOTLP := httptest.NewServer(http.NotFoundHandler())
	defer notOTLP.Close()
	closed := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))

	for _, tc := range []struct{ endpoint, want string }{
		{ok.URL, ""},
		{closed, "otelcol-gym instrument: no collector answers at " + closed + " (dial tcp 127.0.0.1:"},
		{notOTLP.URL, "otelcol-gym instrument: no collector answers at " + notOTLP.URL + " (it answered an empty OTLP export with 404 Not Found)"},
	} {
		r := runInstrument(t, "", env, "--collector=never", "--endpoint", tc.endpoint, "--", py, "-c", "print('ran')")
		require.NoError(t, r.err, r.stderr)
		assert.Equal(t, "ran\n", r.stdout)
		lines := r.instrumentLines()
		if tc.want == "" {
			assert.Len(t, lines, 1, "only the choice line: %q", lines)
			continue
		}
		require.Len(t, lines, 2, r.stderr)
		assert.True(t, strings.HasPrefix(lines[1], tc.want), "%s\nwant the start: %s", lines[1], tc.want)
		assert.True(t, strings.HasSuffix(lines[1], "start one (otelcol-gym, or make run) or pass --endpoint; running the command anyway"), lines[1])
	}
}

// TestInstrumentLeavesNothingBehind: the private dir goes once the command
// has ended, however it ended; the probe writes nothing (no bytecode) into
// the command's packages, and nothing lands in HOME.
func TestInstrumentLeavesNothingBehind(t *testing.T) {
	py := needPython3(t)
	site := fakeGymSite(t, "broken", true)
	home := t.TempDir()
	env := []string{"PYTHONPATH=" + site, "HOME=" + home}
	// The probe only: the command itself is not Python.
	r := runInstrument(t, "", env, "--collector=never", "--python", py, "--endpoint", "http://127.0.0.1:9", "--", "sh", "-c", `echo "${PYTHONPATH%%:*}"`)
	require.NoError(t, r.err, r.stderr)
	private := strings.TrimSpace(r.stdout)
	require.True(t, strings.HasPrefix(filepath.Base(filepath.Dir(private)), "otelcol-gym-instrument-"), private)
	assertGone(t, filepath.Dir(private))
	require.NoError(t, filepath.WalkDir(site, func(p string, d os.DirEntry, err error) error {
		require.NoError(t, err)
		assert.NotEqual(t, "__pycache__", d.Name(), "the probe wrote bytecode into the command's packages: %s", p)
		return nil
	}))
	entries, err := os.ReadDir(home)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing in HOME")

	// Killed with SIGKILL: the private dir still goes.
	cmd, private := startInstrumentUntilLine(t, env, "--collector=never", "--python", py, "--endpoint", "http://127.0.0.1:9", "--", "sh", "-c", `echo "${PYTHONPATH%%:*}"; exec cat`)
	assert.DirExists(t, private, "there while the command runs")
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	assertGone(t, filepath.Dir(private))
}

// assertGone waits for the cleanup process, which removes dir once the
// command has exited (it is told by a pidfd; the removal takes its time).
func assertGone(t *testing.T, dir string) {
	t.Helper()
	gone := waitFor(30*time.Second, func() bool {
		_, err := os.Stat(dir)
		return os.IsNotExist(err)
	})
	assert.True(t, gone, "%s removed after the command ended", dir)
}

// TestInstrumentExport: --export prints the settings a command would get, as
// lines a shell evaluates, with the choice as a comment; the Python side
// stays where it says.
func TestInstrumentExport(t *testing.T) {
	py := needPython3(t)
	site := fakeGymSite(t, "broken", true)
	pyDir := filepath.Join(t.TempDir(), "instrument-python")
	r := runInstrument(t, "", []string{"PYTHONPATH=" + site}, "--export", "--python", py, "--python-dir", pyDir, "--run-id", "it's-7")
	require.NoError(t, r.err, r.stderr)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	assert.True(t, strings.HasPrefix(lines[0], "# otelcol-gym instrument: Gym's own telemetry through otelcol-gym's nemo-lens bridge: the installed nemo-lens 0.1.0 lacks"), lines[0])
	sh := exec.Command("sh", "-c", r.stdout+`
printf '%s\n' "$PYTHONPATH" "$OTEL_EXPORTER_OTLP_ENDPOINT" "$OTEL_EXPORTER_OTLP_PROTOCOL" "$NEMO_GYM_OTEL_RUN_ID" "$OTELCOL_GYM_ANNOUNCED" "${OTEL_EXPORTER_OTLP_TRACES_ENDPOINT-unset}"`)
	sh.Env = []string{"PYTHONPATH=/mine", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://elsewhere"}
	out, err := sh.Output()
	require.NoError(t, err, r.stdout)
	assert.Equal(t, filepath.Join(pyDir, "python")+":/mine\nhttp://127.0.0.1:4318\nhttp/protobuf\nit's-7\nbridge\nunset\n", string(out))
	assert.FileExists(t, filepath.Join(pyDir, "python", "sitecustomize.py"))
	assert.FileExists(t, filepath.Join(pyDir, "bridge", "nemo", "lens", "__init__.py"))

	r = runInstrument(t, "", nil, "--export")
	require.NoError(t, r.err, r.stderr)
	assert.Contains(t, r.stdout, "# otelcol-gym instrument: no gym on PATH and no --python: each Gym process decides for itself\n")
	m := strings.SplitN(strings.Split(r.stdout, "# the Python side is in ")[1], ";", 2)
	require.Len(t, m, 2, r.stdout)
	assert.DirExists(t, m[0], "a private dir that stays, for the shell that evaluates the lines")
	require.NoError(t, os.RemoveAll(m[0]))
}
