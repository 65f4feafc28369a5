// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
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
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
)

// The test binary doubles as gymsim: with this variable set it runs gymsim's
// main, so the orchestrator can re-execute it as the servers.
const asGymsim = "GYMSIM_TEST_RUN_AS_GYMSIM"

func TestMain(m *testing.M) {
	if os.Getenv(asGymsim) == "1" {
		os.Exit(run(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// otlpSink is an OTLP/HTTP traces endpoint that keeps what it receives.
type otlpSink struct {
	mu     sync.Mutex
	traces []ptrace.Traces
}

func (s *otlpSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil || r.URL.Path != "/v1/traces" {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	req := ptraceotlp.NewExportRequest()
	if err := req.UnmarshalProto(body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.traces = append(s.traces, req.Traces())
	s.mu.Unlock()
	out, _ := ptraceotlp.NewExportResponse().MarshalProto()
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// received is one exported span as the sink saw it.
type received struct {
	service, name, kind, traceID, parentID string
	attrs                                  map[string]any
	res                                    map[string]any
	scope                                  string
}

func (s *otlpSink) spans() map[string]received {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]received{}
	for _, td := range s.traces {
		for i := 0; i < td.ResourceSpans().Len(); i++ {
			rs := td.ResourceSpans().At(i)
			res := rs.Resource().Attributes().AsRaw()
			for j := 0; j < rs.ScopeSpans().Len(); j++ {
				ss := rs.ScopeSpans().At(j)
				for k := 0; k < ss.Spans().Len(); k++ {
					sp := ss.Spans().At(k)
					id := sp.SpanID().String()
					if _, dup := out[id]; dup {
						out[id+"-dup"] = received{}
					}
					out[id] = received{
						service: res["service.name"].(string), name: sp.Name(), kind: strings.ToUpper(sp.Kind().String()),
						traceID: sp.TraceID().String(), parentID: sp.ParentSpanID().String(),
						attrs: sp.Attributes().AsRaw(), res: res, scope: ss.Scope().Name(),
					}
				}
			}
		}
	}
	return out
}

// runGymsim runs the test binary as gymsim with args into a fresh sink.
func runGymsim(t *testing.T, args ...string) (*otlpSink, []truthLine, string) {
	sink, truth, out, _ := runGymsimIn(t, args...)
	return sink, truth, out
}

// runGymsimIn is runGymsim that also returns the capture dir.
func runGymsimIn(t *testing.T, args ...string) (*otlpSink, []truthLine, string, string) {
	t.Helper()
	sink := &otlpSink{}
	srv := httptest.NewServer(sink)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	truthPath := filepath.Join(dir, "truth.jsonl")
	args = append([]string{
		"--endpoint=" + srv.URL, "--protocol=http", "--batch-delay=50ms", "--blocking",
		"--run-id=testrun", "--truth=" + truthPath, "--capture-dir=" + filepath.Join(dir, "captures"),
	}, args...)
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), asGymsim+"=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	f, err := os.Open(truthPath)
	require.NoError(t, err)
	defer f.Close()
	var truth []truthLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l truthLine
		require.NoError(t, json.Unmarshal(sc.Bytes(), &l))
		truth = append(truth, l)
	}
	require.NoError(t, sc.Err())
	return sink, truth, string(out), filepath.Join(dir, "captures")
}

// TestTruthMatchesExport: every span exported is in the truth exactly once
// with its name, kind, service and trace, and each rollout has the spans
// the reference's trace shape gives it, from all four processes.
func TestTruthMatchesExport(t *testing.T) {
	sink, truth, out, captures := runGymsimIn(t, "--rollouts=6", "--concurrency=3", "--preset=all", "--retry-rate=0", "--error-rate=0", "--model-calls=3")
	got := sink.spans()
	require.Equal(t, len(truth), len(got), "spans in the truth vs exported\n%s", out)
	byRollout := map[string]map[string]int{} // rollout → name → count
	services := map[string]map[string]bool{}
	for _, l := range truth {
		s, ok := got[l.SpanID]
		require.True(t, ok, "truth span %s %s not exported", l.SpanID, l.Name)
		assert.Equal(t, l.Name, s.name)
		assert.Equal(t, l.Kind, s.kind, "kind of %s", l.Name)
		assert.Equal(t, l.Service, s.service)
		assert.Equal(t, l.TraceID, s.traceID)
		if byRollout[l.RolloutID] == nil {
			byRollout[l.RolloutID] = map[string]int{}
			services[l.RolloutID] = map[string]bool{}
		}
		byRollout[l.RolloutID][l.Name]++
		services[l.RolloutID][l.Service] = true
		assert.Equal(t, "testrun", s.res["nemo.run.id"])
		assert.Equal(t, "testrun-rank0", s.res["service.instance.id"])
		assert.Equal(t, strings.TrimPrefix(l.Service, "nemo-gym/"), s.res["nemo.gym.server.name"])
	}
	assert.Equal(t, map[string]int{"gym.job": 1}, byRollout[""])
	assert.Len(t, byRollout, 7)
	for r, names := range byRollout {
		if r == "" {
			continue
		}
		assert.Len(t, services[r], 4, "services of %s", r)
		// 8 calls (run, agent loop, 3 model, 1 tool, verify): a CLIENT, a SERVER,
		// its two http receive (request, disconnect) and three http send each;
		// and the model server's 3 CLIENT calls to its LLM.
		want := map[string]int{
			"HTTP POST": 10, "POST /run": 1, "POST /run http receive": 2, "POST /run http send": 3,
			"POST /ng-rollout/{rollout_id}/v1/responses": 1, "POST /ng-rollout/{rollout_id}/v1/responses http receive": 2,
			"POST /ng-rollout/{rollout_id}/v1/responses http send": 3,
			"POST": 5, "POST http receive": 10, "POST http send": 15,
			"gym.rollout": 1, "gym.agent.responses": 1, "gym.model.responses": 3, "gym.verify": 1, "gym.tool_call": 1,
			"gym.sandbox.exec": 1,
		}
		assert.Equal(t, want, names, "spans of rollout %s", r)
		// One capture line per model call, Gym's keys, no trace ids.
		b, err := os.ReadFile(filepath.Join(captures, r+".capture.jsonl"))
		require.NoError(t, err)
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		assert.Len(t, lines, 3, "capture lines of %s", r)
		for _, line := range lines {
			var c map[string]any
			require.NoError(t, json.Unmarshal([]byte(line), &c))
			for _, k := range []string{"model_call_id", "dialect", "model_ref", "started_at", "completed_at", "latency_ms", "status_code", "error_category", "request", "response"} {
				assert.Contains(t, c, k)
			}
			assert.NotContains(t, line, "trace_id")
		}
	}
}

// TestTraceShape checks the default preset's tree: one trace under gym.job,
// traceparent only from CLIENT spans, prefixes on model and resources calls,
// rollout ids where Gym sets them.
func TestTraceShape(t *testing.T) {
	sink, truth, _ := runGymsim(t, "--rollouts=3", "--concurrency=1", "--retry-rate=0", "--error-rate=0")
	got := sink.spans()
	var job received
	for _, l := range truth {
		if l.Name == "gym.job" {
			job = got[l.SpanID]
		}
	}
	require.Equal(t, "gym.job", job.name)
	for _, l := range truth {
		s := got[l.SpanID]
		assert.Equal(t, job.traceID, s.traceID, "one trace under gym.job in the default preset")
		if s.name == "gym.job" {
			assert.Empty(t, strings.Trim(s.parentID, "0"))
			continue
		}
		parent, ok := got[s.parentID]
		require.True(t, ok, "parent of %s %s", l.Service, s.name)
		switch s.kind {
		case "SERVER":
			assert.Equal(t, "CLIENT", parent.kind, "a SERVER span's parent is the CLIENT that called it")
			if !strings.HasPrefix(s.name, "POST /ng-rollout/") { // the agent calls itself
				assert.NotEqual(t, parent.service, s.service)
			}
		case "CLIENT":
			assert.Equal(t, "POST", s.attrs["http.request.method"])
			u := s.attrs["url.full"].(string)
			if strings.HasSuffix(u, "/run") {
				assert.Equal(t, "gym.job", parent.name)
				assert.NotContains(t, s.attrs, "nemo.gym.rollout.id", "driver calls carry no rollout id")
			} else if strings.HasPrefix(u, "http://127.0.0.1:8000/v1/") {
				assert.Equal(t, "nemo-gym/policy_model", s.service, "the model server calls its LLM")
				assert.Equal(t, l.RolloutID, s.attrs["nemo.gym.rollout.id"], "in the rollout context of its request")
			} else {
				assert.Contains(t, u, "/ng-rollout/"+l.RolloutID+"/")
			}
		}
		if s.name == "POST" {
			path, _ := s.attrs["url.path"].(string)
			if path == "" {
				path, _ = s.attrs["http.target"].(string)
				assert.NotContains(t, s.attrs, "url.path", "old semconv only")
			}
			assert.True(t, strings.HasPrefix(path, "/ng-rollout/"+l.RolloutID+"/"), "path %q of a prefixed call", path)
		}
		if s.name == "gym.rollout" {
			assert.Equal(t, l.RolloutID, s.attrs["nemo.gym.rollout.id"])
			assert.Equal(t, "POST /run", parent.name)
		}
		assert.NotContains(t, []string{"gym.model.responses", "gym.verify", "gym.agent.responses"}, s.name, "not in the default preset")
	}
}

// TestNoClientSpansNoTraceparent: with http_client off every SERVER span
// starts a trace, as in Gym.
func TestNoClientSpansNoTraceparent(t *testing.T) {
	sink, truth, _ := runGymsim(t, "--rollouts=2", "--span-groups=default,-http_client", "--retry-rate=0")
	got := sink.spans()
	servers := 0
	for _, l := range truth {
		s := got[l.SpanID]
		assert.NotEqual(t, "CLIENT", s.kind)
		if s.kind == "SERVER" {
			servers++
			assert.Empty(t, strings.Trim(s.parentID, "0"), "SERVER %s has no parent", s.name)
		}
	}
	assert.Equal(t, 2*6, servers)
}

// TestObservabilityOff: no rollout ids, no prefixes, no capture files.
func TestObservabilityOff(t *testing.T) {
	sink, truth, _ := runGymsim(t, "--rollouts=2", "--observability=false")
	for _, l := range truth {
		assert.Empty(t, l.RolloutID)
	}
	for _, s := range sink.spans() {
		assert.NotContains(t, s.attrs, "nemo.gym.rollout.id")
		if u, ok := s.attrs["url.full"].(string); ok {
			assert.NotContains(t, u, "/ng-rollout/")
		}
	}
}

// TestTelemetryOff: Gym with its telemetry off (nemo-gym from the package
// index) exports no span but still writes its capture files.
func TestTelemetryOff(t *testing.T) {
	sink, truth, _, captures := runGymsimIn(t, "--rollouts=3", "--telemetry=false")
	assert.Empty(t, sink.spans(), "no span exported")
	assert.NotEmpty(t, truth, "the spans were made, and went nowhere")
	for _, id := range []string{"0-0", "0-1", "0-2"} {
		assert.FileExists(t, filepath.Join(captures, id+".capture.jsonl"))
	}
}

// TestExportFailureExitsNonZero: spans that cannot be exported fail the run.
func TestExportFailureExitsNonZero(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "nope", http.StatusBadRequest)
	}))
	defer srv.Close()
	cmd := exec.Command(os.Args[0], "--endpoint="+srv.URL, "--protocol=http", "--rollouts=1", "--batch-delay=50ms")
	cmd.Env = append(os.Environ(), asGymsim+"=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "%s", out)
	assert.Contains(t, string(out), "spans lost")
}

func TestParseSpanGroups(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want string
		err  bool
	}{
		{spec: "default", want: "http_client,job,rollout,server"},
		{spec: "DEFAULT, sandbox", want: "http_client,job,rollout,sandbox,server"},
		{spec: "per_rollout", want: "agent,concurrency,http_client,model_call,rollout,server,verify"},
		{spec: "default,-http_client", want: "job,rollout,server"},
		{spec: "all,-job", want: "agent,checkpoint,concurrency,evaluate,forward_backward,http_client,load_checkpoint,model_call,model_init,optimizer,rollout,sandbox,server,step,tool_call,verify"},
		{spec: "default,nope", err: true},
	} {
		got, err := parseSpanGroups(tc.spec)
		if tc.err {
			assert.Error(t, err, tc.spec)
			continue
		}
		require.NoError(t, err, tc.spec)
		assert.Equal(t, tc.want, got.String(), tc.spec)
	}
}

func TestRolloutIDs(t *testing.T) {
	assert.Equal(t, "0-0", rolloutID(0, 0, 0))
	assert.Equal(t, "12-3-a1", rolloutID(12, 3, 1))
	for path, want := range map[string][2]string{
		"/ng-rollout/12-3/verify":                         {"12-3", "/verify"},
		"/ng-rollout/12-3-a1/training-token-capture/v1/x": {"12-3-a1", "/training-token-capture/v1/x"},
		"/verify":             {"", "/verify"},
		"/ng-rollout//verify": {"", "/ng-rollout//verify"},
		"/ng-rollout/x":       {"", "/ng-rollout/x"},
	} {
		r, rest := splitRolloutPath(path)
		assert.Equal(t, want, [2]string{r, rest}, path)
	}
	assert.False(t, validRolloutID("../x"))
	assert.False(t, validRolloutID(".x"))
	assert.True(t, validRolloutID("12-3-a1"))
}

func TestPlansAreRepeatable(t *testing.T) {
	c, err := parseConfig([]string{"--rollouts=200", "--retry-rate=0.5", "--error-rate=0.5", "--seed=7"}, io.Discard)
	require.NoError(t, err)
	a, b := makePlans(c), makePlans(c)
	assert.Equal(t, a, b)
	retries := 0
	for i, p := range a {
		assert.Equal(t, [2]int{i / 4, i % 4}, [2]int{p.task, p.n})
		if p.failFirst {
			retries++
		}
	}
	assert.Greater(t, retries, 0)
	assert.Less(t, retries, 200)
}

func TestConfigRefusesNonsense(t *testing.T) {
	for _, args := range [][]string{
		{"--preset=huge"}, {"--protocol=udp"}, {"--concurrency=0"}, {"--error-rate=2"}, {"--role=x"}, {"--run-id=../x"},
	} {
		_, err := parseConfig(args, io.Discard)
		assert.Error(t, err, "%v", args)
	}
}
