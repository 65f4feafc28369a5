// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

// Package gymviewtest writes synthetic capture dirs, in the formats gymspans
// and Gym write, for the viewer's benchmarks: a run of many rollouts, or one
// rollout of many spans. It is imported only by tests.
package gymviewtest // import "github.com/otelcol-gym/otelcol-gym/internal/gymview/gymviewtest"

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// T0 is when the synthetic runs start.
var T0 = time.Date(2026, 8, 21, 12, 0, 0, 0, time.UTC)

// Run describes a synthetic run of many small rollouts.
type Run struct {
	ID       string
	Rollouts int
	// FailedEvery makes every n-th rollout count an error span (0: none).
	FailedEvery int
	// InFlight leaves the last n rollouts out of rollouts.jsonl.
	InFlight int
	// Split gives each rollouts.jsonl line a time_split_ms (the gymspans
	// exporter's), summing to the rollout's duration.
	Split bool
	// CaptureOnly writes the capture files only, as Gym does when its
	// telemetry is off: no spans file, no rollouts.jsonl line.
	CaptureOnly bool
}

// WriteRun writes rollouts.jsonl and, per rollout, a one-span
// <id>.spans.jsonl and a one-exchange <id>.capture.jsonl into dir.
func WriteRun(dir string, r Run) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, "rollouts.jsonl"))
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	for i := 0; i < r.Rollouts; i++ {
		id := fmt.Sprintf("%d-%d", i/4, i%4)
		start := T0.Add(time.Duration(i) * 10 * time.Millisecond)
		end := start.Add(time.Duration(500+i%1000) * time.Millisecond)
		g := newIDs(r.ID + "/" + id)
		root := g.span()
		errs := 0
		if r.FailedEvery > 0 && i%r.FailedEvery == 0 {
			errs = 1
		}
		sp := span{
			name: "HTTP POST", kind: "CLIENT", service: "nemo-gym/orchestrator", serverType: "orchestrator",
			run: r.ID, rollout: id, traceID: g.trace, spanID: root, start: start, end: end,
			attrs: map[string]any{"http.request.method": "POST", "url.full": "http://127.0.0.1:8000/run", "http.response.status_code": 200},
		}
		if !r.CaptureOnly {
			if err := writeLines(filepath.Join(dir, id+".spans.jsonl"), sp.line()); err != nil {
				return err
			}
		}
		x := exchange{id: g.span(), started: start.Add(time.Millisecond), latency: 400 * time.Millisecond, status: 200, responseID: "resp_" + g.span()}
		if err := writeLines(filepath.Join(dir, id+".capture.jsonl"), x.line()); err != nil {
			return err
		}
		if i >= r.Rollouts-r.InFlight || r.CaptureOnly {
			continue
		}
		status := "UNSET"
		if errs > 0 {
			status = "ERROR"
		}
		line := map[string]any{
			"rollout_id": id, "run_id": r.ID, "trace_id": g.trace, "root_span_id": root,
			"start_time": consoleTime(start), "end_time": consoleTime(end), "status": status, "error_count": errs,
			"service_name": "nemo-gym/orchestrator", "name": "HTTP POST",
		}
		if r.Split {
			line["time_split_ms"] = split(i, end.Sub(start))
		}
		b, _ := json.Marshal(line)
		_, _ = w.Write(b)
		_ = w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := f.Close(); err != nil || !r.CaptureOnly {
		return err
	}
	return os.Remove(filepath.Join(dir, "rollouts.jsonl"))
}

// split is a time split of d that varies with i: model most of it.
func split(i int, d time.Duration) map[string]float64 {
	total := d.Microseconds()
	parts := []int64{total * int64(50+i%30) / 100, total * int64(i%10) / 100, total * int64(i%5) / 100, 0, total * int64(i%3) / 100, 0}
	parts[3] = total - parts[0] - parts[1] - parts[2] - parts[4]
	out := map[string]float64{}
	for k, name := range []string{"model", "tools", "verify", "agent", "queue", "other"} {
		out[name] = float64(parts[k]) / 1000
	}
	return out
}

// WriteGymOutput writes into dir what `gym eval run --output
// dir/rollouts.jsonl` writes for r's finished rollouts: a row each, padded
// to about rowBytes by its response's text (Gym's rows hold whole
// responses), with a reward that varies and a failure kind in one row of
// ten; every 50th rollout dropped to rollouts_failures.jsonl instead; and
// rollout_verdicts.jsonl, one in twenty unhealthy.
func WriteGymOutput(dir string, r Run, rowBytes int) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	var rows, failures, verdicts []string
	text := strings.Repeat("x", max(0, rowBytes-200))
	for i := 0; i < r.Rollouts-r.InFlight; i++ {
		task, rollout := i/4, i%4
		verdict := "healthy"
		if i%20 == 0 {
			verdict = "unhealthy"
		}
		v, _ := json.Marshal(map[string]any{"_ng_task_index": task, "_ng_rollout_index": rollout,
			"rollout_id": fmt.Sprintf("%d-%d", task, rollout), "verdict": verdict, "findings": []any{}, "unobserved": []any{}})
		verdicts = append(verdicts, string(v))
		if i%50 == 49 {
			f, _ := json.Marshal(map[string]any{"_ng_task_index": task, "_ng_rollout_index": rollout,
				"_ng_failure_class": "agent_run_error", "_ng_failure_message": "500, message='Internal Server Error'"})
			failures = append(failures, string(f))
			continue
		}
		row := map[string]any{"response": map[string]any{"output": []any{map[string]any{"type": "output_text", "text": text}}},
			"reward": float64(i%5) / 4, "failure_kind": nil, "failure_reason": nil, "_ng_task_index": task, "_ng_rollout_index": rollout,
			"ng_perf": map[string]any{"num_turns": 2, "num_tool_calls": 1, "total_latency_ms": 500 + i%1000}}
		if i%10 == 3 {
			row["failure_kind"], row["failure_reason"] = "verifier_error", "the answer names no weather"
		}
		b, _ := json.Marshal(row)
		rows = append(rows, string(b))
	}
	for name, lines := range map[string][]string{"rollouts.jsonl": rows, "rollouts_failures.jsonl": failures, "rollout_verdicts.jsonl": verdicts} {
		if err := writeLines(filepath.Join(dir, name), lines...); err != nil {
			return err
		}
	}
	return nil
}

// WriteRollout writes one rollout of about spans spans: the orchestrator's
// call to the agent's /run and gym.rollout, under which model calls of five
// spans each (the agent's CLIENT call, the model server's SERVER span with
// its ASGI receive and send, and gym.model.responses with
// nemo.gym.model_request.id), one capture line per model call joined by that
// id, and one failed call in ten. It returns the number of spans written.
func WriteRollout(dir, run, id string, spans int) (int, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return 0, err
	}
	g := newIDs(run + "/" + id)
	calls := max(1, (spans-3)/5)
	const step = 50 * time.Millisecond
	end := T0.Add(time.Duration(calls)*step + 10*time.Millisecond)
	root, server, rollout := g.span(), g.span(), g.span()
	base := func(name, kind, service, serverType, sid, parent string, start, end time.Time, attrs map[string]any) span {
		return span{name: name, kind: kind, service: service, serverType: serverType, run: run, rollout: id,
			traceID: g.trace, spanID: sid, parentID: parent, start: start, end: end, attrs: attrs}
	}
	lines := []string{
		base("HTTP POST", "CLIENT", "nemo-gym/orchestrator", "orchestrator", root, "", T0, end,
			map[string]any{"url.full": "http://127.0.0.1:8000/run", "http.request.method": "POST"}).line(),
		base("POST /run", "SERVER", "nemo-gym/simple_agent", "responses_api_agents", server, root, T0.Add(time.Millisecond), end,
			map[string]any{"url.path": "/run", "http.route": "/run"}).line(),
		base("gym.rollout", "INTERNAL", "nemo-gym/simple_agent", "responses_api_agents", rollout, server, T0.Add(2*time.Millisecond), end,
			map[string]any{"nemo.gym.server.name": "simple_agent"}).line(),
	}
	var captures []string
	for c := 0; c < calls; c++ {
		s := T0.Add(5*time.Millisecond + time.Duration(c)*step)
		e := s.Add(step - 5*time.Millisecond)
		client, srv, model := g.span(), g.span(), g.span()
		respID := "resp_" + model
		path := "/ng-rollout/" + id + "/v1/responses"
		failed := c%10 == 9
		cl := base("HTTP POST", "CLIENT", "nemo-gym/simple_agent", "responses_api_agents", client, rollout, s, e,
			map[string]any{"url.full": "http://127.0.0.1:8001" + path, "http.request.method": "POST", "peer.service": "nemo-gym/policy_model"})
		sv := base("POST", "SERVER", "nemo-gym/policy_model", "responses_api_models", srv, client, s.Add(time.Millisecond), e.Add(-time.Millisecond),
			map[string]any{"url.path": path, "http.request.method": "POST"})
		md := base("gym.model.responses", "INTERNAL", "nemo-gym/policy_model", "responses_api_models", model, srv, s.Add(2*time.Millisecond), e.Add(-2*time.Millisecond),
			map[string]any{"nemo.gym.server.name": "policy_model", "nemo.gym.model_request.id": respID})
		if failed {
			md.status, md.description = "ERROR", "openai.InternalServerError: Error code: 500"
			md.events = []any{map[string]any{"name": "exception", "timestamp": consoleTime(e), "attributes": map[string]any{
				"exception.type": "openai.InternalServerError", "exception.message": "Error code: 500",
				"exception.stacktrace": "Traceback (most recent call last):\n  File \"model.py\", line 1\nopenai.InternalServerError: Error code: 500",
			}}}
		}
		lines = append(lines, cl.line(), sv.line(),
			base("POST http receive", "INTERNAL", "nemo-gym/policy_model", "responses_api_models", g.span(), srv, s.Add(time.Millisecond), s.Add(time.Millisecond+50*time.Microsecond), map[string]any{"asgi.event.type": "http.request"}).line(),
			md.line(),
			base("POST http send", "INTERNAL", "nemo-gym/policy_model", "responses_api_models", g.span(), srv, e.Add(-2*time.Millisecond), e.Add(-time.Millisecond), map[string]any{"asgi.event.type": "http.response.start"}).line())
		x := exchange{id: g.span(), started: s.Add(2 * time.Millisecond), latency: step - 9*time.Millisecond, status: 200, responseID: respID}
		if failed {
			x.status, x.responseID = 500, ""
		}
		captures = append(captures, x.line())
	}
	if err := writeLines(filepath.Join(dir, id+".spans.jsonl"), lines...); err != nil {
		return 0, err
	}
	if err := writeLines(filepath.Join(dir, id+".capture.jsonl"), captures...); err != nil {
		return 0, err
	}
	return len(lines), nil
}

// ids derives trace and span ids from a seed, so runs are reproducible.
type ids struct {
	seed  string
	n     uint64
	trace string
}

func newIDs(seed string) *ids {
	h := sha256.Sum256([]byte("gymviewtest/trace/" + seed))
	return &ids{seed: seed, trace: hex.EncodeToString(h[:16])}
}

func (g *ids) span() string {
	g.n++
	h := sha256.Sum256(binary.BigEndian.AppendUint64([]byte("gymviewtest/span/"+g.seed), g.n))
	return hex.EncodeToString(h[:8])
}

// span is one span, written as a gymspans console line (design §5.2).
type span struct {
	name, kind, service, serverType, run, rollout string
	traceID, spanID, parentID                     string
	start, end                                    time.Time
	status, description                           string
	attrs                                         map[string]any
	events                                        []any
}

func (s span) line() string {
	attrs := map[string]any{"nemo.gym.rollout.id": s.rollout}
	for k, v := range s.attrs {
		attrs[k] = v
	}
	status := map[string]any{"status_code": "UNSET"}
	if s.status != "" {
		status = map[string]any{"status_code": s.status, "description": s.description}
	}
	var parentID any
	if s.parentID != "" {
		parentID = "0x" + s.parentID
	}
	events := s.events
	if events == nil {
		events = []any{}
	}
	b, _ := json.Marshal(map[string]any{
		"name":       s.name,
		"context":    map[string]any{"trace_id": "0x" + s.traceID, "span_id": "0x" + s.spanID, "trace_state": "[]"},
		"kind":       "SpanKind." + s.kind,
		"parent_id":  parentID,
		"start_time": consoleTime(s.start), "end_time": consoleTime(s.end),
		"status":     status,
		"attributes": attrs,
		"events":     events,
		"links":      []any{},
		"resource": map[string]any{"attributes": map[string]any{
			"service.name": s.service, "nemo.gym.server.type": s.serverType, "nemo.run.id": s.run,
			"nemo.gym.service_group": "nemo-gym", "service.instance.id": s.run + "-rank0", "host.name": "node-1",
			"process.pid": 4242, "telemetry.sdk.language": "python", "telemetry.sdk.version": "1.44.0",
		}, "schema_url": ""},
		"trace_id": s.traceID, "span_id": s.spanID, "parent_span_id": s.parentID,
		"start_time_unix_nano": s.start.UnixNano(), "end_time_unix_nano": s.end.UnixNano(),
		"scope": map[string]any{"name": "nemo.gym", "version": ""},
	})
	return string(b)
}

// exchange is one model exchange, written as a Gym capture line.
type exchange struct {
	id         string
	started    time.Time
	latency    time.Duration
	status     int
	responseID string
}

func (x exchange) line() string {
	ms := float64(x.latency.Microseconds()) / 1000
	resp := map[string]any{"id": x.responseID, "object": "response", "status": "completed",
		"output": []any{map[string]any{"type": "message", "role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": "It is sunny."}}}}}
	var category any
	if x.status != 200 {
		resp = map[string]any{"error": map[string]any{"message": "upstream model failed", "code": x.status}}
		category = "upstream_error"
	}
	b, _ := json.Marshal(map[string]any{
		"model_call_id": x.id, "dialect": "responses",
		"model_ref":  map[string]any{"type": "responses_api_models", "name": "policy_model"},
		"started_at": float64(x.started.UnixMicro()) / 1e6, "completed_at": float64(x.started.Add(x.latency).UnixMicro()) / 1e6,
		"latency_ms": ms, "latency_ttft_ms": ms / 4, "status_code": x.status, "error_category": category,
		"request":  map[string]any{"model": "policy_model", "input": "What is the weather?"},
		"response": resp,
	})
	return string(b)
}

func consoleTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000Z") }

func writeLines(path string, lines ...string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for _, l := range lines {
		_, _ = w.WriteString(l)
		_ = w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
