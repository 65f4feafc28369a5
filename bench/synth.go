// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// synthesize builds a Gym-shaped run with the default preset's spans
// (reference/nemo-gym-telemetry.md §2) when gymsim is not available: one
// trace rooted at the orchestrator's gym.job; per rollout the orchestrator's
// CLIENT "HTTP POST" to /run, the agent's SERVER "POST /run" with its ASGI
// "http receive"/"http send", "gym.rollout" (nemo.gym.rollout.id), two model
// calls and one resources call, each a CLIENT "HTTP POST" to
// /ng-rollout/<id>/... and the callee's SERVER "POST" with its ASGI spans.
// Each process's spans come in requests of at most 512, as the SDK's batch
// span processor sends them.
func synthesize(rollouts int) []ptrace.Traces {
	const run = "synthetic"
	var seq uint64
	nextID := func() pcommon.SpanID {
		seq++
		h := sha256.Sum256(binary.BigEndian.AppendUint64([]byte("otelcol-gym/bench/synth"), seq))
		var id pcommon.SpanID
		copy(id[:], h[:8])
		return id
	}
	var tid pcommon.TraceID
	h := sha256.Sum256([]byte("otelcol-gym/bench/synth/trace"))
	copy(tid[:], h[:16])
	t0 := time.Date(2026, 8, 21, 12, 0, 0, 0, time.UTC)

	type proc struct {
		service, server, typ string
		pid                  int64
		td                   ptrace.Traces
		spans                ptrace.SpanSlice
		n                    int // spans in td
		out                  []ptrace.Traces
	}
	newProc := func(server, typ string, pid int64) *proc {
		return &proc{service: "nemo-gym/" + server, server: server, typ: typ, pid: pid}
	}
	orch := newProc("orchestrator", "orchestrator", 100)
	agent := newProc("example_single_tool_call_simple_agent", "responses_api_agents", 101)
	model := newProc("policy_model", "responses_api_models", 102)
	res := newProc("example_single_tool_call", "resources_servers", 103)
	add := func(p *proc, name string, kind ptrace.SpanKind, parent pcommon.SpanID, start, end time.Time) ptrace.Span {
		if p.n == 0 || p.n >= 512 {
			if p.n > 0 {
				p.out = append(p.out, p.td)
			}
			p.n = 0
			p.td = ptrace.NewTraces()
			rs := p.td.ResourceSpans().AppendEmpty()
			a := rs.Resource().Attributes()
			a.PutStr("service.name", p.service)
			a.PutStr("nemo.gym.service_group", "nemo-gym")
			a.PutStr("nemo.gym.server.name", p.server)
			a.PutStr("nemo.gym.server.type", p.typ)
			a.PutStr("nemo.run.id", run)
			a.PutStr("service.instance.id", run+"-rank0")
			a.PutStr("host.name", "bench")
			a.PutInt("process.pid", p.pid)
			ss := rs.ScopeSpans().AppendEmpty()
			ss.Scope().SetName("nemo.gym")
			p.spans = ss.Spans()
		}
		p.n++
		s := p.spans.AppendEmpty()
		s.SetTraceID(tid)
		s.SetSpanID(nextID())
		s.SetParentSpanID(parent)
		s.SetName(name)
		s.SetKind(kind)
		s.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
		s.SetEndTimestamp(pcommon.NewTimestampFromTime(end))
		return s
	}
	asgi := func(p *proc, server ptrace.Span, start time.Time) {
		for _, n := range []string{" http receive", " http send"} {
			s := add(p, server.Name()+n, ptrace.SpanKindInternal, server.SpanID(), start, start.Add(time.Millisecond))
			s.Attributes().PutStr("asgi.event.type", "http.request")
		}
	}
	call := func(from *proc, parent pcommon.SpanID, to *proc, port int, path string, start time.Time) ptrace.Span {
		end := start.Add(40 * time.Millisecond)
		c := add(from, "HTTP POST", ptrace.SpanKindClient, parent, start, end)
		c.Attributes().PutStr("http.request.method", "POST")
		c.Attributes().PutStr("url.full", fmt.Sprintf("http://127.0.0.1:%d%s", port, path))
		c.Attributes().PutInt("http.response.status_code", 200)
		name := "POST"
		if path == "/run" {
			name = "POST /run"
		}
		s := add(to, name, ptrace.SpanKindServer, c.SpanID(), start.Add(time.Millisecond), end.Add(-time.Millisecond))
		s.Attributes().PutStr("http.request.method", "POST")
		s.Attributes().PutStr("url.path", path)
		s.Attributes().PutStr("server.address", "127.0.0.1")
		s.Attributes().PutInt("server.port", int64(port))
		s.Attributes().PutInt("http.response.status_code", 200)
		asgi(to, s, start.Add(2*time.Millisecond))
		return s
	}
	job := add(orch, "gym.job", ptrace.SpanKindInternal, pcommon.SpanID{}, t0, t0.Add(time.Hour))
	for i := 0; i < rollouts; i++ {
		id := fmt.Sprintf("%d-%d", i/4, i%4)
		start := t0.Add(time.Duration(i) * 10 * time.Millisecond)
		server := call(orch, job.SpanID(), agent, 8000, "/run", start)
		ro := add(agent, "gym.rollout", ptrace.SpanKindInternal, server.SpanID(), start.Add(3*time.Millisecond), start.Add(35*time.Millisecond))
		ro.Attributes().PutStr("nemo.gym.rollout.id", id)
		call(agent, ro.SpanID(), model, 8001, "/ng-rollout/"+id+"/v1/responses", start.Add(4*time.Millisecond))
		call(agent, ro.SpanID(), model, 8001, "/ng-rollout/"+id+"/v1/responses", start.Add(10*time.Millisecond))
		call(agent, ro.SpanID(), res, 8002, "/ng-rollout/"+id+"/verify", start.Add(20*time.Millisecond))
	}
	var out []ptrace.Traces
	for _, p := range []*proc{model, res, agent, orch} {
		if p.n > 0 {
			p.out = append(p.out, p.td)
		}
		out = append(out, p.out...)
	}
	return out
}
