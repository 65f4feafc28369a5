// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
)

// The rules of design §4.2 on how long an undecided span waits, with traffic
// timed like a real Gym run: spans arrive when they end (an SDK batch delay
// of zero), on a fake clock.

// issueTimingConfig is the configuration a new user tried in issue #16.
func issueTimingConfig() *Config {
	cfg := coreConfig()
	cfg.Wait = time.Second
	cfg.Settle = 500 * time.Millisecond
	cfg.RolloutWait = 60 * time.Second
	return cfg
}

// genericProcs are Gym's processes under generic OpenTelemetry
// instrumentation: the same resources, but no nemo.gym.server.type.
var genericProcs = func() map[string]proc {
	m := map[string]proc{}
	for k, p := range gymProcs {
		p.serverType = ""
		m[k] = p
	}
	return m
}()

// replay delivers spans the way their processes export them with no batch
// delay: each span when it ends (unit ms of its offsets), one batch per
// process and end time, the timer ticking every 10 ms of the fake clock in
// between. It returns when the clock reaches until.
func replay(h *harness, procs map[string]proc, spans []sdef, unit, until time.Duration) {
	byEnd := map[int64][]sdef{}
	var ends []int64
	for _, s := range spans {
		if _, ok := byEnd[s.end]; !ok {
			ends = append(ends, s.end)
		}
		byEnd[s.end] = append(byEnd[s.end], s)
	}
	sort.Slice(ends, func(i, j int) bool { return ends[i] < ends[j] })
	now := time.Duration(0)
	step := 10 * time.Millisecond
	advanceTo := func(t time.Duration) {
		for now+step <= t {
			now += step
			h.tickAt(step)
		}
		if t > now {
			h.clock.Advance(t - now)
			now = t
		}
	}
	for _, end := range ends {
		advanceTo(time.Duration(end) * unit)
		for _, pn := range procOrder {
			var batch []sdef
			for _, s := range byEnd[end] {
				if s.proc == pn {
					batch = append(batch, s)
				}
			}
			if len(batch) > 0 {
				h.consume(buildTraces(procs, procOrder, batch))
			}
		}
	}
	advanceTo(until)
}

func rolloutOf(id string) string {
	r, _, _ := strings.Cut(id, "/")
	return r
}

// (a) A cold model server: the first model calls of the run end after wait
// and after settle, so no span carries rollout evidence until then. The
// agent's POST /run http receive ended at the start of its rollout and
// waited meanwhile; every span of the first wave still leaves with its
// rollout, each rollout in its own trace.
func TestFirstWaveEvidenceAfterWaitAndSettle(t *testing.T) {
	cfg := issueTimingConfig()
	h := newHarness(t, cfg)
	rollouts := []string{"0-0", "0-1", "1-0", "1-1"}
	var spans []sdef
	for _, r := range rollouts {
		spans = append(spans, rolloutSpans(r, rolloutOpts{obs: true, hParent: "job", trace: "job"})...)
	}
	// 50 ms a unit: the model calls end at 1.9-2.0 s, past wait (1 s) and
	// settle (0.5 s); the rollouts end at 3.2 s.
	unit := 50 * time.Millisecond
	firstEvidence := 38 * unit
	require.Greater(t, firstEvidence, cfg.Wait+cfg.Settle)
	replay(h, gymProcs, spans, unit, 3200*time.Millisecond+cfg.Wait+cfg.Settle)
	h.consume(buildTraces(gymProcs, procOrder, []sdef{jobSpan("job")}))
	h.tickAt(cfg.Wait)
	require.Zero(t, h.pending())

	out := h.out()
	require.Len(t, out, len(spans)+1)
	for _, s := range out {
		if s.Name == "gym.job" {
			assert.Empty(t, s.Rollout)
			continue
		}
		r := ""
		for _, d := range spans {
			if spanIDOf(d.id).String() == s.SpanID {
				r = rolloutOf(d.id)
			}
		}
		assert.Equal(t, r, s.Rollout, "%s of %s", s.Name, s.Service)
		assert.Equal(t, expectedTraceID(runID, "", r), s.TraceID, "%s of %s: one trace per rollout", s.Name, s.Service)
	}
	assert.Zero(t, h.metricSum(metricReleasedUndecided, "reason", "wait"))
	assert.Zero(t, h.metricSum(metricReleasedUndecided, "reason", "parent_missing"))
	assert.Zero(t, h.metricSum(metricSpansPassed))
	assert.Equal(t, int64(1), h.metricSum(metricSetupProblems, "problem", "no_rollout_evidence"),
		"the run showed neither evidence nor observability off within wait: the diagnostic fires, but nothing passes through")
}

// (b) Observability off, shown by a gym.rollout without a rollout id: what
// the run holds leaves in the call that brings the sign, and its later
// spans pass through in the call that brings them.
func TestObservabilityOffShownByRolloutWithoutID(t *testing.T) {
	cfg := issueTimingConfig()
	h := newHarness(t, cfg)
	spans := rolloutSpans("0-0", rolloutOpts{hParent: "job", trace: "job"})
	recv := pick(spans, "0-0/recv")
	h.consume(buildTraces(gymProcs, procOrder, []sdef{recv}))
	require.Equal(t, 1, h.pending(), "the agent's http receive waits for its rollout")
	h.tickAt(cfg.Settle)
	require.Equal(t, 1, h.pending())

	h.consume(buildTraces(gymProcs, procOrder, []sdef{pick(spans, "0-0/rollout")}))
	assert.Zero(t, h.pending(), "the run showed observability off: what it held left in the same call")
	require.Len(t, h.out(), 2)
	assert.Equal(t, int64(1), h.metricSum(metricReleasedUndecided, "reason", "observability_off"))

	// A later span of the run, which would wait otherwise, passes through
	// in the call that brings it.
	h.consume(buildTraces(gymProcs, procOrder, []sdef{pick(spans, "0-0/send")}))
	assert.Zero(t, h.pending())
	require.Len(t, h.out(), 3)
	for _, s := range h.out() {
		assert.Empty(t, s.Rollout)
		assert.Equal(t, traceIDOf("job").String(), s.TraceID, "trace ids unchanged")
	}
	assert.Equal(t, int64(1), h.metricSum(metricSetupProblems, "problem", "observability_off"))
}

// (b) The same, shown by a model-server POST without the /ng-rollout/
// prefix (the first thing a run with observability off and the default
// preset shows, before any rollout ends).
func TestObservabilityOffShownByUnprefixedModelPost(t *testing.T) {
	cfg := issueTimingConfig()
	h := newHarness(t, cfg)
	spans := rolloutSpans("0-0", rolloutOpts{hParent: "job", trace: "job"})
	h.consume(buildTraces(gymProcs, procOrder, []sdef{pick(spans, "0-0/recv"), pick(spans, "0-0/model-recv")}))
	require.Equal(t, 2, h.pending())
	// A GET on the model server shows nothing (health checks), nor does a
	// POST on another server.
	h.consume(buildTraces(gymProcs, procOrder, []sdef{
		{id: "health", trace: "h", name: "GET /health", kind: ptrace.SpanKindServer, proc: "model", attrs: map[string]any{"http.method": "GET", "http.target": "/health"}},
		pick(spans, "0-0/verify-server"),
	}))
	require.Equal(t, 4, h.pending())

	h.consume(buildTraces(gymProcs, procOrder, []sdef{pick(spans, "0-0/model-server")}))
	assert.Zero(t, h.pending(), "the run showed observability off: what it held left in the same call")
	assert.Len(t, h.out(), 5)
	h.consume(buildTraces(gymProcs, procOrder, []sdef{pick(spans, "0-0/model-send")}))
	assert.Zero(t, h.pending(), "and its later spans pass through")
	assert.Len(t, h.out(), 6)
	assert.Equal(t, int64(1), h.metricSum(metricSetupProblems, "problem", "observability_off"))
}

// (b) The model-route sign needs no nemo.gym.server.type: a SERVER POST on
// a route of model_routes without the prefix shows it, on any process; a
// POST on another route does not.
func TestObservabilityOffShownByModelRouteWithoutServerType(t *testing.T) {
	for _, c := range []struct {
		name   string
		routes []string
		off    bool
	}{
		{"default routes", nil, true},
		{"routes configured without /v1/responses", []string{"/generate"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := issueTimingConfig()
			if c.routes != nil {
				cfg.ModelRoutes = c.routes
			}
			h := newHarness(t, cfg)
			h.consume(buildTraces(genericProcs, procOrder, []sdef{
				undecided("recv", "run", "agent"),
				{id: "other", trace: "o", name: "POST /seed_session", kind: ptrace.SpanKindServer, proc: "resources", attrs: map[string]any{"http.method": "POST", "url.full": "http://127.0.0.1:8002/seed_session"}},
			}))
			require.Equal(t, 2, h.pending())
			h.consume(buildTraces(genericProcs, procOrder, []sdef{
				{id: "model", trace: "m", name: "POST /v1/responses", kind: ptrace.SpanKindServer, proc: "agent", attrs: map[string]any{"http.method": "POST", "http.target": "/v1/responses?stream=false"}},
			}))
			if c.off {
				assert.Zero(t, h.pending(), "the run showed observability off: what it held left in the same call")
				assert.Equal(t, int64(1), h.metricSum(metricSetupProblems, "problem", "observability_off"))
			} else {
				assert.Equal(t, 3, h.pending())
				assert.Zero(t, h.metricSum(metricSetupProblems, "problem", "observability_off"))
			}
		})
	}
}

// (c) A mixed run: some of its rollouts have ids. Evidence after the sign
// ends the pass-through for the spans that arrive after it.
func TestMixedRunEvidenceEndsPassThrough(t *testing.T) {
	cfg := issueTimingConfig()
	h := newHarness(t, cfg)
	off := rolloutSpans("0-0", rolloutOpts{hParent: "job", trace: "job"})
	h.consume(buildTraces(gymProcs, procOrder, []sdef{pick(off, "0-0/rollout")}))
	h.consume(buildTraces(gymProcs, procOrder, []sdef{pick(off, "0-0/send")}))
	require.Zero(t, h.pending(), "observability off: passing through")
	h.sink.Reset()

	on := rolloutSpans("1-0", rolloutOpts{obs: true, hParent: "job", trace: "job"})
	firstEvidence := firstEvidenceEnd(on)
	replay(h, gymProcs, on, 10*time.Millisecond, time.Second+cfg.Settle+cfg.Wait)
	require.Zero(t, h.pending())
	out := h.out()
	require.Len(t, out, len(on))
	for _, s := range out {
		if d := byID(on, s.SpanID); d.end < firstEvidence {
			assert.Empty(t, s.Rollout, "%s arrived before the evidence, in the pass-through", s.Name)
			assert.Equal(t, traceIDOf("job").String(), s.TraceID)
			continue
		}
		assert.Equal(t, "1-0", s.Rollout, s.Name)
		assert.Equal(t, expectedTraceID(runID, "", "1-0"), s.TraceID, s.Name)
	}
}

// firstEvidenceEnd is the end offset of the first span with direct evidence.
func firstEvidenceEnd(spans []sdef) int64 {
	first := int64(-1)
	for _, s := range spans {
		_, attr := s.attrs["nemo.gym.rollout.id"]
		url := false
		for _, k := range []string{"url.path", "http.target", "url.full", "http.url"} {
			if v, ok := s.attrs[k].(string); ok {
				url = strings.Contains(v, "/ng-rollout/")
				break
			}
		}
		if (attr || url) && (first < 0 || s.end < first) {
			first = s.end
		}
	}
	return first
}

func byID(spans []sdef, spanID string) sdef {
	for _, d := range spans {
		if spanIDOf(d.id).String() == spanID {
			return d
		}
	}
	panic("no span " + spanID)
}

// (d) Gym under generic OpenTelemetry instrumentation: no
// nemo.gym.server.type, rollout ids only in URLs, the first evidence after
// wait and settle. Nothing passes through for being quiet: every span of
// the rollout leaves with its id, in the rollout's trace, and the
// diagnostic fires once.
func TestGenericInstrumentationLosesNoRolloutID(t *testing.T) {
	cfg := issueTimingConfig()
	h := newHarness(t, cfg)
	var spans []sdef
	for _, s := range rolloutSpans("0-0", rolloutOpts{obs: true, hParent: "job", trace: "job"}) {
		delete(s.attrs, "nemo.gym.rollout.id") // generic instrumentation: ids only in URLs
		spans = append(spans, s)
	}
	unit := 50 * time.Millisecond
	firstEvidence := time.Duration(firstEvidenceEnd(spans)) * unit
	require.Greater(t, firstEvidence, cfg.Wait+cfg.Settle)
	replay(h, genericProcs, spans, unit, 3200*time.Millisecond+cfg.Wait+cfg.Settle)
	require.Zero(t, h.pending())
	out := h.out()
	require.Len(t, out, len(spans))
	for _, s := range out {
		assert.Equal(t, "0-0", s.Rollout, "%s of %s", s.Name, s.Service)
		assert.Equal(t, expectedTraceID(runID, "", "0-0"), s.TraceID, s.Name)
	}
	assert.Zero(t, h.metricSum(metricSpansPassed))
	assert.Equal(t, int64(1), h.metricSum(metricSetupProblems, "problem", "no_rollout_evidence"))
}

// (d) A sender that is not Gym: no Gym attributes, no evidence ever. It
// loses nothing, nothing passes through unchanged for being quiet, and each
// span leaves at most wait after its parent arrived: a root wait after it
// arrived, its descendants with it, a span whose parent left first at its
// own settle. A span whose parent never arrives leaves at rollout_wait.
func TestSenderThatIsNotGymLosesNothing(t *testing.T) {
	cfg := issueTimingConfig()
	h := newHarness(t, cfg)
	other := map[string]proc{"orchestrator": {service: "checkout", host: "web-1", pid: 7, run: "", scope: "io.opentelemetry.servlet"}}
	mk := func(id, parent string) sdef {
		return sdef{id: id, parent: parent, trace: "t", name: "op " + id, kind: ptrace.SpanKindInternal, proc: "orchestrator", attrs: map[string]any{}}
	}
	send := func(ds ...sdef) { h.consume(buildTraces(other, procOrder, ds)) }
	leftAt := map[string]time.Duration{}
	now := time.Duration(0)
	tick := func(d time.Duration) {
		for step := 10 * time.Millisecond; d > 0; d -= step {
			h.tickAt(step)
			now += step
			for _, s := range h.out() {
				if _, ok := leftAt[s.Name]; !ok {
					leftAt[s.Name] = now
				}
			}
		}
	}
	// Children end, and arrive, before their parents.
	send(mk("db", "handler"), mk("orphan", "never"))
	tick(200 * time.Millisecond)
	send(mk("handler", "root"))
	tick(200 * time.Millisecond)
	send(mk("root", ""))
	tick(cfg.Wait + cfg.Settle)
	send(mk("late", "root")) // after its parent left in no rollout
	tick(2 * cfg.Settle)
	require.Equal(t, 1, h.pending(), "only the span whose parent never arrives still waits")
	assert.Equal(t, 400*time.Millisecond+cfg.Wait, leftAt["op root"], "a root waits wait")
	assert.Equal(t, leftAt["op root"], leftAt["op handler"], "a child leaves with its parent")
	assert.Equal(t, leftAt["op root"], leftAt["op db"])
	assert.Equal(t, 400*time.Millisecond+cfg.Wait+cfg.Settle+cfg.Settle, leftAt["op late"], "a child of a parent that left: at its settle")
	h.tickAt(cfg.RolloutWait)
	require.Zero(t, h.pending())
	out := h.out()
	require.Len(t, out, 5, "nothing lost")
	for _, s := range out {
		assert.Empty(t, s.Rollout)
		assert.NotContains(t, s.Attributes, gymconv.OriginalTraceAttribute)
		assert.Equal(t, traceIDOf("t").String(), s.TraceID)
	}
	assert.Zero(t, h.metricSum(metricSpansPassed))
	assert.Equal(t, int64(1), h.metricSum(metricReleasedUndecided, "reason", "wait"))
	assert.Equal(t, int64(3), h.metricSum(metricReleasedUndecided, "reason", "parent_none"))
	assert.Equal(t, int64(1), h.metricSum(metricReleasedUndecided, "reason", "parent_missing"))
}

// (e) A model server's startup and health-check roots leave wait after they
// arrived, and their ASGI children with them, not at rollout_wait.
func TestModelServerStartupSpansLeaveAfterWait(t *testing.T) {
	cfg := testConfig()
	h := newHarness(t, cfg)
	h.consume(buildTraces(gymProcs, procOrder, []sdef{
		{id: "health-send", parent: "health", trace: "h", name: "GET /health http send", kind: ptrace.SpanKindInternal, proc: "model", attrs: map[string]any{}},
		{id: "startup", trace: "s", name: "vllm.load_model", kind: ptrace.SpanKindInternal, proc: "model", attrs: map[string]any{}},
	}))
	h.tickAt(10 * time.Second)
	h.consume(buildTraces(gymProcs, procOrder, []sdef{
		{id: "health", trace: "h", name: "GET /health", kind: ptrace.SpanKindServer, proc: "model", attrs: map[string]any{"http.method": "GET", "http.target": "/health"}},
	}))
	require.Equal(t, 3, h.pending())
	h.tickAt(cfg.Wait - 10*time.Second)
	assert.Equal(t, 2, h.pending(), "the startup root left at wait; the health check's child waits for its parent")
	h.tickAt(10*time.Second - time.Millisecond)
	assert.Equal(t, 2, h.pending())
	h.tickAt(time.Millisecond)
	assert.Zero(t, h.pending(), "the health check left wait after it arrived, and its child, with nothing to come down to it, at once")
	assert.Len(t, h.out(), 3)
	assert.Equal(t, int64(2), h.metricSum(metricReleasedUndecided, "reason", "wait"))
	assert.Equal(t, int64(1), h.metricSum(metricReleasedUndecided, "reason", "parent_none"))
}

// The no-evidence warning fires only for a run that showed neither evidence
// nor observability off within wait; observability off is logged, once for
// the run, and counted.
func TestDiagnosticsOfWhatARunShowed(t *testing.T) {
	core, logs := observer.New(zap.WarnLevel)
	cfg := issueTimingConfig()
	h := newHarnessWithLogger(t, cfg, zap.New(core))
	spans := rolloutSpans("0-0", rolloutOpts{hParent: "job", trace: "job"})
	for _, s := range spans {
		h.consume(buildTraces(gymProcs, procOrder, []sdef{s}))
	}
	h.tickAt(cfg.Wait)
	h.tickAt(time.Hour)
	off := logs.FilterField(zap.String("problem", "observability_off")).All()
	require.Len(t, off, 1, "logged once: %v", logs.All())
	assert.Equal(t, runID, off[0].ContextMap()["run"])
	assert.Empty(t, logs.FilterField(zap.String("problem", "no_rollout_evidence")).All())
	assert.Equal(t, int64(1), h.metricSum(metricSetupProblems, "problem", "observability_off"))
	assert.Zero(t, h.metricSum(metricSetupProblems, "problem", "no_rollout_evidence"))
}

func newHarnessWithLogger(t *testing.T, cfg *Config, logger *zap.Logger) *harness {
	h := newHarness(t, cfg)
	set := processortest.NewNopSettings(componentType)
	set.TelemetrySettings = h.tel.NewTelemetrySettings()
	set.Logger = logger
	p, err := newGymProcessorWithClock(set, cfg, h.sink, h.clock)
	require.NoError(t, err)
	h.p = p
	t.Cleanup(func() { _ = p.Shutdown(context.Background()) })
	return h
}

func pick(spans []sdef, id string) sdef {
	for _, s := range spans {
		if s.id == id {
			return s
		}
	}
	panic(fmt.Sprintf("no span %q", id))
}

// nemo-gym 0.7.0's environment server takes a rollout's /run from the driver
// and calls the agent's. Its POST /run http receive ends when the rollout
// starts, and learns its rollout when the agent's gym.rollout (and its own
// POST /run above it) arrive at the rollout's end: a real run (issue #17) had
// rollouts longer than wait, and those spans left without their rollout id.
// They wait for their parent, POST /run.
func TestEnvironmentServerSpansWaitForTheirRollout(t *testing.T) {
	cfg := issueTimingConfig()
	procs := map[string]proc{}
	for k, p := range gymProcs {
		procs[k] = p
	}
	procs["orchestrator"] = proc{service: "nemo-gym/legacy_agent", host: "node-1", pid: 4000, run: runID, serverType: "environment_servers", scope: "opentelemetry.instrumentation.fastapi"}
	h := newHarness(t, cfg)
	env := []sdef{
		{id: "env-recv", parent: "env-run", trace: "t", name: "POST /run http receive", kind: ptrace.SpanKindInternal, proc: "orchestrator", attrs: map[string]any{}},
	}
	h.consume(buildTraces(procs, procOrder, env))
	h.tickAt(3 * cfg.Wait)
	require.Equal(t, 1, h.pending(), "a span whose parent has not arrived waits for it, past wait")
	// The rollout ends: the agent's spans, the environment server's HTTP
	// POST to the agent's /run (gymtest's "dispatch", sent here by the
	// environment server) and its POST /run.
	spans := rolloutSpans("0-0", rolloutOpts{obs: true, hParent: "env-run", trace: "t"})
	h.consume(buildTraces(procs, procOrder, append(spans,
		sdef{id: "env-run", trace: "t", name: "POST /run", kind: ptrace.SpanKindServer, proc: "orchestrator", attrs: map[string]any{"http.method": "POST", "http.target": "/run"}},
	)))
	h.tickAt(cfg.Settle)
	h.tickAt(cfg.Wait)
	require.Zero(t, h.pending())
	for _, s := range h.out() {
		assert.Equal(t, "0-0", s.Rollout, "%s of %s", s.Name, s.Service)
	}
}
