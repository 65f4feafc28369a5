// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue #34 with the real packages (`make test-realgym`): each choice of
// `otelcol-gym instrument` in a Python that has nemo-gym 0.7.0 and the
// OpenTelemetry SDK, and a span of each through it to an OTLP/HTTP endpoint.
// The venvs: the realgym venv (no nemo-lens), the user-install venv
// (`pip install --ignore-requires-python "nemo-gym[telemetry]==0.7.0"`:
// nemo-lens 0.1.0), and a throwaway venv over the realgym venv's packages
// with a nemo-lens that works.

// userInstallVenvEnv names the venv e2e/realgym/setup-userinstall-venv.sh made.
const userInstallVenvEnv = "OTELCOL_GYM_USERINSTALL_VENV"

func userInstallVenv(t *testing.T) string {
	v := os.Getenv(userInstallVenvEnv)
	if v == "" {
		t.Skipf("%s is not set: `make test-realgym` runs the user-install tests", userInstallVenvEnv)
	}
	return v
}

// checkInstrumentChoice: `otelcol-gym instrument` printed, on gym env
// start's output, the choice mode m expects for the venv's Python, and no
// Gym process (the orchestrator, the four servers) chose otherwise.
func checkInstrumentChoice(t *testing.T, m realGymMode, log string) {
	t.Helper()
	if m.uninstrumented {
		assert.NotContains(t, log, "otelcol-gym instrument", "%s runs Gym without instrument", m.name)
		return
	}
	var lines []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "otelcol-gym instrument: ") {
			lines = append(lines, l)
		}
	}
	require.NotEmpty(t, lines, "instrument's line in gym env start's output")
	assert.True(t, strings.HasPrefix(lines[0], "otelcol-gym instrument: "+m.choice), "%s: instrument's choice:\n%s\nwant the start:\n%s", m.name, lines[0], m.choice)
	assert.Len(t, lines, 1, "one line: a collector answers, and every Gym process chose as announced: %q", lines)
}

// otlpSink is an OTLP/HTTP endpoint that keeps what it is sent.
type otlpSink struct {
	*httptest.Server
	mu     sync.Mutex
	traces [][]byte
}

func startOTLPSink(t *testing.T) *otlpSink {
	s := &otlpSink{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/v1/traces" {
			s.mu.Lock()
			s.traces = append(s.traces, b)
			s.mu.Unlock()
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(s.Close)
	return s
}

// received: some export held all of the byte strings (a span name, a
// service name: protobuf carries strings as they are).
func (s *otlpSink) received(parts ...string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range s.traces {
		all := true
		for _, p := range parts {
			all = all && bytes.Contains(b, []byte(p))
		}
		if all {
			return true
		}
	}
	return false
}

// realServerApp is a Gym-server-like app.py that starts Gym's own telemetry
// the way a Gym server does (init_telemetry), emits one span through Gym's
// managed_span (or, without Gym's telemetry, through the global tracer),
// shuts telemetry down (the spans go out), and prints what it got.
const realServerApp = `import json, os, sys
import sitecustomize
from opentelemetry import trace
import fastapi
got = {"telemetry": sitecustomize.TELEMETRY, "fastapi": fastapi.FastAPI.__name__}
from nemo_gym.telemetry import setup
handle = setup.init_telemetry(server_name="fake_server", server_type="resources_servers")
got["gym_handle"] = handle is not None
try:
    import nemo.lens
    got["lens"] = nemo.lens.__file__
except ImportError:
    got["lens"] = None
if handle is not None:
    from nemo_gym.telemetry._fallbacks import managed_span
    with managed_span("rollout", "gym.instrument.test") as span:
        got["gym_span"] = span is not None
    setup.shutdown_telemetry()
else:
    trace.get_tracer("instrument.test").start_span("generic.instrument.test").end()
    trace.get_tracer_provider().shutdown()
json.dump(got, sys.stdout)
`

type realServerOut struct {
	Telemetry string  `json:"telemetry"`
	FastAPI   string  `json:"fastapi"`
	GymHandle bool    `json:"gym_handle"`
	GymSpan   bool    `json:"gym_span"`
	Lens      *string `json:"lens"`
}

func (o realServerOut) lens() string { return deref(o.Lens) }

// runRealServer runs realServerApp with python under `otelcol-gym
// instrument` (flags), its spans to a sink of its own; it returns what the
// app printed, instrument's one line and the sink.
func runRealServer(t *testing.T, python string, flags ...string) (realServerOut, string, *otlpSink) {
	t.Helper()
	sink := startOTLPSink(t)
	dir := filepath.Join(t.TempDir(), "fake_server")
	require.NoError(t, os.MkdirAll(dir, 0o750))
	app := writeFile(t, dir, "app.py", realServerApp)
	args := append(append([]string{"--endpoint", sink.URL}, flags...), "--", python, app)
	r := runInstrument(t, "", []string{"NEMO_GYM_CONFIG_PATH=fake_server", "NEMO_GYM_OTEL_RUN_ID=instrumenttest"}, args...)
	require.NoError(t, r.err, r.stderr)
	var out realServerOut
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out), "%s\n%s", r.stdout, r.stderr)
	lines := r.instrumentLines()
	require.Len(t, lines, 1, "instrument's choice, and no other line: a collector answers, and the app's process chose as announced\n%s", r.stderr)
	return out, lines[0], sink
}

// No nemo-lens (the realgym venv): the generic instrumentation, FastAPI
// instrumented, one span out with the process's own service.name; Gym's own
// telemetry stays off.
func TestInstrumentRealGeneric(t *testing.T) {
	out, line, sink := runRealServer(t, filepath.Join(realGymVenv(t), "bin", "python"))
	assert.Contains(t, line, "otelcol-gym instrument: generic OpenTelemetry instrumentation (FastAPI, ASGI, aiohttp client): nemo-lens, which Gym's own telemetry needs, is not installed (")
	assert.Equal(t, "generic", out.Telemetry)
	assert.Equal(t, "_InstrumentedFastAPI", out.FastAPI, "FastAPI instrumented before Gym makes its app")
	assert.False(t, out.GymHandle, "Gym's own telemetry off")
	assert.Nil(t, out.Lens, "no nemo-lens, not even the bridge")
	assert.True(t, sink.received("generic.instrument.test", "nemo-gym/fake_server", "instrumenttest"), "the span, its service.name and run id at the endpoint")
}

// nemo-lens 0.1.0 (the user-install venv): the bridge, in front of it; Gym's
// own init_telemetry works and its span reaches the endpoint.
func TestInstrumentRealBridgesLens010(t *testing.T) {
	out, line, sink := runRealServer(t, filepath.Join(userInstallVenv(t), "bin", "python"))
	assert.Contains(t, line, "otelcol-gym instrument: Gym's own telemetry through otelcol-gym's nemo-lens bridge: the installed nemo-lens 0.1.0 lacks ")
	assert.Contains(t, line, "nemo.lens.semconv.NV_DL_RANK")
	assert.Equal(t, "bridge", out.Telemetry)
	assert.Regexp(t, `/otelcol-gym-instrument-[0-9]+/bridge/nemo/lens/__init__\.py$`, out.lens(), "nemo.lens is the bridge")
	assert.True(t, out.GymHandle, "Gym's init_telemetry succeeded")
	assert.True(t, out.GymSpan, "Gym's managed_span made a span")
	assert.True(t, sink.received("gym.instrument.test", "nemo-gym/fake_server", "instrumenttest"), "Gym's span at the endpoint")
}

// A nemo-lens that has what Gym imports is used as it is, asked for or not:
// the bridge never shadows it.
func TestInstrumentRealNeverShadowsAWorkingLens(t *testing.T) {
	realgym := realGymVenv(t)
	python := workingLensVenv(t, realgym)
	for _, flags := range [][]string{nil, {"--telemetry", "gym"}} {
		out, line, sink := runRealServer(t, python, flags...)
		assert.Contains(t, line, "otelcol-gym instrument: Gym's own telemetry: nemo-lens 9.9.9 has everything nemo-gym 0.7.0 imports from it (", "%q", flags)
		assert.Equal(t, "gym", out.Telemetry)
		assert.Equal(t, filepath.Join(filepath.Dir(filepath.Dir(python)), "lib", "python3.13", "site-packages", "nemo", "lens", "__init__.py"), out.lens(), "the installed nemo-lens")
		assert.True(t, out.GymHandle)
		assert.True(t, sink.received("gym.instrument.test", "instrumenttest"), "Gym's span at the endpoint")
	}
}

// workingLensVenv makes a venv over the realgym venv's packages (a .pth)
// with a nemo-lens 9.9.9 of its own that has every name Gym imports: the
// bridge's files under another version (what a later nemo-lens release
// would be, as far as Gym's imports go). It returns the venv's python.
func workingLensVenv(t *testing.T, realgym string) string {
	t.Helper()
	venv := filepath.Join(t.TempDir(), "venv")
	out, err := exec.Command(filepath.Join(realgym, "bin", "python"), "-m", "venv", "--without-pip", venv).CombinedOutput()
	require.NoError(t, err, string(out))
	site := filepath.Join(venv, "lib", "python3.13", "site-packages")
	writeFile(t, site, "realgym.pth", filepath.Join(realgym, "lib", "python3.13", "site-packages")+"\n")
	src := filepath.Join(repoRoot(t), "internal", "instrument", "bridge")
	require.NoError(t, filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(p) != ".py" {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		dst := filepath.Join(site, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(dst), 0o750))
		return os.WriteFile(dst, bytes.ReplaceAll(b, []byte(`"0+otelcol-gym.bridge"`), []byte(`"9.9.9"`)), 0o600)
	}))
	info := filepath.Join(site, "nemo_lens-9.9.9.dist-info")
	require.NoError(t, os.MkdirAll(info, 0o750))
	writeFile(t, info, "METADATA", "Metadata-Version: 2.1\nName: nemo-lens\nVersion: 9.9.9\n")
	return filepath.Join(venv, "bin", "python")
}
