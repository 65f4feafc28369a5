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

	"github.com/otelcol-gym/otelcol-gym/internal/gymtest"
)

var genInputs = flag.Bool("gen-inputs", false, "rewrite testdata/*/input.json from the scenario definitions")

const runID = gymtest.RunID

var gymProcs = func() map[string]proc {
	m := map[string]proc{}
	for k, p := range gymtest.Processes() {
		m[k] = procOf(p)
	}
	return m
}()

var procOrder = gymtest.ProcessOrder()

type rolloutOpts struct {
	obs        bool   // observability_enabled: rollout ids and /ng-rollout/ URLs exist
	perRollout bool   // gym.model.* and gym.verify exist
	noClient   bool   // http_client off: model and resources SERVER spans are roots of their own traces
	hParent    string // parent of the orchestrator's HTTP POST ("" = root)
	trace      string
}

// rolloutSpans draws one rollout the way Gym emits it (gymtest.Rollout).
func rolloutSpans(r string, o rolloutOpts) []sdef {
	ss := gymtest.Rollout(r, gymtest.RolloutOptions{Observability: o.obs, PerRollout: o.perRollout, NoClient: o.noClient, DispatchParent: o.hParent, Trace: o.trace})
	out := make([]sdef, len(ss))
	for i, s := range ss {
		out[i] = sdefOf(s)
	}
	return out
}

func jobSpan(trace string) sdef { return sdefOf(gymtest.Job(trace)) }

// splitByProc splits spans into those of process proc and the rest, each in
// order.
func splitByProc(spans []sdef, proc string) (of, rest []sdef) {
	for _, s := range spans {
		if s.proc == proc {
			of = append(of, s)
		} else {
			rest = append(rest, s)
		}
	}
	return of, rest
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

	// Trace context leaks across rollouts in one process (an asyncio task
	// reusing a context): 9-1's model call is made under 9-0's gym.rollout.
	// Its direct evidence wins over the ancestor's rollout, and the model
	// server's spans below it follow it (§4.2).
	leak := rolloutSpans("9-0", rolloutOpts{obs: true, perRollout: true, trace: "t-9"})
	for _, d := range rolloutSpans("9-1", rolloutOpts{obs: true, perRollout: true, trace: "t-9"}) {
		if d.id == "9-1/client-model" {
			d.parent = "9-0/rollout"
		}
		leak = append(leak, d)
	}
	sc["context_leak_across_rollouts"] = leak

	sc["request_takes_finished_requests_context"] = leakedRequestSpans()

	sc["rollout_split_across_traces"] = rolloutSpans("8-0", rolloutOpts{obs: true, perRollout: true, noClient: true, trace: "t-8-0"})
	return sc
}

// leakedRequestSpans draws what real Gym under generic instrumentation sent
// once (e2e's real_gym_generic_otel_context_leak): the agent's request of
// rollout 10-1 arrived without a traceparent while 10-0's finished request
// was still the current context, so the agent's POST /run of 10-1 names
// 10-0's POST /run as its local parent, which ended before it began. Each
// rollout keeps its own spans; 10-1's orchestrator call is in none (nothing
// of 10-1 is below it). Rollout 10-2's POST /run has a local parent too,
// a middleware span around it: that parent is really above it.
func leakedRequestSpans() []sdef {
	const local, remote = 0x100, 0x300
	run := func(r, id, parent, trace string, flags uint32, start, end int64) []sdef {
		return []sdef{
			{id: id, parent: parent, trace: trace, name: "POST /run", kind: ptrace.SpanKindServer, proc: "agent", flags: flags, start: start, end: end,
				attrs: map[string]any{"http.method": "POST", "http.target": "/run", "http.route": "/run"}},
			{id: id + "/receive", parent: id, trace: trace, name: "POST /run http receive", kind: ptrace.SpanKindInternal, proc: "agent", flags: local, start: start + 1, end: start + 2,
				attrs: map[string]any{"asgi.event.type": "http.request"}},
			{id: id + "/model", parent: id, trace: trace, name: "POST", kind: ptrace.SpanKindClient, proc: "agent", flags: local, start: start + 5, end: end - 5,
				attrs: map[string]any{"http.method": "POST", "http.url": "http://127.0.0.1:8001/ng-rollout/" + r + "/v1/responses"}},
			{id: id + "/model-server", parent: id + "/model", trace: trace, name: "POST /ng-rollout/{rollout_id}/v1/responses", kind: ptrace.SpanKindServer, proc: "model", flags: remote, start: start + 6, end: end - 6,
				attrs: map[string]any{"http.method": "POST", "http.target": "/ng-rollout/" + r + "/v1/responses", "http.route": "/ng-rollout/{rollout_id}/v1/responses"}},
		}
	}
	call := func(id, trace string, start, end int64) sdef {
		return sdef{id: id, trace: trace, name: "POST", kind: ptrace.SpanKindClient, proc: "orchestrator", start: start, end: end,
			attrs: map[string]any{"http.method": "POST", "http.url": "http://127.0.0.1:8000/run"}}
	}
	spans := []sdef{call("10-0/call", "t-10-0", 0, 100)}
	spans = append(spans, run("10-0", "10-0/run", "10-0/call", "t-10-0", remote, 5, 95)...)
	spans = append(spans, call("10-1/call", "t-10-1", 90, 300))
	spans = append(spans, run("10-1", "10-1/run", "10-0/run", "t-10-0", local, 96, 290)...)
	spans = append(spans, call("10-2/call", "t-10-2", 300, 500),
		sdef{id: "10-2/middleware", parent: "10-2/call", trace: "t-10-2", name: "middleware", kind: ptrace.SpanKindInternal, proc: "agent", flags: remote, start: 302, end: 498, attrs: map[string]any{}})
	return append(spans, run("10-2", "10-2/run", "10-2/middleware", "t-10-2", local, 305, 495)...)
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
