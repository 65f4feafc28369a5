// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

var genInputs = flag.Bool("gen-inputs", false, "rewrite testdata/*/input.json from the scenario definitions")

const runID = "4f2a91c0be31"

var gymProcs = map[string]proc{
	"orchestrator": {service: "nemo-gym/orchestrator", host: "node-1", pid: 4100, run: runID, serverType: "orchestrator", scope: "nemo.lens.helpers"},
	"agent":        {service: "nemo-gym/simple_agent", host: "node-1", pid: 4200, run: runID, serverType: "responses_api_agents", scope: "opentelemetry.instrumentation.fastapi"},
	"model":        {service: "nemo-gym/policy_model", host: "node-2", pid: 4300, run: runID, serverType: "responses_api_models", scope: "opentelemetry.instrumentation.fastapi"},
	"resources":    {service: "nemo-gym/example_single_tool_call", host: "node-1", pid: 4400, run: runID, serverType: "resources_servers", scope: "opentelemetry.instrumentation.fastapi"},
	"norun":        {service: "nemo/example_single_tool_call", host: "node-3", pid: 4500, scope: "opentelemetry.instrumentation.fastapi"},
}

var procOrder = []string{"orchestrator", "agent", "model", "resources", "norun"}

type rolloutOpts struct {
	obs        bool   // observability_enabled: rollout ids and /ng-rollout/ URLs exist
	perRollout bool   // gym.model.* and gym.verify exist
	noClient   bool   // http_client off: model and resources SERVER spans are roots of their own traces
	hParent    string // parent of the orchestrator's HTTP POST ("" = root)
	trace      string
}

// rolloutSpans draws one rollout the way Gym emits it (reference
// nemo-gym-telemetry.md §1, §2, §5).
func rolloutSpans(r string, o rolloutOpts) []sdef {
	id := func(s string) string { return r + "/" + s }
	rolloutAttr := func(m map[string]any) map[string]any {
		if o.obs {
			m["nemo.gym.rollout.id"] = r
		}
		return m
	}
	prefix := ""
	if o.obs {
		prefix = "/ng-rollout/" + r
	}
	serverName := "POST /v1/responses"
	verifyName := "POST /verify"
	if o.obs {
		serverName, verifyName = "POST", "POST"
	}
	modelTrace, resTrace := o.trace, o.trace
	modelParent, resParent := id("client-model"), id("client-verify")
	if o.noClient {
		modelTrace, resTrace = o.trace+"/model", o.trace+"/resources"
		modelParent, resParent = "", ""
	}
	s := []sdef{
		{id: id("recv"), parent: id("run"), trace: o.trace, name: "POST /run http receive", kind: ptrace.SpanKindInternal, proc: "agent",
			attrs: map[string]any{"asgi.event.type": "http.request"}, start: 1, end: 2},
		{id: id("client-model"), parent: id("rollout"), trace: o.trace, name: "HTTP POST", kind: ptrace.SpanKindClient, proc: "agent",
			attrs: rolloutAttr(map[string]any{"http.request.method": "POST", "url.full": "http://127.0.0.1:8001" + prefix + "/v1/responses", "http.response.status_code": int64(200)}), start: 3, end: 40},
		{id: id("model-recv"), parent: id("model-server"), trace: modelTrace, name: serverName + " http receive", kind: ptrace.SpanKindInternal, proc: "model",
			attrs: map[string]any{"asgi.event.type": "http.request"}, start: 4, end: 5},
		{id: id("model-send"), parent: id("model-server"), trace: modelTrace, name: serverName + " http send", kind: ptrace.SpanKindInternal, proc: "model",
			attrs: map[string]any{"asgi.event.type": "http.response.start", "http.status_code": int64(200)}, start: 37, end: 38},
		{id: id("model-server"), parent: modelParent, trace: modelTrace, name: serverName, kind: ptrace.SpanKindServer, proc: "model",
			attrs: map[string]any{"http.method": "POST", "http.target": prefix + "/v1/responses", "http.url": "http://127.0.0.1:8001" + prefix + "/v1/responses", "http.status_code": int64(200)}, start: 4, end: 39},
		{id: id("client-verify"), parent: id("rollout"), trace: o.trace, name: "HTTP POST", kind: ptrace.SpanKindClient, proc: "agent",
			attrs: rolloutAttr(map[string]any{"http.request.method": "POST", "url.full": "http://127.0.0.1:8002" + prefix + "/verify", "http.response.status_code": int64(200)}), start: 41, end: 60},
		{id: id("verify-recv"), parent: id("verify-server"), trace: resTrace, name: verifyName + " http receive", kind: ptrace.SpanKindInternal, proc: "resources",
			attrs: map[string]any{"asgi.event.type": "http.request"}, start: 42, end: 43},
		{id: id("verify-send"), parent: id("verify-server"), trace: resTrace, name: verifyName + " http send", kind: ptrace.SpanKindInternal, proc: "resources",
			attrs: map[string]any{"asgi.event.type": "http.response.start", "http.response.status_code": int64(200)}, start: 57, end: 58},
		{id: id("verify-server"), parent: resParent, trace: resTrace, name: verifyName, kind: ptrace.SpanKindServer, proc: "resources",
			attrs: map[string]any{"http.request.method": "POST", "url.path": prefix + "/verify", "url.full": "http://127.0.0.1:8002" + prefix + "/verify", "http.response.status_code": int64(200)}, start: 42, end: 59},
		{id: id("rollout"), parent: id("run"), trace: o.trace, name: "gym.rollout", kind: ptrace.SpanKindInternal, proc: "agent",
			attrs: rolloutAttr(map[string]any{"nemo.gym.server.name": "simple_agent"}), start: 2, end: 61},
		{id: id("send"), parent: id("run"), trace: o.trace, name: "POST /run http send", kind: ptrace.SpanKindInternal, proc: "agent",
			attrs: map[string]any{"asgi.event.type": "http.response.start", "http.status_code": int64(200)}, start: 61, end: 62},
		{id: id("run"), parent: id("dispatch"), trace: o.trace, name: "POST /run", kind: ptrace.SpanKindServer, proc: "agent",
			attrs: map[string]any{"http.method": "POST", "http.target": "/run", "http.route": "/run", "http.status_code": int64(200)}, start: 1, end: 63},
		{id: id("dispatch"), parent: o.hParent, trace: o.trace, name: "HTTP POST", kind: ptrace.SpanKindClient, proc: "orchestrator",
			attrs: map[string]any{"http.request.method": "POST", "url.full": "http://127.0.0.1:8000/run", "http.response.status_code": int64(200)}, start: 0, end: 64},
	}
	if o.perRollout {
		s = append(s,
			sdef{id: id("model-call"), parent: id("model-server"), trace: modelTrace, name: "gym.model.responses", kind: ptrace.SpanKindInternal, proc: "model",
				attrs: map[string]any{"nemo.gym.server.name": "policy_model"}, start: 5, end: 36},
			sdef{id: id("verify"), parent: id("verify-server"), trace: resTrace, name: "gym.verify", kind: ptrace.SpanKindInternal, proc: "resources",
				attrs: rolloutAttr(map[string]any{"nemo.gym.server.name": "example_single_tool_call"}), start: 44, end: 56},
		)
	}
	return s
}

func jobSpan(trace string) sdef {
	return sdef{id: "job", trace: trace, name: "gym.job", kind: ptrace.SpanKindInternal, proc: "orchestrator", attrs: map[string]any{}, start: 0, end: 1000}
}

// scenarios are the golden situations of issue #3; each becomes
// testdata/<name>/input.json.
func scenarios() map[string][]sdef {
	sc := map[string][]sdef{}

	var def []sdef
	for _, r := range []string{"0-0", "1-0", "2-0"} {
		def = append(def, rolloutSpans(r, rolloutOpts{obs: true, hParent: "job", trace: "job"})...)
	}
	sc["default_preset_3_rollouts"] = append(def, jobSpan("job"))

	var per []sdef
	for _, r := range []string{"0-0", "0-1", "1-0"} {
		per = append(per, rolloutSpans(r, rolloutOpts{obs: true, perRollout: true, trace: "t-" + r})...)
	}
	sc["per_rollout_preset"] = per

	var off []sdef
	for _, r := range []string{"0-0", "1-0"} {
		off = append(off, rolloutSpans(r, rolloutOpts{hParent: "job", trace: "job"})...)
	}
	sc["observability_off"] = append(off, jobSpan("job"))

	var retry []sdef
	for _, r := range []string{"12-3", "12-3-a1", "12-3-a2"} {
		retry = append(retry, rolloutSpans(r, rolloutOpts{obs: true, trace: "t-" + r})...)
	}
	sc["retry_links_previous_attempt"] = retry

	sc["url_evidence_old_and_new_semconv"] = []sdef{
		{id: "u-http-target", trace: "u1", name: "POST", kind: ptrace.SpanKindServer, proc: "norun", attrs: map[string]any{"http.method": "POST", "http.target": "/ng-rollout/7-1/verify"}},
		{id: "u-http-target-recv", parent: "u-http-target", trace: "u1", name: "POST http receive", kind: ptrace.SpanKindInternal, proc: "norun", attrs: map[string]any{"asgi.event.type": "http.request"}},
		{id: "u-http-url", trace: "u2", name: "POST", kind: ptrace.SpanKindServer, proc: "norun", attrs: map[string]any{"http.method": "POST", "http.url": "http://127.0.0.1:8002/ng-rollout/7-2/seed_session"}},
		{id: "u-url-path", trace: "u3", name: "POST", kind: ptrace.SpanKindServer, proc: "norun", attrs: map[string]any{"http.request.method": "POST", "url.path": "/ng-rollout/7-3/verify"}},
		{id: "u-url-full", trace: "u4", name: "POST", kind: ptrace.SpanKindServer, proc: "norun", attrs: map[string]any{"http.request.method": "POST", "url.full": "http://127.0.0.1:8001/ng-rollout/7-4/training-token-capture/v1/responses"}},
		{id: "u-first-present-wins", trace: "u5", name: "POST /verify", kind: ptrace.SpanKindServer, proc: "norun", attrs: map[string]any{"url.path": "/verify", "http.target": "/ng-rollout/7-5/verify"}},
		{id: "u-bad-id", trace: "u6", name: "POST", kind: ptrace.SpanKindServer, proc: "norun", attrs: map[string]any{"http.target": "/ng-rollout/_bad/verify"}},
		{id: "u-no-trailing-slash", trace: "u7", name: "POST", kind: ptrace.SpanKindServer, proc: "norun", attrs: map[string]any{"http.target": "/ng-rollout/7-6"}},
	}

	var wrap []sdef
	for _, r := range []string{"3-0", "4-0"} {
		wrap = append(wrap, rolloutSpans(r, rolloutOpts{obs: true, hParent: "wrapper", trace: "rl"})...)
	}
	sc["wrapper_above_two_rollouts"] = append(wrap, sdef{id: "wrapper", trace: "rl", name: "rl.generate_step", kind: ptrace.SpanKindInternal, proc: "orchestrator", attrs: map[string]any{}, start: 0, end: 900})

	explicit := rolloutSpans("5-0", rolloutOpts{obs: true, perRollout: true, trace: "t-5-0"})
	explicit = append(explicit,
		sdef{id: "judge-call", parent: "5-0/verify", trace: "t-5-0", name: "HTTP POST", kind: ptrace.SpanKindClient, proc: "resources",
			attrs: map[string]any{"url.full": "http://127.0.0.1:9100/v1/chat/completions", "nemo.gym.rollout.id": "judge-5-0"}, start: 45, end: 50},
		sdef{id: "judge-parse", parent: "judge-call", trace: "t-5-0", name: "judge.parse", kind: ptrace.SpanKindInternal, proc: "resources",
			attrs: map[string]any{}, start: 49, end: 50},
	)
	sc["explicit_child_rollout_under_other_rollout"] = explicit

	sc["parent_never_arrives"] = rolloutSpans("6-0", rolloutOpts{obs: true, hParent: "missing-embedder-span", trace: "t-6-0"})

	sc["rollout_split_across_traces"] = rolloutSpans("8-0", rolloutOpts{obs: true, perRollout: true, noClient: true, trace: "t-8-0"})
	return sc
}

func TestGenerateGoldenInputs(t *testing.T) {
	if !*genInputs {
		t.Skip("run with -gen-inputs to rewrite testdata/*/input.json")
	}
	for name, spans := range scenarios() {
		td := buildTraces(gymProcs, procOrder, spans)
		b, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
		require.NoError(t, err)
		dir := filepath.Join(goldenDir, name)
		require.NoError(t, os.MkdirAll(dir, 0o750))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "input.json"), prettyJSON(t, b), 0o600))
	}
}
