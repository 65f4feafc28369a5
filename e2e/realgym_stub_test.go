// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// stubModel is the OpenAI-compatible model the real-Gym tests point Gym's
// openai_model server at (issue #17): GET /v1/models lists one model, and
// POST /v1/responses answers, after delay, with a get_weather tool call when
// the input holds no tool output yet and with a final message when it does:
// the two model calls of an example_single_tool_call rollout. The first call
// of a rollout (the tool call) answers after firstDelay when that is longer:
// a cold or loaded vLLM server.
type stubModel struct {
	URL        string // base URL, ending in /v1
	delay      time.Duration
	firstDelay time.Duration
	calls      atomic.Int64 // POST /v1/responses answered
	seq        atomic.Int64
	stubHold   // one call held on a test's demand (realgym_live_test.go)
}

func startStubModel(t testing.TB, delay, firstDelay time.Duration) *stubModel {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := &stubModel{URL: fmt.Sprintf("http://%s/v1", l.Addr()), delay: delay, firstDelay: firstDelay}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		writeStubJSON(w, map[string]any{"object": "list", "data": []any{
			map[string]any{"id": "stub", "object": "model", "created": 0, "owned_by": "otelcol-gym"},
		}})
	})
	mux.HandleFunc("POST /v1/responses", m.responses)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return m
}

func (m *stubModel) responses(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Model string            `json:"model"`
		Input []json.RawMessage `json:"input"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	toolAnswered := false
	for _, item := range body.Input {
		var it struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(item, &it) == nil && it.Type == "function_call_output" {
			toolAnswered = true
		}
	}
	if !m.holdIfAsked(toolAnswered, r) {
		return
	}
	delay := m.delay
	if !toolAnswered {
		delay = max(delay, m.firstDelay)
	}
	select {
	case <-time.After(delay):
	case <-r.Context().Done():
		return
	}
	n := m.seq.Add(1)
	var output []any
	if toolAnswered {
		output = []any{map[string]any{
			"type": "message", "id": fmt.Sprintf("msg_%d", n), "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": "It is sunny in sf.", "annotations": []any{}}},
		}}
	} else {
		output = []any{map[string]any{
			"type": "function_call", "id": fmt.Sprintf("fc_%d", n), "call_id": fmt.Sprintf("call_%d", n),
			"name": "get_weather", "arguments": `{"city": "sf"}`, "status": "completed",
		}}
	}
	m.calls.Add(1)
	writeStubJSON(w, map[string]any{
		"id": fmt.Sprintf("resp_%d", n), "object": "response", "created_at": time.Now().Unix(),
		"model": body.Model, "output": output, "status": "completed",
		"parallel_tool_calls": true, "tool_choice": "auto", "tools": []any{},
		"usage": map[string]any{
			// Token counts vary by call, so that a sum over spans or metrics
			// that drops or doubles a call differs from the captures' sum.
			"input_tokens": 10 + n%7, "output_tokens": 5 + n%3, "total_tokens": 15 + n%7 + n%3,
			"input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
		},
	})
}

func writeStubJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// TestStubModel checks the stub's two answers without Gym.
func TestStubModel(t *testing.T) {
	m := startStubModel(t, 10*time.Millisecond, 0)
	post := func(input string) map[string]any {
		resp, err := http.Post(m.URL+"/responses", "application/json", strings.NewReader(`{"model":"stub","input":`+input+`}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	first := post(`[{"role":"user","content":"what's it like in sf?"}]`)
	if got := first["output"].([]any)[0].(map[string]any)["type"]; got != "function_call" {
		t.Fatalf("first answer is %v, want a function_call", got)
	}
	second := post(`[{"role":"user","content":"x"},{"type":"function_call_output","call_id":"call_1","output":"{}"}]`)
	if got := second["output"].([]any)[0].(map[string]any)["type"]; got != "message" {
		t.Fatalf("second answer is %v, want a message", got)
	}
	if m.calls.Load() != 2 {
		t.Fatalf("calls = %d, want 2", m.calls.Load())
	}
	resp, err := http.Get(m.URL + "/models")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/models: %s", resp.Status)
	}
}
