// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// The service-map golden cases (design §4.4) live in ./testdata/<case>/
// {input.json,expected.json}; -gen-inputs rewrites the inputs from
// smScenarios, -update the expected outputs (read the diff).
const smGoldenDir = "testdata"

// smCase is one golden situation of §4.4.
type smCase struct {
	spans []sdef
	procs map[string]proc
	cfg   func(*Config)
	// ordered cases depend on arrival order by design (peer.service is set
	// from what has been seen when a CLIENT span leaves, which is never
	// held): they are fed one span per batch in file order only. The others
	// go through every arrival plan, shutdown alone and a second processor.
	ordered bool
	// order is the order of the processes in input.json (default smProcOrder).
	order []string
}

var smProcOrder = []string{"orchestrator", "agent", "model", "resources", "rl", "vllm_client", "norun"}

func smProcs() map[string]proc {
	m := map[string]proc{}
	for k, v := range gymProcs {
		m[k] = v
	}
	m["rl"] = proc{service: "nemo-rl/grpo", host: "node-9", pid: 9100, run: runID, scope: "nemo_rl"}
	return m
}

// overrideProcs renames every process the way gym eval submit's collector
// does: service.name becomes one routing name, the real one moves to
// service.name.override.
func overrideProcs(td ptrace.Traces) {
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		a := rss.At(i).Resource().Attributes()
		a.PutStr("service.name.override", resourceString(a, "service.name"))
		a.PutStr("service.name", "gym-e2e")
	}
}

// withoutHTTPClient draws a rollout as Gym emits it with the http_client
// group off: no CLIENT spans, so no traceparent; the agent's POST /run and
// the model and resources SERVER spans each start a trace of their own.
func withoutHTTPClient(r string, perRollout bool) []sdef {
	var out []sdef
	for _, s := range rolloutSpans(r, rolloutOpts{obs: true, perRollout: perRollout, noClient: true, trace: "t-" + r}) {
		if s.kind == ptrace.SpanKindClient {
			continue
		}
		if s.name == "POST /run" {
			s.parent = ""
		}
		out = append(out, s)
	}
	return out
}

func smScenarios() map[string]smCase {
	sc := map[string]smCase{}

	var off []sdef
	for _, r := range []string{"0-0", "1-0"} {
		off = append(off, withoutHTTPClient(r, r == "0-0")...)
	}
	off = append(off, jobSpan("job"))
	sc["sm_http_client_off"] = smCase{spans: off}
	sc["sm_http_client_off_repairs_disabled"] = smCase{spans: off, cfg: func(c *Config) {
		c.ServiceMap.Enabled = false
		c.ServiceMap.SynthesizeClientSpans = false
	}}

	// gym.rollout never comes (the rollout group is off): the SERVER spans
	// wait rollout_wait and leave as they stand.
	var noRollout []sdef
	for _, s := range withoutHTTPClient("2-0", false) {
		if s.name != "gym.rollout" {
			noRollout = append(noRollout, s)
		}
	}
	sc["sm_gym_rollout_never_comes"] = smCase{spans: noRollout}

	// An embedder (NeMo-RL) calls the agent's /run from inside its own
	// INTERNAL span, propagating context without a CLIENT span. Within one
	// service (a resources server serving an in-process call below
	// gym.verify) nothing is added.
	emb := rolloutSpans("3-0", rolloutOpts{obs: true, perRollout: true, hParent: "", trace: "rl"})
	for i := range emb {
		if emb[i].name == "POST /run" {
			emb[i].parent = "rl-step"
		}
	}
	var embedder []sdef
	for _, s := range emb {
		if s.id != "3-0/dispatch" {
			embedder = append(embedder, s)
		}
	}
	embedder = append(embedder,
		sdef{id: "rl-step", trace: "rl", name: "rl.rollout_step", kind: ptrace.SpanKindInternal, proc: "rl", attrs: map[string]any{}, start: 0, end: 900},
		sdef{id: "3-0/in-process", parent: "3-0/verify", trace: "rl", name: "POST /judge", kind: ptrace.SpanKindServer, proc: "resources",
			attrs: map[string]any{"http.method": "POST", "http.target": "/judge"}, start: 45, end: 50},
	)
	// peer.service is switched off here (its CLIENT spans' values would
	// depend on arrival order; sm_peer_service_sources covers them), which
	// also shows the two repairs switch independently.
	sc["sm_embedder_internal_parent"] = smCase{spans: embedder, procs: smProcs(), cfg: func(c *Config) { c.ServiceMap.Enabled = false }}

	// Behind gym eval submit's collector the service is service.name.override.
	sc["sm_service_name_override"] = smCase{spans: withoutHTTPClient("4-0", false)}

	// peer.service from, in order: the SERVER child seen, the configured and
	// the learned host:port maps, the host:port called; never overwritten.
	client := func(id, url string, extra map[string]any) sdef {
		a := map[string]any{"http.request.method": "POST", "nemo.gym.rollout.id": "5-0"}
		if url != "" {
			a["url.full"] = url
		}
		for k, v := range extra {
			a[k] = v
		}
		return sdef{id: id, parent: "5-0/rollout", trace: "t-5-0", name: "HTTP POST", kind: ptrace.SpanKindClient, proc: "agent", attrs: a, start: 3, end: 40}
	}
	sc["sm_peer_service_sources"] = smCase{ordered: true, cfg: func(c *Config) {
		c.ServiceMap.Peers = map[string]string{"127.0.0.1:9000": "vllm"}
	}, order: []string{"model", "resources", "agent"}, spans: []sdef{
		// The model SERVER span arrives before its CLIENT parent and teaches
		// 127.0.0.1:8001 (stable semconv).
		{id: "model-server", parent: "c-child", trace: "t-5-0", name: "POST", kind: ptrace.SpanKindServer, proc: "model",
			attrs: map[string]any{"http.request.method": "POST", "url.path": "/ng-rollout/5-0/v1/responses", "server.address": "127.0.0.1", "server.port": int64(8001)}, start: 4, end: 39},
		// The resources SERVER span (old semconv) teaches 127.0.0.1:8002.
		{id: "verify-server", parent: "absent-client", trace: "t-5-0", name: "POST", kind: ptrace.SpanKindServer, proc: "resources",
			attrs: map[string]any{"http.method": "POST", "http.target": "/ng-rollout/5-0/verify", "net.host.name": "127.0.0.1", "net.host.port": int64(8002)}, start: 42, end: 59},
		client("c-child", "http://127.0.0.1:8001/ng-rollout/5-0/v1/responses", nil),
		client("c-learned-stable", "http://127.0.0.1:8001/ng-rollout/5-0/v1/responses", nil),
		client("c-learned-old", "http://127.0.0.1:8002/ng-rollout/5-0/seed_session", nil),
		client("c-configured", "http://127.0.0.1:9000/v1/chat/completions", nil),
		client("c-address-url", "https://judge.example.com/v1/chat/completions", nil),
		client("c-address-attrs", "", map[string]any{"server.address": "10.0.0.7", "server.port": int64(8080)}),
		client("c-already-set", "http://127.0.0.1:8001/x", map[string]any{"peer.service": "set-by-the-sender"}),
		client("c-nowhere", "", nil),
	}}
	return sc
}

func smTraces(name string, c smCase) ptrace.Traces {
	procs := c.procs
	if procs == nil {
		procs = gymProcs
	}
	order := c.order
	if order == nil {
		order = smProcOrder
	}
	td := buildTraces(procs, order, c.spans)
	if name == "sm_service_name_override" {
		overrideProcs(td)
	}
	return td
}

func TestGenerateServiceMapGoldenInputs(t *testing.T) {
	if !*genInputs {
		t.Skip("run with -gen-inputs to rewrite testdata/sm_*/input.json")
	}
	for name, c := range smScenarios() {
		b, err := (&ptrace.JSONMarshaler{}).MarshalTraces(smTraces(name, c))
		require.NoError(t, err)
		dir := filepath.Join(smGoldenDir, name)
		require.NoError(t, os.MkdirAll(dir, 0o750))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "input.json"), prettyJSON(t, b), 0o600))
	}
}

func smConfig(c smCase) *Config {
	cfg := testConfig()
	if c.cfg != nil {
		c.cfg(cfg)
	}
	return cfg
}

// oneByOne feeds td one span per batch, in file order.
func oneByOne(td ptrace.Traces) []ptrace.Traces {
	refs := flatRefs(td)
	g := make([][]spanRef, len(refs))
	for i, r := range refs {
		g[i] = []spanRef{r}
	}
	return batchesOf(td, g)
}

func TestServiceMapGolden(t *testing.T) {
	for name, c := range smScenarios() {
		t.Run(name, func(t *testing.T) {
			cfg := smConfig(c)
			input := readTraces(t, filepath.Join(smGoldenDir, name, "input.json"))
			expPath := filepath.Join(smGoldenDir, name, "expected.json")
			var got []normSpan
			if c.ordered {
				got = runPlan(t, cfg, oneByOne(input), true)
			} else {
				got = runPlan(t, cfg, []ptrace.Traces{copyTraces(input)}, true)
			}
			if *update {
				writeJSON(t, expPath, got)
			}
			var want []normSpan
			b, err := os.ReadFile(expPath)
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(b, &want))
			synthesized := 0
			for _, s := range want {
				if s.Attributes[attrSynthetic] == true {
					synthesized++
				}
			}
			require.Len(t, want, input.SpanCount()+synthesized, "out = in + synthesized")
			assertSameSpans(t, want, got, "golden")
			checkSynthesizedIDs(t, want)
			if c.ordered {
				return
			}
			for plan, batches := range arrivalPlans(input, 6) {
				assertSameSpans(t, want, runPlan(t, cfg, batches, true), plan)
			}
			for plan, batches := range arrivalPlans(input, 2) {
				assertSameSpans(t, want, runPlan(t, cfg, batches, false), "shutdown/"+plan)
			}
			// A second gym processor synthesizes nothing again.
			first := newHarness(t, cfg)
			first.consume(copyTraces(input))
			first.shutdown()
			var second []ptrace.Traces
			for _, td := range first.sink.AllTraces() {
				second = append(second, copyTraces(td))
			}
			h2 := newHarness(t, cfg)
			for _, td := range second {
				h2.consume(td)
			}
			h2.tickAt(3 * cfg.RolloutWait)
			h2.shutdown()
			assertSameSpans(t, want, h2.out(), "second processor")
			assert.Zero(t, h2.metricSum(metricSynthesized), "the second processor synthesizes nothing")
		})
	}
}

// checkSynthesizedIDs recomputes every synthesized span id from its SERVER
// child's trace and span id, independently of the processor.
func checkSynthesizedIDs(t *testing.T, spans []normSpan) {
	t.Helper()
	byParent := map[string][]normSpan{}
	for _, s := range spans {
		byParent[s.ParentID] = append(byParent[s.ParentID], s)
	}
	for _, s := range spans {
		if s.Attributes[attrSynthetic] != true {
			continue
		}
		kids := byParent[s.SpanID]
		require.Len(t, kids, 1, "synthesized %s has one child", s.SpanID)
		assert.Equal(t, expectedSyntheticSpanID(kids[0].TraceID, kids[0].SpanID), s.SpanID)
		assert.Equal(t, kids[0].TraceID, s.TraceID)
	}
}

// The synthesized CLIENT span of a parentless SERVER span (design §4.4): in
// gym.rollout's resource and scope, below it, with the SERVER span's start,
// end and method, and the SERVER span below it.
func TestSynthesizedSpanShape(t *testing.T) {
	c := smScenarios()["sm_http_client_off"]
	h := newHarness(t, smConfig(c))
	h.consume(smTraces("sm_http_client_off", c))
	h.shutdown()

	type placed struct {
		span  ptrace.Span
		res   pcommon.Resource
		scope pcommon.InstrumentationScope
	}
	byID := map[pcommon.SpanID]placed{}
	for _, td := range h.sink.AllTraces() {
		rss := td.ResourceSpans()
		for i := 0; i < rss.Len(); i++ {
			for j := 0; j < rss.At(i).ScopeSpans().Len(); j++ {
				ss := rss.At(i).ScopeSpans().At(j)
				for k := 0; k < ss.Spans().Len(); k++ {
					byID[ss.Spans().At(k).SpanID()] = placed{ss.Spans().At(k), rss.At(i).Resource(), ss.Scope()}
				}
			}
		}
	}
	servers := 0
	for _, p := range byID {
		s := p.span
		if s.Kind() != ptrace.SpanKindServer || s.Name() == "POST /run" {
			continue
		}
		servers++
		syn, ok := byID[s.ParentSpanID()]
		require.True(t, ok, "SERVER %s %q has its synthesized parent", s.SpanID(), s.Name())
		ss := syn.span
		rollout, _ := s.Attributes().Get("nemo.gym.rollout.id")
		gr, ok := byID[ss.ParentSpanID()]
		require.True(t, ok)
		assert.Equal(t, "gym.rollout", gr.span.Name())
		assert.Equal(t, gr.res.Attributes().AsRaw(), syn.res.Attributes().AsRaw(), "gym.rollout's resource")
		assert.Equal(t, gr.scope.Name(), syn.scope.Name(), "gym.rollout's scope")
		assert.Equal(t, ptrace.SpanKindClient, ss.Kind())
		assert.Equal(t, "HTTP POST", ss.Name())
		assert.Equal(t, s.StartTimestamp(), ss.StartTimestamp())
		assert.Equal(t, s.EndTimestamp(), ss.EndTimestamp())
		assert.Equal(t, s.TraceID(), ss.TraceID())
		assert.Equal(t, gr.span.TraceID(), ss.TraceID())
		assert.Equal(t, map[string]any{
			"nemo.gym.synthetic":         true,
			"nemo.gym.rollout.id":        rollout.Str(),
			"peer.service":               resourceString(byID[s.SpanID()].res.Attributes(), "service.name"),
			"http.request.method":        "POST",
			"nemo.gym.original_trace_id": hexTrace(traceIDOf("t-" + rollout.Str())),
		}, ss.Attributes().AsRaw())
		assert.Equal(t, expectedSyntheticSpanID(hexTrace(s.TraceID()), traceHex8(s.SpanID())), traceHex8(ss.SpanID()))
	}
	assert.Equal(t, 4, servers, "model and resources SERVER spans of two rollouts")
	assert.Equal(t, int64(4), h.metricSum(metricSynthesized))
	assert.Equal(t, h.metricSum(metricSpansReceived)+4, h.metricSum(metricSpansEmitted), "out = in + synthesized")
}

func traceHex8(id pcommon.SpanID) string { return id.String() }

// A SERVER span waiting for gym.rollout leaves repaired in the call in which
// gym.rollout arrives, and a SERVER span arriving after it leaves repaired
// at once; gym.rollout that never comes lets it go after rollout_wait.
func TestServerSpanWaitsOnlyForGymRollout(t *testing.T) {
	spans := withoutHTTPClient("6-0", false)
	var rollout, server, late []sdef
	for _, s := range spans {
		switch s.id {
		case "6-0/rollout":
			rollout = append(rollout, s)
		case "6-0/model-server":
			server = append(server, s)
		case "6-0/verify-server":
			late = append(late, s)
		}
	}
	h := newHarness(t, testConfig())
	h.consume(buildTraces(gymProcs, procOrder, server))
	assert.Equal(t, 1, h.pending(), "the SERVER span waits for gym.rollout")
	h.consume(buildTraces(gymProcs, procOrder, rollout))
	assert.Zero(t, h.pending())
	require.Len(t, h.out(), 3, "gym.rollout, the SERVER span and its synthesized parent")
	h.consume(buildTraces(gymProcs, procOrder, late))
	assert.Zero(t, h.pending(), "gym.rollout known: repaired at once")
	require.Len(t, h.out(), 5)

	cfg := testConfig()
	h = newHarness(t, cfg)
	h.consume(buildTraces(gymProcs, procOrder, server))
	h.tickAt(cfg.RolloutWait - 1)
	assert.Equal(t, 1, h.pending())
	h.tickAt(1)
	assert.Zero(t, h.pending())
	out := h.out()
	require.Len(t, out, 1)
	assert.Empty(t, out[0].ParentID, "left as it stood")
	assert.Equal(t, int64(1), h.metricSum(metricSynthesisMissed))
}

// CLIENT spans are never held for peer.service: with their rollout known
// they leave in the call that brought them, whatever is known of their peer.
// A CLIENT span whose peer is known (its SERVER child, a configured or
// learned host:port, or a peer.service of its own) leaves at once; one
// whose host:port no SERVER span has taught waits settle, then leaves with
// the host:port.
func TestClientSpansWaitOnlyForUnknownPeers(t *testing.T) {
	c := smScenarios()["sm_peer_service_sources"]
	cfg := smConfig(c)
	h := newHarness(t, cfg)
	held := 0
	for _, b := range oneByOne(smTraces("sm_peer_service_sources", c)) {
		n := b.SpanCount()
		before := len(h.out())
		h.consume(b)
		if len(h.out()) == before {
			held += n
		}
		assert.Equal(t, held, h.pending())
	}
	assert.Equal(t, 2, held, "the two CLIENT spans whose host:port nothing taught (c-address-url, c-address-attrs)")
	h.tickAt(cfg.Settle)
	assert.Zero(t, h.pending())
	for src, want := range map[string]int64{"child": 1, "configured": 1, "learned": 2, "address": 2} {
		assert.Equal(t, want, h.metricSum(metricPeerServiceSet, "source", src), src)
	}
}

// The first wave of a run: the agent's first CLIENT spans to the model and
// resources servers arrive before any SERVER span of theirs (their batch
// span processors flush later). They wait for the SERVER span that tells
// the service, instead of leaving with a phantom 127.0.0.1:port peer; once
// the host:port is learned, no CLIENT span to it waits.
func TestFirstWaveClientSpansLearnTheirPeer(t *testing.T) {
	cfg := testConfig()
	h := newHarness(t, cfg)
	var agent, servers []sdef
	rollouts := []string{"0-0", "0-1", "1-0", "1-1"}
	for _, r := range rollouts {
		for _, s := range rolloutSpans(r, rolloutOpts{obs: true, trace: "t-" + r}) {
			switch {
			case s.proc == "agent" && s.kind == ptrace.SpanKindClient:
				agent = append(agent, s)
			case s.proc == "model" || s.proc == "resources":
				if s.kind == ptrace.SpanKindServer { // FastAPI's old-semconv host attributes
					s.attrs["net.host.name"] = "127.0.0.1"
					s.attrs["net.host.port"] = map[string]int64{"model": 8001, "resources": 8002}[s.proc]
				}
				servers = append(servers, s)
			}
		}
	}
	for _, s := range agent {
		s.attrs["server.address"] = "127.0.0.1" // as Gym's aiohttp client spans have
		h.consume(buildTraces(gymProcs, procOrder, []sdef{s}))
	}
	require.Equal(t, len(agent), h.pending(), "no SERVER span of the model or resources server arrived yet")
	// The servers' batches arrive, SERVER spans with their ASGI children.
	h.tickAt(cfg.Settle / 2)
	h.consume(buildTraces(gymProcs, procOrder, servers))
	assert.Zero(t, h.pending())
	got := map[string]int{}
	for _, s := range h.out() {
		if s.Name == "HTTP POST" && s.Service == "nemo-gym/simple_agent" {
			got[s.Attributes["peer.service"].(string)]++
		}
	}
	assert.Equal(t, map[string]int{"nemo-gym/policy_model": len(rollouts), "nemo-gym/example_single_tool_call": len(rollouts)}, got)
	assert.Zero(t, h.metricSum(metricPeerServiceSet, "source", "address"))

	// Learned: a later CLIENT span to the same host:port leaves at once.
	learned := h.metricSum(metricPeerServiceSet, "source", "learned")
	late := rolloutSpans("2-0", rolloutOpts{obs: true, trace: "t-2-0"})
	h.consume(buildTraces(gymProcs, procOrder, []sdef{pick(late, "2-0/client-model")}))
	assert.Zero(t, h.pending())
	assert.Equal(t, learned+1, h.metricSum(metricPeerServiceSet, "source", "learned"))
}

// Each repair switches off on its own; without the split there is no T' to
// place a parentless SERVER span in, so none is synthesized either.
func TestServiceMapSwitches(t *testing.T) {
	c := smScenarios()["sm_http_client_off"]
	for name, set := range map[string]func(*Config){
		"synthesize_client_spans=false": func(c *Config) { c.ServiceMap.SynthesizeClientSpans = false },
		"split.enabled=false":           func(c *Config) { c.Split.Enabled = false },
	} {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig()
			set(cfg)
			h := newHarness(t, cfg)
			in := smTraces("sm_http_client_off", c)
			n := in.SpanCount()
			h.consume(in)
			servers := 0
			for _, s := range h.out() {
				if s.Name == "POST" {
					servers++
					assert.Empty(t, s.ParentID, "the SERVER span leaves as it is")
				}
			}
			assert.Equal(t, 4, servers, "no SERVER span is held")
			h.shutdown()
			assert.Len(t, h.out(), n)
			assert.Zero(t, h.metricSum(metricSynthesized))
		})
	}
	// peer.service off: CLIENT spans keep their attributes.
	cfg := testConfig()
	cfg.ServiceMap.Enabled = false
	sc := smScenarios()["sm_peer_service_sources"]
	h := newHarness(t, cfg)
	h.consume(smTraces("sm_peer_service_sources", sc))
	h.shutdown()
	for _, s := range h.out() {
		if s.Name == "HTTP POST" && s.SpanID != spanIDOf("c-already-set").String() {
			assert.NotContains(t, s.Attributes, attrPeerService)
		}
	}
	assert.Zero(t, h.metricSum(metricPeerServiceSet))
}

func hexTrace(id pcommon.TraceID) string { return hex.EncodeToString(id[:]) }

// A host:port no SERVER span ever teaches (a model server's upstream vLLM,
// an external API) costs one wait: the first CLIENT spans to it wait settle
// and leave with the host:port, and no later one waits.
func TestUntaughtPeerWaitsOnce(t *testing.T) {
	cfg := testConfig()
	h := newHarness(t, cfg)
	llm := func(id string) sdef {
		return sdef{id: id, parent: "0-0/model-server", trace: "t-0-0", name: "HTTP POST", kind: ptrace.SpanKindClient, proc: "model",
			attrs: map[string]any{"nemo.gym.rollout.id": "0-0", "url.full": "http://10.9.9.9:8000/v1/chat/completions"}}
	}
	h.consume(buildTraces(gymProcs, procOrder, []sdef{llm("first")}))
	require.Equal(t, 1, h.pending(), "nothing taught 10.9.9.9:8000 yet")
	h.tickAt(cfg.Settle)
	require.Zero(t, h.pending())
	h.consume(buildTraces(gymProcs, procOrder, []sdef{llm("second")}))
	assert.Zero(t, h.pending(), "waited once in vain: no CLIENT span to it waits again")
	assert.Equal(t, int64(2), h.metricSum(metricPeerServiceSet, "source", "address"))
}

// The first settle of a run can hold many CLIENT spans to a host:port no
// SERVER span teaches (every call of a model server to its LLM). They give
// up one by one; each leaves its host:port's list in a constant time on
// average (the list is compacted once half of it left), the list never holds
// more than twice the spans still waiting, and nothing is left behind.
func TestUntaughtPeerWaitersGiveUpOneByOne(t *testing.T) {
	cfg := testConfig()
	h := newHarness(t, cfg)
	const n = 500
	for i := range n {
		r := fmt.Sprintf("%d-0", i)
		h.consume(buildTraces(gymProcs, procOrder, []sdef{{id: r + "/llm", parent: r + "/model-server", trace: "t-" + r, name: "HTTP POST",
			kind: ptrace.SpanKindClient, proc: "model", attrs: map[string]any{"nemo.gym.rollout.id": r, "url.full": "http://10.9.9.9:8000/v1/chat/completions"}}}))
		h.clock.Advance(time.Millisecond) // each its own deadline
	}
	require.Equal(t, n, h.pending())
	h.clock.Advance(cfg.Settle - n*time.Millisecond)
	for left := n; left > 0; {
		h.tickAt(time.Millisecond)
		left = h.pending()
		h.p.mu.Lock()
		listed := h.p.eng.repair.Waiting("10.9.9.9:8000")
		h.p.mu.Unlock()
		require.LessOrEqual(t, listed, 2*left+1, "%d still wait", left)
	}
	assert.Equal(t, int64(n), h.metricSum(metricPeerServiceSet, "source", "address"))
	h.p.mu.Lock()
	defer h.p.mu.Unlock()
	lists, drops := h.p.eng.repair.WaitLists()
	assert.Zero(t, lists, "no host:port has a waiting list")
	assert.Zero(t, drops, "nor drops to compact")
}

// BenchmarkUntaughtPeerWaiters: n CLIENT spans to a host:port no SERVER
// span teaches arrive within a settle, then give up one by one; the time per
// span does not grow with n.
func BenchmarkUntaughtPeerWaiters(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			batches := make([]ptrace.Traces, n)
			for i := range batches {
				r := fmt.Sprintf("%d-0", i)
				batches[i] = buildTraces(gymProcs, procOrder, []sdef{{id: r + "/llm", parent: r + "/model-server", trace: "t-" + r, name: "HTTP POST",
					kind: ptrace.SpanKindClient, proc: "model", attrs: map[string]any{"nemo.gym.rollout.id": r, "url.full": "http://10.9.9.9:8000/v1/chat/completions"}}})
			}
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				cfg := testConfig()
				h := newHarness(b, cfg)
				b.StartTimer()
				for _, td := range batches {
					cp := ptrace.NewTraces()
					td.CopyTo(cp)
					h.consume(cp)
					h.clock.Advance(cfg.Settle / time.Duration(n))
				}
				for h.pending() > 0 {
					h.tickAt(cfg.Settle / time.Duration(n))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/span")
		})
	}
}
