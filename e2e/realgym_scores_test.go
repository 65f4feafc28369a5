// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-gym/otelcol-gym/internal/modelcall"
)

// Issue #57: beside Phoenix, the same real-Gym run goes to a real `mlflow
// server` 3.17.2 (e2e/mlflow/setup-venv.sh, OTELCOL_GYM_MLFLOW_VENV; SQLite,
// loopback, OTLP/HTTP with x-mlflow-experiment-id), and Gym's reward,
// failure kind and verdict reach both as their own scores through the
// gymscores extension: Phoenix session and trace annotations, MLflow
// assessments. Without the variable the run goes to Phoenix alone.

const mlflowVenvEnv = "OTELCOL_GYM_MLFLOW_VENV"

// mlflowServer is one `mlflow server` of a run.
type mlflowServer struct {
	url  string
	done chan struct{}
}

// startMLflow starts `mlflow server` on SQLite under run.dir, one worker,
// and returns the wait until it answers (started beside Phoenix: each takes
// a minute or two to start on a loaded machine); nil without the venv.
func startMLflow(t *testing.T, run *realGymRun) func() *mlflowServer {
	venv := os.Getenv(mlflowVenvEnv)
	if venv == "" {
		return nil
	}
	port := freePort(t)
	work := filepath.Join(run.dir, "mlflow")
	require.NoError(t, os.MkdirAll(work, 0o750))
	log, err := os.Create(filepath.Join(run.dir, "mlflow.log"))
	require.NoError(t, err)
	cmd := exec.Command(filepath.Join(venv, "bin", "mlflow"), "server", "--host", "127.0.0.1", "--port", fmt.Sprint(port),
		"--workers", "1", "--backend-store-uri", "sqlite:///"+filepath.Join(work, "mlflow.db"),
		"--default-artifact-root", filepath.Join(work, "artifacts"))
	cmd.Env = append(os.Environ(), "MLFLOW_DISABLE_TELEMETRY=true", "DO_NOT_TRACK=true")
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // uvicorn's worker with it
	require.NoError(t, cmd.Start())
	m := &mlflowServer{url: fmt.Sprintf("http://127.0.0.1:%d", port), done: make(chan struct{})}
	go func() { _ = cmd.Wait(); log.Close(); close(m.done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-m.done:
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-m.done
		}
	})
	started := time.Now()
	return func() *mlflowServer {
		awaitMLflow(t, run, m, started)
		return m
	}
}

func awaitMLflow(t *testing.T, run *realGymRun, m *mlflowServer, started time.Time) {
	awaitBackend(t, "mlflow server", m.url+"/health", m.done, filepath.Join(run.dir, "mlflow.log"))
	t.Logf("mlflow server answered in %s", time.Since(started).Round(time.Second))
}

// awaitBackend waits, 5 minutes at most, until a backend the run started
// answers health with 200; when it exits first, the test fails with its log.
// 5 minutes: Phoenix's imports and migrations take 2.5 on a loaded 2-core
// machine with MLflow starting beside it.
func awaitBackend(t *testing.T, name, health string, done <-chan struct{}, logPath string) {
	t.Helper()
	pollUntil(t, 5*time.Minute, name+" to answer", func() bool {
		select {
		case <-done:
			b, _ := os.ReadFile(logPath)
			t.Fatalf("%s exited:\n%s", name, b)
		default:
		}
		resp, err := http.Get(health)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// scoresOverlay adds to the forwarding overlay doc (Phoenix's, by the one
// variable, with gymscores for it) the viewer's gym_output, and when m is
// there MLflow: a second forwarding pipeline from the same connector and a
// second gymscores.
func scoresOverlay(doc map[string]any, run *realGymRun, m *mlflowServer) {
	exts, _ := doc["extensions"].(map[string]any)
	if exts == nil {
		exts = map[string]any{}
		doc["extensions"] = exts
	}
	exts["gymview"] = map[string]any{"gym_output": filepath.Join(run.dir, "gym-output")}
	if m == nil {
		return
	}
	doc["exporters"].(map[string]any)["otlp_http/mlflow"] = map[string]any{
		"traces_endpoint": m.url + "/v1/traces", "headers": map[string]any{"x-mlflow-experiment-id": "0"},
	}
	service := doc["service"].(map[string]any)
	service["pipelines"].(map[string]any)["traces/mlflow"] = map[string]any{
		"receivers": []string{"gymforward/traces"}, "exporters": []string{"otlp_http/mlflow"},
	}
	exts["gymscores/mlflow"] = map[string]any{"backend": "mlflow", "endpoint": m.url}
	service["extensions"] = append(service["extensions"].([]any), "gymscores/mlflow")
}

// gymScore is what Gym's output says of a rollout.
type gymScore struct {
	reward  float64
	verdict string
}

// gymScores reads Gym's output of the run: rollout id → reward and verdict.
func gymScores(t *testing.T, run *realGymRun) map[string]gymScore {
	type row struct {
		Task    *int     `json:"_ng_task_index"`
		Rollout *int     `json:"_ng_rollout_index"`
		Reward  *float64 `json:"reward"`
	}
	out := map[string]gymScore{}
	for _, r := range readJSONLines[row](t, filepath.Join(run.dir, "gym-output", "rollouts.jsonl")) {
		require.NotNil(t, r.Reward)
		out[fmt.Sprintf("%d-%d", *r.Task, *r.Rollout)] = gymScore{reward: *r.Reward}
	}
	type verdict struct {
		ID      string `json:"rollout_id"`
		Verdict string `json:"verdict"`
	}
	for _, v := range readJSONLines[verdict](t, filepath.Join(run.dir, "gym-output", "rollout_verdicts.jsonl")) {
		s := out[v.ID]
		s.verdict = v.Verdict
		out[v.ID] = s
	}
	return out
}

// phoenixAnnotation is a session or trace annotation as Phoenix lists it.
type phoenixAnnotation struct {
	SessionID string `json:"session_id"`
	TraceID   string `json:"trace_id"`
	Name      string `json:"name"`
	Result    struct {
		Score *float64 `json:"score"`
		Label *string  `json:"label"`
	} `json:"result"`
}

func phoenixAnnotations(t *testing.T, base, kind string) []phoenixAnnotation {
	resp, err := http.Get(base + "/v1/projects/default/" + kind + "_annotations?" + url.Values{"identifier": {"otelcol-gym"}, "limit": {"1000"}}.Encode())
	require.NoError(t, err)
	defer resp.Body.Close()
	var page struct {
		Data []phoenixAnnotation `json:"data"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&page), kind)
	return page.Data
}

// mlflowTrace is what the checks read of MLflow's GET /api/3.0/mlflow/traces/get.
type mlflowTrace struct {
	Info struct {
		TraceID  string            `json:"trace_id"`
		Metadata map[string]string `json:"trace_metadata"`
		// Request and Response: MLflow's previews of the trace's root span's
		// inputs and outputs (from input.value / output.value).
		Request     string `json:"request_preview"`
		Response    string `json:"response_preview"`
		Assessments []struct {
			Name     string `json:"assessment_name"`
			Feedback struct {
				Value any `json:"value"`
			} `json:"feedback"`
			Source struct {
				Type string `json:"source_type"`
			} `json:"source"`
		} `json:"assessments"`
	} `json:"trace_info"`
	Spans []struct {
		Attributes []struct {
			Key   string `json:"key"`
			Value struct {
				String string `json:"string_value"`
			} `json:"value"`
		} `json:"attributes"`
	} `json:"spans"`
}

func mlflowGet(t *testing.T, base, trace string) (mlflowTrace, bool) {
	resp, err := http.Get(base + "/api/3.0/mlflow/traces/get?trace_id=tr-" + trace)
	require.NoError(t, err)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return mlflowTrace{}, false
	}
	var body struct {
		Trace mlflowTrace `json:"trace"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	return body.Trace, true
}

// mlflowSessions is how many traces MLflow holds in the default experiment
// per session ("": none, the spans of no rollout: start-up, the job).
func mlflowSessions(t *testing.T, base string) map[string]int {
	body := `{"locations":[{"type":"MLFLOW_EXPERIMENT","mlflow_experiment":{"experiment_id":"0"}}],"max_results":500}`
	resp, err := http.Post(base+"/api/3.0/mlflow/traces/search", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	var page struct {
		Traces []struct {
			Metadata map[string]string `json:"trace_metadata"`
		} `json:"traces"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&page))
	out := map[string]int{}
	for _, tr := range page.Traces {
		out[tr.Metadata["mlflow.trace.session"]]++
	}
	return out
}

// rolloutTraces is rollouts.jsonl's rollout id → trace id.
func rolloutTraces(t *testing.T, run *realGymRun) map[string]string {
	type line struct {
		ID    string `json:"rollout_id"`
		Trace string `json:"trace_id"`
	}
	out := map[string]string{}
	for _, l := range readJSONLines[line](t, filepath.Join(run.captureDir, "rollouts.jsonl")) {
		out[l.ID] = l.Trace
	}
	return out
}

// awaitScores waits, the collector still running, until both backends hold
// every rollout's reward (Gym's output and the collector's rollouts.jsonl are
// complete once Gym stopped); what is missing after that is reported by
// checkScores.
func awaitScores(t *testing.T, run *realGymRun) {
	if run.phoenix == nil || !run.scores {
		return // a run without gymscores (the slow run, the user-install run)
	}
	started := time.Now()
	ok := waitFor(2*time.Minute, func() bool {
		n := 0
		for _, a := range phoenixAnnotations(t, run.phoenix.url, "session") {
			if a.Name == "reward" {
				n++
			}
		}
		if n < len(run.rollouts) {
			return false
		}
		if run.mlflow == nil {
			return true
		}
		for _, trace := range rolloutTraces(t, run) {
			tr, found := mlflowGet(t, run.mlflow.url, trace)
			if !found || len(tr.Info.Assessments) == 0 {
				return false
			}
		}
		return true
	})
	t.Logf("scores: in the backends %v after Gym stopped (%.0f s)", ok, time.Since(started).Seconds())
}

// checkScores: each Phoenix session carries its rollout's reward and
// verdict as annotations, and in MLflow each rollout is one trace whose
// session is the rollout id, with CHAT_MODEL spans for the captured calls,
// the captures' input tokens, AGENT and TOOL spans and a reward assessment
// equal to Gym's.
func checkScores(t *testing.T, run *realGymRun) {
	t.Helper()
	if run.phoenix == nil || !run.scores {
		return
	}
	want := gymScores(t, run)
	require.Len(t, want, len(run.rollouts))
	traces := rolloutTraces(t, run)

	session := map[string]map[string]phoenixAnnotation{}
	for _, a := range phoenixAnnotations(t, run.phoenix.url, "session") {
		if session[a.SessionID] == nil {
			session[a.SessionID] = map[string]phoenixAnnotation{}
		}
		_, dup := session[a.SessionID][a.Name]
		assert.False(t, dup, "session %s: %s annotated once", a.SessionID, a.Name)
		session[a.SessionID][a.Name] = a
	}
	traceReward := map[string]float64{}
	for _, a := range phoenixAnnotations(t, run.phoenix.url, "trace") {
		if a.Name == "reward" && a.Result.Score != nil {
			traceReward[a.TraceID] = *a.Result.Score
		}
	}
	for id, w := range want {
		r := session[id]["reward"].Result.Score
		if assert.NotNil(t, r, "Phoenix session %s: reward", id) {
			assert.Equal(t, w.reward, *r, "Phoenix session %s: reward = Gym's", id)
		}
		assert.Equal(t, w.reward, traceReward[traces[id]], "Phoenix trace of %s: reward = Gym's", id)
		if w.verdict != "" {
			v := session[id]["gym.verdict"].Result.Label
			if assert.NotNil(t, v, "Phoenix session %s: verdict", id) {
				assert.Equal(t, w.verdict, *v, "Phoenix session %s: verdict = Gym's", id)
			}
		}
	}
	t.Logf("Phoenix: %d sessions annotated", len(session))

	if run.mlflow == nil {
		return
	}
	var calls, tools int
	var wantIn int64
	for _, r := range run.rollouts {
		path := filepath.Join(run.captureDir, r+".capture.jsonl")
		if _, err := os.Stat(path); err != nil {
			continue
		}
		eachFileLine(t, path, func(b []byte) {
			l, ok := modelcall.ParseLine(b)
			require.True(t, ok)
			calls++
			tools += len(l.ToolCalls)
			if l.InputTokens != nil {
				wantIn += *l.InputTokens
			}
		})
	}
	sessions := mlflowSessions(t, run.mlflow.url)
	for _, id := range run.rollouts {
		assert.Equal(t, 1, sessions[id], "MLflow: rollout %s is one trace, its session", id)
	}
	for id := range sessions {
		assert.True(t, id == "" || slices.Contains(run.rollouts, id), "MLflow: session %q is no rollout's", id)
	}
	kinds := map[string]int{}
	var gotIn int64
	previews := 0
	for id, w := range want {
		tr, found := mlflowGet(t, run.mlflow.url, traces[id])
		if !assert.True(t, found, "MLflow: the trace of %s (%s)", id, traces[id]) {
			continue
		}
		assert.Equal(t, id, tr.Info.Metadata["mlflow.trace.session"], "MLflow: the session of %s's trace", id)
		var usage struct {
			In int64 `json:"input_tokens"`
		}
		if u := tr.Info.Metadata["mlflow.trace.tokenUsage"]; u != "" {
			require.NoError(t, json.Unmarshal([]byte(u), &usage))
		}
		gotIn += usage.In
		agents := 0
		for _, s := range tr.Spans {
			for _, a := range s.Attributes {
				if a.Key == "mlflow.spanType" {
					k := strings.Trim(a.Value.String, `"`)
					kinds[k]++
					if k == "AGENT" {
						agents++
					}
				}
			}
		}
		assert.Equal(t, 1, agents, "MLflow: %s's trace has one AGENT span", id)
		rewards := 0
		for _, a := range tr.Info.Assessments {
			if a.Name != "reward" {
				continue
			}
			rewards++
			assert.Equal(t, "CODE", a.Source.Type)
			assert.Equal(t, w.reward, a.Feedback.Value, "MLflow: %s's reward assessment = Gym's", id)
		}
		assert.Equal(t, 1, rewards, "MLflow: %s's trace has one reward assessment", id)
		// Messages (issue #57, acceptances 1 and 3): with content on, each
		// trace shows the rollout's task as its request and the answer as its
		// response; off (the default), neither.
		if run.content {
			assert.NotEmpty(t, tr.Info.Request, "MLflow: %s's trace shows its request (content on)", id)
			assert.NotEmpty(t, tr.Info.Response, "MLflow: %s's trace shows its response (content on)", id)
			if tr.Info.Request != "" {
				previews++
			}
		} else {
			assert.Empty(t, tr.Info.Request, "MLflow: %s's trace shows no request (content off)", id)
			assert.Empty(t, tr.Info.Response, "MLflow: %s's trace shows no response (content off)", id)
		}
	}
	assert.Equal(t, calls, kinds["CHAT_MODEL"], "MLflow: CHAT_MODEL spans = captured model calls")
	assert.Equal(t, tools, kinds["TOOL"], "MLflow: TOOL spans = tool calls the model asked for")
	assert.Equal(t, wantIn, gotIn, "MLflow: input tokens = the captures'")
	t.Logf("MLflow: %d traces, spans by type %v, input tokens %d, %d with request and response (content on: %v); captures: %d calls, %d tool calls, %d input tokens",
		len(traces), kinds, gotIn, previews, run.content, calls, tools, wantIn)
}
