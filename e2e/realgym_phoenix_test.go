// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
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
	"go.yaml.in/yaml/v3"

	"github.com/otelcol-gym/otelcol-gym/config"
	"github.com/otelcol-gym/otelcol-gym/internal/modelcall"
)

// Issue #36: the real-Gym runs also go to a real Arize Phoenix (installed
// from the package index by e2e/phoenix/setup-venv.sh, named in
// OTELCOL_GYM_PHOENIX_VENV by `make test-realgym`), on loopback with SQLite,
// through the forwarding overlay the embedded default gets from
// OTELCOL_GYM_EXPORTER_OTLP_TRACES_ENDPOINT (config.ForwardingOverlay, added
// to the run's collector config; Phoenix takes traces only). Phoenix then shows one LLM span per captured model
// call, the captures' token sums, one session per rollout holding its one
// trace, an AGENT span per rollout and a TOOL span per tool call the model
// asked for. Without the variable the runs go on without Phoenix.

const phoenixVenvEnv = "OTELCOL_GYM_PHOENIX_VENV"

// phoenix is one `phoenix serve` of a run.
type phoenix struct {
	url  string
	cmd  *exec.Cmd
	done chan struct{}
}

// phoenixForwarding starts Phoenix for run when the venv is named, and
// returns the collector's extra arguments (the forwarding overlay) and
// environment (its endpoint).
func phoenixForwarding(t *testing.T, run *realGymRun, collectorConfig string) (args, env []string) {
	venv := os.Getenv(phoenixVenvEnv)
	if venv == "" || !run.live || run.console {
		return nil, nil
	}
	port, grpcPort := freePort(t), freePort(t)
	work := filepath.Join(run.dir, "phoenix")
	require.NoError(t, os.MkdirAll(work, 0o750))
	log, err := os.Create(filepath.Join(run.dir, "phoenix.log"))
	require.NoError(t, err)
	cmd := exec.Command(filepath.Join(venv, "bin", "phoenix"), "serve")
	cmd.Env = append(os.Environ(), "PHOENIX_HOST=127.0.0.1", fmt.Sprintf("PHOENIX_PORT=%d", port),
		fmt.Sprintf("PHOENIX_GRPC_PORT=%d", grpcPort), "PHOENIX_WORKING_DIR="+work,
		"PHOENIX_TELEMETRY_ENABLED=false", "PHOENIX_ALLOW_EXTERNAL_RESOURCES=false")
	cmd.Stdout, cmd.Stderr = log, log
	require.NoError(t, cmd.Start())
	var mlflowReady func() *mlflowServer
	if run.scores {
		mlflowReady = startMLflow(t, run) // realgym_scores_test.go
	}
	p := &phoenix{url: fmt.Sprintf("http://127.0.0.1:%d", port), cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); log.Close(); close(p.done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-p.done
		}
	})
	awaitBackend(t, "phoenix serve", p.url+"/healthz", p.done, filepath.Join(run.dir, "phoenix.log")) // realgym_scores_test.go
	run.phoenix = p
	// Phoenix takes traces only: the traces' own variable, as a user sets it.
	endpoint := p.url + "/v1/traces"
	overlay, overlayEnv, err := config.ForwardingOverlay(collectorConfig, func(name string) (string, bool) {
		switch {
		case name == config.ForwardTracesEndpointEnv:
			return endpoint, true
		case name == config.ForwardBackendEnv && run.scores: // Gym's scores too (realgym_scores_test.go)
			return "phoenix", true
		}
		return "", false
	})
	require.NoError(t, err)
	// The recording pipeline holds the requests as they came, before gym:
	// Phoenix gets what a backend gets.
	var doc map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(overlay), &doc))
	delete(doc["service"].(map[string]any)["pipelines"].(map[string]any), "traces/record")
	env = []string{fmt.Sprintf("%s=%s", config.ForwardTracesEndpointEnv, endpoint)}
	if run.scores {
		if mlflowReady != nil {
			run.mlflow = mlflowReady()
		}
		scoresOverlay(doc, run, run.mlflow)
		for k, v := range overlayEnv {
			env = append(env, k+"="+v)
		}
	}
	b, err := yaml.Marshal(doc)
	require.NoError(t, err)
	return []string{"--config", writeFile(t, run.dir, "forward.yaml", string(b))}, env
}

// phoenixSpan and phoenixSession are what the checks read of Phoenix's REST
// API (/v1/projects/default/spans and /sessions).
type phoenixSpan struct {
	Name       string         `json:"name"`
	SpanKind   string         `json:"span_kind"`
	Attributes map[string]any `json:"attributes"`
	Context    struct {
		TraceID string `json:"trace_id"`
	} `json:"context"`
}

type phoenixSession struct {
	SessionID        string `json:"session_id"`
	TokenCountPrompt int64  `json:"token_count_prompt"`
	TokenCountCompl  int64  `json:"token_count_completion"`
	Traces           []struct {
		TraceID string `json:"trace_id"`
	} `json:"traces"`
}

// phoenixAll reads every page of a Phoenix list.
func phoenixAll[T any](t *testing.T, base, path string) []T {
	var all []T
	cursor := ""
	for {
		q := url.Values{"limit": {"1000"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		resp, err := http.Get(base + path + "?" + q.Encode())
		require.NoError(t, err)
		var page struct {
			Data       []T     `json:"data"`
			NextCursor *string `json:"next_cursor"`
		}
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		require.NoError(t, err, "%s: %s", path, resp.Status)
		all = append(all, page.Data...)
		if page.NextCursor == nil || *page.NextCursor == "" {
			return all
		}
		cursor = *page.NextCursor
	}
}

// checkPhoenix compares what Phoenix shows of the run with Gym's capture
// files and output rows.
func checkPhoenix(t *testing.T, run *realGymRun) {
	t.Helper()
	if run.phoenix == nil {
		return
	}
	var calls, tools int
	var wantIn, wantOut int64
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
			if l.OutputTokens != nil {
				wantOut += *l.OutputTokens
			}
		})
	}
	require.Positive(t, calls)
	var spans []phoenixSpan
	// Phoenix ingests in the background: the collector has stopped, its
	// exporter has sent every span the run's files hold.
	pollUntil(t, 2*time.Minute, fmt.Sprintf("Phoenix to hold the run's %d spans", len(run.combined)), func() bool {
		spans = phoenixAll[phoenixSpan](t, run.phoenix.url, "/v1/projects/default/spans")
		return len(spans) >= len(run.combined)
	})
	assert.Len(t, spans, len(run.combined), "every span once")
	kinds := map[string]int{}
	traces := map[string]bool{}
	for _, s := range spans {
		kinds[s.SpanKind]++
		traces[s.Context.TraceID] = true
	}
	t.Logf("Phoenix: %d spans by kind %v in %d traces; captures: %d calls, %d tool calls, tokens in %d out %d",
		len(spans), kinds, len(traces), calls, tools, wantIn, wantOut)
	assert.Equal(t, calls, kinds["LLM"], "LLM spans: one per captured model call")
	if !assert.Equal(t, len(run.rollouts), kinds["AGENT"], "AGENT spans: one per rollout") {
		logAgentSpans(t, run)
	}
	assert.Equal(t, tools, kinds["TOOL"], "TOOL spans: one per tool call the model asked for")

	sessions := phoenixAll[phoenixSession](t, run.phoenix.url, "/v1/projects/default/sessions")
	var ids []string
	var gotIn, gotOut int64
	for _, s := range sessions {
		ids = append(ids, s.SessionID)
		assert.Len(t, s.Traces, 1, "session %s holds its rollout's one trace", s.SessionID)
		gotIn += s.TokenCountPrompt
		gotOut += s.TokenCountCompl
	}
	sort.Strings(ids)
	assert.Equal(t, run.rollouts, ids, "one session per rollout")
	assert.Equal(t, wantIn, gotIn, "input tokens: Phoenix's sessions vs the captures")
	assert.Equal(t, wantOut, gotOut, "output tokens: Phoenix's sessions vs the captures")
	checkPhoenixContent(t, run, spans)
}

// checkPhoenixContent (issue #57, design §4.7): with capture_message_content
// on, Phoenix's session list shows each rollout's task (its first capture
// line's first user message) as first input and its final answer (its
// last line's output text) as last output, and its LLM spans carry their
// messages; with it off, no session shows either and no span holds a
// rollout's task.
func checkPhoenixContent(t *testing.T, run *realGymRun, spans []phoenixSpan) {
	t.Helper()
	tasks, answers := map[string]string{}, map[string]string{}
	for _, r := range run.rollouts {
		path := filepath.Join(run.captureDir, r+".capture.jsonl")
		if _, err := os.Stat(path); err != nil {
			continue
		}
		eachFileLine(t, path, func(b []byte) {
			c := modelcall.ParseContent(b, nil, 1<<20)
			if _, ok := tasks[r]; !ok {
				tasks[r] = c.Task
			}
			answers[r] = c.Answer
		})
	}
	io := phoenixSessionIO(t, run.phoenix.url)
	require.Len(t, io, len(run.rollouts), "sessions in Phoenix's GraphQL session list")
	withMessages := 0
	for _, s := range spans {
		b, err := json.Marshal(s.Attributes)
		require.NoError(t, err)
		// Phoenix's REST API gives the messages it read flattened:
		// llm.input_messages.0.message.role, ...
		if s.SpanKind == "LLM" && strings.Contains(string(b), `"llm.input_messages.`) && strings.Contains(string(b), `"llm.output_messages.`) {
			withMessages++
		}
		if run.content {
			continue
		}
		for r, task := range tasks {
			if task != "" {
				assert.NotContains(t, string(b), task, "content off: span %q holds rollout %s's task", s.Name, r)
			}
		}
	}
	if !run.content {
		for id, v := range io {
			assert.Nil(t, v[0], "content off: session %s shows no first input", id)
			assert.Nil(t, v[1], "content off: session %s shows no last output", id)
		}
		assert.Zero(t, withMessages, "content off: LLM spans with messages")
		return
	}
	for id, v := range io {
		require.NotEmpty(t, tasks[id], "session %s: the task from its capture", id)
		if assert.NotNil(t, v[0], "session %s shows its first input", id) {
			assert.True(t, strings.HasPrefix(tasks[id], strings.TrimSuffix(*v[0], "...")), "session %s: first input %q, the task %q", id, *v[0], tasks[id])
		}
		if assert.NotNil(t, v[1], "session %s shows its last output", id) {
			assert.True(t, strings.HasPrefix(answers[id], strings.TrimSuffix(*v[1], "...")), "session %s: last output %q, the answer %q", id, *v[1], answers[id])
		}
	}
	assert.Positive(t, withMessages, "content on: LLM spans with messages")
	t.Logf("Phoenix content: %d sessions with first input and last output, %d LLM spans with messages", len(io), withMessages)
}

// phoenixSessionIO is each session's first input and last output as
// Phoenix's session list shows them (its GraphQL, which its UI reads; nil:
// none shown).
func phoenixSessionIO(t *testing.T, base string) map[string][2]*string {
	t.Helper()
	const query = `{ projects(first: 10) { edges { node { name sessions(first: 1000) { edges { node {
		sessionId firstInput { truncatedValue } lastOutput { truncatedValue } } } } } } } }`
	body, err := json.Marshal(map[string]string{"query": query})
	require.NoError(t, err)
	resp, err := http.Post(base+"/graphql", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	type value struct {
		TruncatedValue string `json:"truncatedValue"`
	}
	var out struct {
		Data struct {
			Projects struct {
				Edges []struct {
					Node struct {
						Name     string `json:"name"`
						Sessions struct {
							Edges []struct {
								Node struct {
									SessionID  string `json:"sessionId"`
									FirstInput *value `json:"firstInput"`
									LastOutput *value `json:"lastOutput"`
								} `json:"node"`
							} `json:"edges"`
						} `json:"sessions"`
					} `json:"node"`
				} `json:"edges"`
			} `json:"projects"`
		} `json:"data"`
		Errors []any `json:"errors"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out), "graphql: %s", resp.Status)
	require.Empty(t, out.Errors, "graphql errors")
	io := map[string][2]*string{}
	for _, p := range out.Data.Projects.Edges {
		if p.Node.Name != "default" {
			continue
		}
		for _, e := range p.Node.Sessions.Edges {
			var v [2]*string
			if e.Node.FirstInput != nil {
				v[0] = &e.Node.FirstInput.TruncatedValue
			}
			if e.Node.LastOutput != nil {
				v[1] = &e.Node.LastOutput.TruncatedValue
			}
			io[e.Node.SessionID] = v
		}
	}
	return io
}

// logAgentSpans says, for a run whose AGENT spans do not match its
// rollouts, how many invoke_agent spans each rollout has in spans.jsonl, and
// for one without, the SERVER and INTERNAL spans named "... /run" of its rollout and
// their process: which span gymcapture could have made its agent span.
func logAgentSpans(t *testing.T, run *realGymRun) {
	t.Helper()
	agents := map[string]int{}
	for _, s := range run.combined {
		if s.str("gen_ai.operation.name") == "invoke_agent" {
			agents[s.str("nemo.gym.rollout.id")]++
		}
	}
	for _, r := range run.rollouts {
		if agents[r] == 1 {
			continue
		}
		t.Logf("rollout %s: %d invoke_agent spans in spans.jsonl", r, agents[r])
		for _, s := range run.combined {
			if s.str("nemo.gym.rollout.id") != r || s.Kind == "CLIENT" || !strings.HasSuffix(s.Name, " /run") {
				continue
			}
			t.Logf("  %s %q span %s parent %s; service %v, server type %v/%v",
				s.Kind, s.Name, s.SpanID, s.ParentSpanID, s.Resource.Attributes["service.name"],
				s.Resource.Attributes["nemo.gym.server.type"], s.Attributes["nemo.gym.server.type"])
		}
	}
}
