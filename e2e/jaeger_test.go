// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The Jaeger suite (issue #5, acceptance 4) runs gymsim through
// config/jaeger.yaml into a real Jaeger v2 and reads Jaeger's dependency
// graph: with http_client on it shows orchestrator → agent, agent → model and
// agent → resources; with http_client off (no CLIENT spans, no traceparent)
// the gym processor's §4.4 repair still gives agent → model and
// agent → resources, and each rollout is one trace in Jaeger.
//
// It is opt-in: JAEGER_BIN must name a Jaeger v2 binary (config/README.md's
// "Jaeger beside it" builds one; it takes 10+ minutes). Jaeger runs with a
// loopback-only config on free ports and never traces itself.

const jaegerRunID = "jaegerrun01"

const (
	gymsimOrchestrator = "nemo-gym/orchestrator"
	gymsimAgent        = "nemo-gym/example_single_tool_call_simple_agent"
	gymsimModel        = "nemo-gym/policy_model"
	gymsimResources    = "nemo-gym/example_single_tool_call"
)

const jaegerConfig = `service:
  extensions: [jaeger_storage, jaeger_query, healthcheckv2]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    resource:
      service.name: jaeger
    metrics:
      level: none
    logs:
      level: info
extensions:
  jaeger_query:
    enable_tracing: false
    storage:
      traces: mem
    http:
      endpoint: 127.0.0.1:${QUERY_HTTP}
    grpc:
      endpoint: 127.0.0.1:${QUERY_GRPC}
  jaeger_storage:
    backends:
      mem:
        memory:
          max_traces: 100000
  healthcheckv2:
    use_v2: true
    http:
      endpoint: 127.0.0.1:${HEALTH}
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:${OTLP_GRPC}
      http:
        endpoint: 127.0.0.1:${OTLP_HTTP}
processors:
  batch:
exporters:
  jaeger_storage_exporter:
    trace_storage: mem
`

// jaeger is one Jaeger v2 subprocess.
type jaeger struct {
	queryHTTP, otlpGRPC int
	out                 *lockedBuffer
}

func startJaeger(t *testing.T, bin string) *jaeger {
	t.Helper()
	j := &jaeger{queryHTTP: freePort(t), otlpGRPC: freePort(t), out: &lockedBuffer{}}
	health := freePort(t)
	cfg := strings.NewReplacer(
		"${QUERY_HTTP}", fmt.Sprint(j.queryHTTP),
		"${QUERY_GRPC}", fmt.Sprint(freePort(t)),
		"${HEALTH}", fmt.Sprint(health),
		"${OTLP_GRPC}", fmt.Sprint(j.otlpGRPC),
		"${OTLP_HTTP}", fmt.Sprint(freePort(t)),
	).Replace(jaegerConfig)
	path := writeFile(t, t.TempDir(), "jaeger.yaml", cfg)
	cmd := exec.Command(bin, "--config=file:"+path)
	// Jaeger must not send anything to a default OTLP endpoint.
	cmd.Env = append(os.Environ(), "OTEL_TRACES_EXPORTER=none", "OTEL_SDK_DISABLED=true")
	cmd.Stdout, cmd.Stderr = j.out, j.out
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		if t.Failed() {
			t.Logf("jaeger output:\n%s", j.out.String())
		}
	})
	url := fmt.Sprintf("http://127.0.0.1:%d/status", health)
	poll(t, time.Minute, done, "jaeger healthy on "+url, func() bool {
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return j
}

// poll calls ok every 200ms until it returns true; it fails the test after
// limit or when done is closed (the process exited).
func poll(t *testing.T, limit time.Duration, done <-chan struct{}, what string, ok func() bool) {
	t.Helper()
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for !ok() {
		select {
		case <-done:
			t.Fatalf("process exited while waiting for %s", what)
		case <-deadline.C:
			t.Fatalf("timed out after %v waiting for %s", limit, what)
		case <-tick.C:
		}
	}
}

func (j *jaeger) getJSON(t *testing.T, path string, v any) bool {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d%s", j.queryHTTP, path))
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false
	}
	return json.NewDecoder(resp.Body).Decode(v) == nil
}

type jaegerDependency struct {
	Parent    string `json:"parent"`
	Child     string `json:"child"`
	CallCount int    `json:"callCount"`
}

// dependencies returns Jaeger's dependency links of the last hour as
// "parent -> child".
func (j *jaeger) dependencies(t *testing.T) map[string]int {
	var body struct {
		Data []jaegerDependency `json:"data"`
	}
	if !j.getJSON(t, fmt.Sprintf("/api/dependencies?endTs=%d&lookback=3600000", time.Now().UnixMilli()), &body) {
		return nil
	}
	out := map[string]int{}
	for _, d := range body.Data {
		out[d.Parent+" -> "+d.Child] += d.CallCount
	}
	return out
}

type jaegerTrace struct {
	TraceID string `json:"traceID"`
	Spans   []struct {
		SpanID     string `json:"spanID"`
		Operation  string `json:"operationName"`
		ProcessID  string `json:"processID"`
		References []struct {
			RefType string `json:"refType"`
			TraceID string `json:"traceID"`
			SpanID  string `json:"spanID"`
		} `json:"references"`
	} `json:"spans"`
	Processes map[string]struct {
		ServiceName string `json:"serviceName"`
	} `json:"processes"`
}

func (j *jaeger) trace(t *testing.T, id string) (jaegerTrace, bool) {
	var body struct {
		Data []jaegerTrace `json:"data"`
	}
	if !j.getJSON(t, "/api/traces/"+id, &body) || len(body.Data) != 1 {
		return jaegerTrace{}, false
	}
	return body.Data[0], true
}

func TestJaegerDependencies(t *testing.T) {
	bin := os.Getenv("JAEGER_BIN")
	if bin == "" {
		t.Skip("set JAEGER_BIN to a Jaeger v2 binary (config/README.md: \"Jaeger beside it\") to run the Jaeger suite")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("JAEGER_BIN=%q: %v", bin, err)
	}
	for _, tc := range []struct {
		name       string
		args       []string
		want       []string
		httpClient bool
	}{
		{
			name:       "http_client_on",
			args:       []string{"--preset=default"},
			want:       []string{gymsimOrchestrator + " -> " + gymsimAgent, gymsimAgent + " -> " + gymsimModel, gymsimAgent + " -> " + gymsimResources},
			httpClient: true,
		},
		{
			name: "http_client_off",
			args: []string{"--span-groups=default,-http_client"},
			want: []string{gymsimAgent + " -> " + gymsimModel, gymsimAgent + " -> " + gymsimResources},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := startJaeger(t, bin)
			dir := t.TempDir()
			captureDir := filepath.Join(dir, "captures")
			p := newPorts(t)
			env := []string{
				"NEMO_GYM_CAPTURE_DIR=" + captureDir,
				fmt.Sprintf("JAEGER_OTLP_GRPC=127.0.0.1:%d", j.otlpGRPC),
			}
			col := startCollector(t, p, env, "--config", onFreePorts(t, "jaeger.yaml", p))

			truthPath := filepath.Join(dir, "truth.jsonl")
			args := append([]string{
				"--rollouts=8", "--concurrency=4", "--run-id=" + jaegerRunID, "--retry-rate=0",
				"--batch-delay=200ms", "--blocking", "--truth=" + truthPath,
				fmt.Sprintf("--endpoint=127.0.0.1:%d", p.GRPC),
			}, tc.args...)
			out, err := runCmd(t, 2*time.Minute, nil, gymsimBinary(t), args...)
			require.NoError(t, err, "gymsim:\n%s", out)
			// SIGTERM: the gym processor takes every pending decision and
			// the otlp exporter drains its queue into Jaeger.
			require.NoError(t, col.stop(), "collector exit")

			var deps map[string]int
			poll(t, time.Minute, nil, "Jaeger's dependency links "+strings.Join(tc.want, ", "), func() bool {
				deps = j.dependencies(t)
				for _, w := range tc.want {
					if deps[w] == 0 {
						return false
					}
				}
				return true
			})
			var got []string
			for d, n := range deps {
				got = append(got, fmt.Sprintf("%s (%d)", d, n))
			}
			sort.Strings(got)
			t.Logf("Jaeger /api/dependencies: %s", strings.Join(got, "; "))
			if !tc.httpClient {
				assert.Zero(t, deps[gymsimOrchestrator+" -> "+gymsimAgent], "orchestrator → agent cannot be recovered without CLIENT spans (§4.4)")
			}

			// One trace per rollout in Jaeger: T' holds all of the rollout's
			// spans, in agent, model and resources, with one root.
			truth := readJSONLines[truthSpan](t, truthPath)
			byRollout := map[string][]truthSpan{}
			for _, s := range truth {
				if s.RolloutID != "" {
					byRollout[s.RolloutID] = append(byRollout[s.RolloutID], s)
				}
			}
			require.NotEmpty(t, byRollout)
			for r, spans := range byRollout {
				tr, ok := j.trace(t, rolloutTraceID(jaegerRunID, r))
				if !assert.True(t, ok, "rollout %s: trace %s in Jaeger", r, rolloutTraceID(jaegerRunID, r)) {
					continue
				}
				have := map[string]bool{}
				roots := 0
				services := map[string]bool{}
				for _, s := range tr.Spans {
					have[s.SpanID] = true
					services[tr.Processes[s.ProcessID].ServiceName] = true
				}
				for _, s := range tr.Spans {
					parentInTrace := false
					for _, ref := range s.References {
						if ref.RefType == "CHILD_OF" && ref.TraceID == tr.TraceID && have[ref.SpanID] {
							parentInTrace = true
						}
					}
					if !parentInTrace {
						roots++
					}
				}
				for _, s := range spans {
					assert.True(t, have[s.SpanID], "rollout %s: span %s %q (%s) in its trace", r, s.SpanID, s.Name, s.Service)
				}
				assert.Equal(t, 1, roots, "rollout %s: one root in its Jaeger trace", r)
				for _, svc := range []string{gymsimAgent, gymsimModel, gymsimResources} {
					assert.True(t, services[svc], "rollout %s: %s in its trace", r, svc)
				}
			}
		})
	}
}
