// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymcaptureprocessor

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-gym/otelcol-gym/internal/modelcall"
)

// callPart is one span of model call call (0-based) of rollout 0-0, of kind
// kind, as Gym's processes send it: the agent's CLIENT span widest, the
// model server's SERVER span inside it, gym.model.* inside that, the call to
// the LLM innermost.
func callPart(kind modelcall.Kind, call int) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	res := rs.Resource().Attributes()
	res.PutStr("nemo.run.id", "run1")
	s := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	s.SetSpanID(pcommon.SpanID{byte(kind), 0, 0, 0, 0, 0, byte(call >> 8), byte(call)})
	base := float64(call) * 10
	inset := map[modelcall.Kind]float64{modelcall.Client: 0, modelcall.Server: 0.01, modelcall.Managed: 0.02, modelcall.Upstream: 0.03}[kind]
	s.SetStartTimestamp(pcommon.Timestamp(t0Nanos + int64((base+inset)*1e9)))
	s.SetEndTimestamp(pcommon.Timestamp(t0Nanos + int64((base+1-inset)*1e9)))
	s.Attributes().PutStr("nemo.gym.rollout.id", "0-0")
	as := map[modelcall.Kind]struct {
		service, serverType, name string
		kind                      ptrace.SpanKind
		key, value                string
	}{
		modelcall.Client:   {"nemo-gym/simple_agent", "responses_api_agents", "HTTP POST", ptrace.SpanKindClient, "url.full", "http://127.0.0.1:9001/ng-rollout/0-0/v1/responses"},
		modelcall.Server:   {"nemo-gym/policy_model", "responses_api_models", "POST", ptrace.SpanKindServer, "url.path", "/ng-rollout/0-0/v1/responses"},
		modelcall.Managed:  {"nemo-gym/policy_model", "responses_api_models", "gym.model.responses", ptrace.SpanKindInternal, "", ""},
		modelcall.Upstream: {"nemo-gym/policy_model", "responses_api_models", "HTTP POST", ptrace.SpanKindClient, "url.full", "http://127.0.0.1:8000/v1/responses"},
	}[kind]
	res.PutStr("service.name", as.service)
	res.PutStr("nemo.gym.server.type", as.serverType)
	s.SetName(as.name)
	s.SetKind(as.kind)
	if as.key != "" {
		s.Attributes().PutStr(as.key, as.value)
	}
	if kind == modelcall.Client {
		s.Attributes().PutStr("peer.service", "nemo-gym/policy_model")
	}
	return td
}

// callLines are the capture lines of calls calls of rollout 0-0.
func callLines(calls int) string {
	var b strings.Builder
	for i := range calls {
		base := float64(t0Nanos)/1e9 + float64(i)*10
		fmt.Fprintf(&b, `{"model_call_id":"mc%d","dialect":"responses","started_at":%f,"completed_at":%f,"status_code":200,"response":{"id":"r%d","model":"m","usage":{"input_tokens":%d,"output_tokens":1}}}`+"\n",
			i, base+0.04, base+0.96, i, 10+i)
	}
	return b.String()
}

// standing is, per model_call.id, the kinds of the spans that carry it and
// of those that carry the GenAI operation; and the spans that left.
type standing struct {
	parts, stood map[string][]modelcall.Kind
	left         map[pcommon.SpanID]int
}

func standingOf(tds []ptrace.Traces) standing {
	st := standing{parts: map[string][]modelcall.Kind{}, stood: map[string][]modelcall.Kind{}, left: map[pcommon.SpanID]int{}}
	for _, td := range tds {
		for i := 0; i < td.ResourceSpans().Len(); i++ {
			spans := td.ResourceSpans().At(i).ScopeSpans().At(0).Spans()
			for j := 0; j < spans.Len(); j++ {
				s := spans.At(j)
				st.left[s.SpanID()]++
				id, _ := s.Attributes().Get("nemo.gym.model_call.id")
				k := modelcall.Kind(s.SpanID()[0])
				st.parts[id.Str()] = append(st.parts[id.Str()], k)
				if _, ok := s.Attributes().Get("gen_ai.operation.name"); ok {
					st.stood[id.Str()] = append(st.stood[id.Str()], k)
				}
			}
		}
	}
	return st
}

// The spans of one model call come in separate batches, in any order, some
// after the first one's capture_wait: each leaves once, every one carries
// the call's id, and exactly one carries the GenAI operation, whatever the
// kinds the run has, the order and the delays.
func TestOneSpanStandsForEachCall(t *testing.T) {
	allKinds := []modelcall.Kind{modelcall.Upstream, modelcall.Client, modelcall.Server, modelcall.Managed}
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 36))
		var kinds []modelcall.Kind
		for _, k := range allKinds {
			if rng.IntN(3) > 0 {
				kinds = append(kinds, k)
			}
		}
		if len(kinds) == 0 {
			kinds = []modelcall.Kind{modelcall.Client}
		}
		calls := 1 + rng.IntN(6)
		h := newHarness(t, nil)
		require.NoError(t, os.WriteFile(filepath.Join(h.dir, "0-0.capture.jsonl"), []byte(callLines(calls)), 0o640))
		var parts []ptrace.Traces
		for c := range calls {
			for _, k := range kinds {
				parts = append(parts, callPart(k, c))
			}
		}
		rng.Shuffle(len(parts), func(i, j int) { parts[i], parts[j] = parts[j], parts[i] })
		for len(parts) > 0 {
			n := 1 + rng.IntN(len(parts))
			batch := ptrace.NewTraces()
			for _, p := range parts[:n] {
				p.ResourceSpans().MoveAndAppendTo(batch.ResourceSpans())
			}
			parts = parts[n:]
			require.NoError(t, h.p.ConsumeTraces(context.Background(), batch))
			h.clock.advance(time.Duration(rng.IntN(1500)) * time.Millisecond)
			h.p.poll(context.Background(), false)
		}
		h.clock.advance(h.p.cfg.CaptureWait)
		h.p.poll(context.Background(), false)
		require.Equal(t, calls*len(kinds), h.sink.SpanCount(), "seed %d: every span left by capture_wait", seed)
		st := standingOf(h.sink.AllTraces())
		for id, n := range st.left {
			assert.Equal(t, 1, n, "seed %d: span %s left once", seed, id)
		}
		assert.NotContains(t, st.parts, "", "seed %d: every span carries its call's id", seed)
		for c := range calls {
			id := fmt.Sprintf("mc%d", c)
			assert.Len(t, st.parts[id], len(kinds), "seed %d: spans of %s", seed, id)
			assert.Len(t, st.stood[id], 1, "seed %d: spans that stand for %s (kinds %v)", seed, id, kinds)
		}
	}
}

// Once a run has shown its kinds, the best span of a call stands for it
// whichever comes first: a CLIENT span that comes before its call's SERVER
// span waits for it (and leaves with the id alone when it comes); one that
// comes after leaves at once; one whose SERVER span never comes stands
// itself at capture_wait.
func TestBestSpanStandsAcrossBatches(t *testing.T) {
	h := newHarness(t, nil)
	require.NoError(t, os.WriteFile(filepath.Join(h.dir, "0-0.capture.jsonl"), []byte(callLines(4)), 0o640))
	consume := func(k modelcall.Kind, call int) {
		require.NoError(t, h.p.ConsumeTraces(context.Background(), callPart(k, call)))
	}
	// Call 0 teaches the run its kinds: in the run's first batch the CLIENT
	// span waits for a better one, which comes in the next.
	consume(modelcall.Client, 0)
	assert.Zero(t, h.sink.SpanCount(), "the run's first CLIENT span waits for a better one")
	h.clock.advance(300 * time.Millisecond)
	consume(modelcall.Server, 0)
	assert.Equal(t, 2, h.sink.SpanCount(), "the SERVER span stands, the CLIENT span leaves with the id")
	h.clock.advance(time.Second)

	consume(modelcall.Server, 1)
	consume(modelcall.Client, 1)
	assert.Equal(t, 4, h.sink.SpanCount(), "a CLIENT span after its SERVER span leaves at once")

	consume(modelcall.Client, 2)
	assert.Equal(t, 4, h.sink.SpanCount(), "a CLIENT span before its SERVER span waits")
	h.clock.advance(500 * time.Millisecond)
	h.p.poll(context.Background(), false)
	consume(modelcall.Server, 2)
	assert.Equal(t, 6, h.sink.SpanCount())

	consume(modelcall.Client, 3)
	h.clock.advance(h.p.cfg.CaptureWait)
	h.p.poll(context.Background(), false)
	assert.Equal(t, 7, h.sink.SpanCount(), "a CLIENT span whose SERVER span does not come leaves at capture_wait")
	consume(modelcall.Server, 3) // too late: the call is stood for
	st := standingOf(h.sink.AllTraces())
	assert.Equal(t, map[string][]modelcall.Kind{
		"mc0": {modelcall.Server}, "mc1": {modelcall.Server}, "mc2": {modelcall.Server}, "mc3": {modelcall.Client},
	}, st.stood)
}

// A run's first batch holds a model server's spans in the order they ended,
// the call to the LLM first: it does not stand for its call, gym.model.*
// does, and every span leaves with the batch.
func TestFirstBatchInEndOrder(t *testing.T) {
	h := newHarness(t, nil)
	require.NoError(t, os.WriteFile(filepath.Join(h.dir, "0-0.capture.jsonl"), []byte(callLines(2)), 0o640))
	batch := ptrace.NewTraces()
	for c := range 2 {
		for _, k := range []modelcall.Kind{modelcall.Upstream, modelcall.Managed, modelcall.Server} {
			callPart(k, c).ResourceSpans().MoveAndAppendTo(batch.ResourceSpans())
		}
	}
	require.NoError(t, h.p.ConsumeTraces(context.Background(), batch))
	require.Equal(t, 6, h.sink.SpanCount(), "every span leaves with its batch")
	assert.Equal(t, map[string][]modelcall.Kind{"mc0": {modelcall.Managed}, "mc1": {modelcall.Managed}}, standingOf(h.sink.AllTraces()).stood)
}

// gen_ai.provider.name is known from where a model server's calls to its
// LLM go: the span that stands for a call of that model server carries it,
// and so does a caller's CLIENT span that stands for a call to it.
func TestProviderFromUpstream(t *testing.T) {
	h := newHarness(t, nil)
	require.NoError(t, os.WriteFile(filepath.Join(h.dir, "0-0.capture.jsonl"), []byte(callLines(2)), 0o640))
	upstream := callPart(modelcall.Upstream, 0)
	upstream.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).Attributes().PutStr("url.full", "https://api.openai.com/v1/responses")
	batch := ptrace.NewTraces()
	for _, td := range []ptrace.Traces{upstream, callPart(modelcall.Managed, 0)} {
		td.ResourceSpans().MoveAndAppendTo(batch.ResourceSpans())
	}
	require.NoError(t, h.p.ConsumeTraces(context.Background(), batch))
	h.clock.advance(2 * time.Second)
	require.NoError(t, h.p.ConsumeTraces(context.Background(), callPart(modelcall.Client, 1)))
	h.clock.advance(h.p.cfg.CaptureWait)
	h.p.poll(context.Background(), false)
	require.Equal(t, 3, h.sink.SpanCount())
	providers := map[string]string{}
	for _, td := range h.sink.AllTraces() {
		for i := 0; i < td.ResourceSpans().Len(); i++ {
			s := td.ResourceSpans().At(i).ScopeSpans().At(0).Spans().At(0)
			if v, ok := s.Attributes().Get("gen_ai.provider.name"); ok {
				id, _ := s.Attributes().Get("nemo.gym.model_call.id")
				providers[id.Str()] = v.Str()
			}
		}
	}
	assert.Equal(t, map[string]string{"mc0": "openai", "mc1": "openai"}, providers)
}
