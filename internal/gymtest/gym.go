// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymtest // import "github.com/otelcol-gym/otelcol-gym/internal/gymtest"

import (
	"strconv"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
)

// RunID is the run of the processes of Processes.
const RunID = "4f2a91c0be31"

// Processes are the processes of a Gym run (docs/design.md §7):
// "orchestrator", "agent", "model" and "resources", and "norun", a process
// outside any run. A new map each call: tests may change theirs.
func Processes() map[string]Process {
	return map[string]Process{
		"orchestrator": {Service: "nemo-gym/orchestrator", Host: "node-1", PID: 4100, Run: RunID, ServerType: gymconv.ServerTypeOrchestrator, Scope: "nemo.lens.helpers"},
		"agent":        {Service: "nemo-gym/simple_agent", Host: "node-1", PID: 4200, Run: RunID, ServerType: gymconv.ServerTypeAgent, Scope: "opentelemetry.instrumentation.fastapi"},
		"model":        {Service: "nemo-gym/policy_model", Host: "node-2", PID: 4300, Run: RunID, ServerType: gymconv.ServerTypeModel, Scope: "opentelemetry.instrumentation.fastapi"},
		"resources":    {Service: "nemo-gym/example_single_tool_call", Host: "node-1", PID: 4400, Run: RunID, ServerType: gymconv.ServerTypeResources, Scope: "opentelemetry.instrumentation.fastapi"},
		"norun":        {Service: "nemo/example_single_tool_call", Host: "node-3", PID: 4500, Scope: "opentelemetry.instrumentation.fastapi"},
	}
}

// ProcessOrder is the order of the processes of Processes, for Build.
func ProcessOrder() []string {
	return []string{"orchestrator", "agent", "model", "resources", "norun"}
}

// RolloutOptions choose the Gym settings a rollout is drawn with.
type RolloutOptions struct {
	// Observability is Gym's observability_enabled: rollout ids and
	// /ng-rollout/<id>/ URLs exist.
	Observability bool
	// PerRollout adds the gym.model.* and gym.verify spans.
	PerRollout bool
	// NoClient is http_client off: the model and resources SERVER spans are
	// roots of traces of their own.
	NoClient bool
	// DispatchParent is the parent of the orchestrator's HTTP POST (""
	// makes it a root), Trace the rollout's trace.
	DispatchParent, Trace string
	// ModelCalls is the agent's calls to the model server (0 counts as 1).
	ModelCalls int
	// Offset moves every time of the rollout by this many milliseconds.
	Offset int64
}

// Rollout draws rollout r the way Gym emits it (docs/design.md §7): the
// orchestrator's CLIENT "HTTP POST" to /run, the agent's
// SERVER "POST /run" with its ASGI spans and gym.rollout, and per call
// (ModelCalls to the model server, one to the resources server) the agent's
// CLIENT "HTTP POST" and the callee's SERVER span with its ASGI spans. Span
// ids are "<r>/<role>", the nth model call's roles ending in "-<n>" from
// the second on.
func Rollout(r string, o RolloutOptions) []Span {
	id := func(s string) string { return r + "/" + s }
	rolloutAttr := func(m map[string]any) map[string]any {
		if o.Observability {
			m[gymconv.RolloutAttribute] = r
		}
		return m
	}
	prefix := ""
	if o.Observability {
		prefix = "/" + gymconv.URLPrefix + "/" + r
	}
	serverName := "POST /v1/responses"
	verifyName := "POST /verify"
	if o.Observability {
		serverName, verifyName = "POST", "POST"
	}
	modelTrace, resTrace := o.Trace, o.Trace
	modelParent, resParent := id("client-model"), id("client-verify")
	if o.NoClient {
		modelTrace, resTrace = o.Trace+"/model", o.Trace+"/resources"
		modelParent, resParent = "", ""
	}
	s := []Span{
		{ID: id("recv"), Parent: id("run"), Trace: o.Trace, Name: "POST /run http receive", Kind: ptrace.SpanKindInternal, Proc: "agent",
			Attributes: map[string]any{"asgi.event.type": "http.request"}, Start: 1, End: 2},
	}
	for n := 1; n <= max(o.ModelCalls, 1); n++ {
		suffix := ""
		if n > 1 {
			suffix = "-" + strconv.Itoa(n)
		}
		parent := modelParent
		if parent != "" {
			parent += suffix
		}
		s = append(s,
			Span{ID: id("client-model" + suffix), Parent: id("rollout"), Trace: o.Trace, Name: "HTTP POST", Kind: ptrace.SpanKindClient, Proc: "agent",
				Attributes: rolloutAttr(map[string]any{"http.request.method": "POST", "url.full": "http://127.0.0.1:8001" + prefix + "/v1/responses", "http.response.status_code": int64(200)}), Start: 3, End: 40},
			Span{ID: id("model-recv" + suffix), Parent: id("model-server" + suffix), Trace: modelTrace, Name: serverName + " http receive", Kind: ptrace.SpanKindInternal, Proc: "model",
				Attributes: map[string]any{"asgi.event.type": "http.request"}, Start: 4, End: 5},
			Span{ID: id("model-send" + suffix), Parent: id("model-server" + suffix), Trace: modelTrace, Name: serverName + " http send", Kind: ptrace.SpanKindInternal, Proc: "model",
				Attributes: map[string]any{"asgi.event.type": "http.response.start", "http.status_code": int64(200)}, Start: 37, End: 38},
			Span{ID: id("model-server" + suffix), Parent: parent, Trace: modelTrace, Name: serverName, Kind: ptrace.SpanKindServer, Proc: "model",
				Attributes: map[string]any{"http.method": "POST", "http.target": prefix + "/v1/responses", "http.url": "http://127.0.0.1:8001" + prefix + "/v1/responses", "http.status_code": int64(200)}, Start: 4, End: 39},
		)
	}
	s = append(s,
		Span{ID: id("client-verify"), Parent: id("rollout"), Trace: o.Trace, Name: "HTTP POST", Kind: ptrace.SpanKindClient, Proc: "agent",
			Attributes: rolloutAttr(map[string]any{"http.request.method": "POST", "url.full": "http://127.0.0.1:8002" + prefix + "/verify", "http.response.status_code": int64(200)}), Start: 41, End: 60},
		Span{ID: id("verify-recv"), Parent: id("verify-server"), Trace: resTrace, Name: verifyName + " http receive", Kind: ptrace.SpanKindInternal, Proc: "resources",
			Attributes: map[string]any{"asgi.event.type": "http.request"}, Start: 42, End: 43},
		Span{ID: id("verify-send"), Parent: id("verify-server"), Trace: resTrace, Name: verifyName + " http send", Kind: ptrace.SpanKindInternal, Proc: "resources",
			Attributes: map[string]any{"asgi.event.type": "http.response.start", "http.response.status_code": int64(200)}, Start: 57, End: 58},
		Span{ID: id("verify-server"), Parent: resParent, Trace: resTrace, Name: verifyName, Kind: ptrace.SpanKindServer, Proc: "resources",
			Attributes: map[string]any{"http.request.method": "POST", "url.path": prefix + "/verify", "url.full": "http://127.0.0.1:8002" + prefix + "/verify", "http.response.status_code": int64(200)}, Start: 42, End: 59},
		Span{ID: id("rollout"), Parent: id("run"), Trace: o.Trace, Name: "gym.rollout", Kind: ptrace.SpanKindInternal, Proc: "agent",
			Attributes: rolloutAttr(map[string]any{"nemo.gym.server.name": "simple_agent"}), Start: 2, End: 61},
		Span{ID: id("send"), Parent: id("run"), Trace: o.Trace, Name: "POST /run http send", Kind: ptrace.SpanKindInternal, Proc: "agent",
			Attributes: map[string]any{"asgi.event.type": "http.response.start", "http.status_code": int64(200)}, Start: 61, End: 62},
		Span{ID: id("run"), Parent: id("dispatch"), Trace: o.Trace, Name: "POST /run", Kind: ptrace.SpanKindServer, Proc: "agent",
			Attributes: map[string]any{"http.method": "POST", "http.target": "/run", "http.route": "/run", "http.status_code": int64(200)}, Start: 1, End: 63},
		Span{ID: id("dispatch"), Parent: o.DispatchParent, Trace: o.Trace, Name: "HTTP POST", Kind: ptrace.SpanKindClient, Proc: "orchestrator",
			Attributes: map[string]any{"http.request.method": "POST", "url.full": "http://127.0.0.1:8000/run", "http.response.status_code": int64(200)}, Start: 0, End: 64},
	)
	if o.PerRollout {
		s = append(s,
			Span{ID: id("model-call"), Parent: id("model-server"), Trace: modelTrace, Name: "gym.model.responses", Kind: ptrace.SpanKindInternal, Proc: "model",
				Attributes: map[string]any{"nemo.gym.server.name": "policy_model"}, Start: 5, End: 36},
			Span{ID: id("verify"), Parent: id("verify-server"), Trace: resTrace, Name: "gym.verify", Kind: ptrace.SpanKindInternal, Proc: "resources",
				Attributes: rolloutAttr(map[string]any{"nemo.gym.server.name": "example_single_tool_call"}), Start: 44, End: 56},
		)
	}
	for i := range s {
		s[i].Start += o.Offset
		s[i].End += o.Offset
	}
	return s
}

// Job is Gym's gym.job span, the root of a run's trace, on the orchestrator.
func Job(trace string) Span {
	return Span{ID: "job", Trace: trace, Name: "gym.job", Kind: ptrace.SpanKindInternal, Proc: "orchestrator", Attributes: map[string]any{}, Start: 0, End: 1000}
}
