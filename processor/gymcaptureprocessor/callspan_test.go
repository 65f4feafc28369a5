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
// kind, ending at end, as Gym's processes send it: the agent's CLIENT span
// widest (1 ms), the model server's SERVER span inside it, gym.model.*
// inside that, the call to the LLM innermost.
func callPart(kind modelcall.Kind, call int, end time.Time) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	res := rs.Resource().Attributes()
	res.PutStr("nemo.run.id", "run1")
	s := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	s.SetSpanID(pcommon.SpanID{byte(kind), 0, 0, 0, 0, 0, byte(call >> 8), byte(call)})
	inset := time.Duration(map[modelcall.Kind]int{modelcall.Client: 0, modelcall.Server: 1, modelcall.Managed: 2, modelcall.Upstream: 3}[kind]) * 100 * time.Microsecond
	s.SetStartTimestamp(pcommon.NewTimestampFromTime(end.Add(-time.Millisecond + inset)))
	s.SetEndTimestamp(pcommon.NewTimestampFromTime(end.Add(-inset)))
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

// callLines are the capture lines of calls ending at ends, inside every one
// of their spans.
func callLines(ends []time.Time) string {
	var b strings.Builder
	for i, end := range ends {
		sec := func(d time.Duration) float64 { return float64(end.Add(d).UnixMicro()) / 1e6 }
		fmt.Fprintf(&b, `{"model_call_id":"mc%d","dialect":"responses","started_at":%.6f,"completed_at":%.6f,"status_code":200,"response":{"id":"r%d","model":"m","usage":{"input_tokens":%d,"output_tokens":1}}}`+"\n",
			i, sec(-600*time.Microsecond), sec(-400*time.Microsecond), i, 10+i)
	}
	return b.String()
}

// callEnds are the ends of n calls, every spacing after start.
func callEnds(start time.Time, n int, spacing time.Duration) []time.Time {
	ends := make([]time.Time, n)
	for i := range ends {
		ends[i] = start.Add(time.Duration(i) * spacing)
	}
	return ends
}

// standing is, per model_call.id, the kinds of the spans that carry it and
// of those that stand for it (their chat span carries the GenAI
// operation); and the spans that left.
type standing struct {
	parts, stood map[string][]modelcall.Kind
	left         map[pcommon.SpanID]int
}

func standingOf(t *testing.T, tds []ptrace.Traces) standing {
	chatSpans(t, tds)
	st := standing{parts: map[string][]modelcall.Kind{}, stood: map[string][]modelcall.Kind{}, left: map[pcommon.SpanID]int{}}
	for _, td := range tds {
		for _, rs := range td.ResourceSpans().All() {
			for _, s := range rs.ScopeSpans().At(0).Spans().All() {
				id, _ := s.Attributes().Get("nemo.gym.model_call.id")
				if synthesized(s) {
					if _, ok := s.Attributes().Get("gen_ai.operation.name"); ok {
						k := modelcall.Kind(s.ParentSpanID()[0]) // the kind of the span it stands below
						st.stood[id.Str()] = append(st.stood[id.Str()], k)
					}
					continue
				}
				st.left[s.SpanID()]++
				k := modelcall.Kind(s.SpanID()[0])
				st.parts[id.Str()] = append(st.parts[id.Str()], k)
				_, ok := s.Attributes().Get("gen_ai.operation.name")
				assert.False(t, ok, "span %s: the call's attributes are its chat span's", s.SpanID())
			}
		}
	}
	return st
}

// The spans of one model call come in separate batches, in any order, some
// after the first one's capture_wait or after their own: each leaves once,
// every one carries the call's id, and exactly one carries the GenAI
// operation, whatever the kinds the run has, the order and the delays.
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
		ends := callEnds(h.clock.Now(), calls, 2*time.Millisecond)
		require.NoError(t, os.WriteFile(filepath.Join(h.dir, "0-0.capture.jsonl"), []byte(callLines(ends)), 0o640))
		var parts []ptrace.Traces
		for c := range calls {
			for _, k := range kinds {
				parts = append(parts, callPart(k, c, ends[c]))
			}
		}
		rng.Shuffle(len(parts), func(i, j int) { parts[i], parts[j] = parts[j], parts[i] })
		var pending []*pendingCall
		for len(parts) > 0 {
			n := 1 + rng.IntN(len(parts))
			batch := ptrace.NewTraces()
			for _, p := range parts[:n] {
				p.ResourceSpans().MoveAndAppendTo(batch.ResourceSpans())
			}
			parts = parts[n:]
			pending = append(pending, h.consume(batch))
			h.clock.advance(time.Duration(rng.IntN(1500)) * time.Millisecond)
			h.p.poll(context.Background(), false)
		}
		h.clock.advance(h.p.cfg.CaptureWait)
		h.p.poll(context.Background(), false)
		for _, c := range pending {
			require.NoError(t, c.wait())
		}
		require.Equal(t, calls*len(kinds), h.left(), "seed %d: every span left by capture_wait", seed)
		st := standingOf(t, h.sink.AllTraces())
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
// comes after leaves at once; one whose SERVER span does not come within
// capture_wait stands itself, and the SERVER span that comes later leaves
// with the id alone.
func TestBestSpanStandsAcrossBatches(t *testing.T) {
	h := newHarness(t, nil)
	ends := callEnds(h.clock.Now(), 4, 10*time.Second)
	require.NoError(t, os.WriteFile(filepath.Join(h.dir, "0-0.capture.jsonl"), []byte(callLines(ends)), 0o640))
	consume := func(k modelcall.Kind, call int) *pendingCall { return h.consume(callPart(k, call, ends[call])) }

	// Call 0 teaches the run its kinds: in the run's first batch the CLIENT
	// span waits for a better one, which comes in the next.
	client := consume(modelcall.Client, 0)
	assert.Zero(t, h.left(), "the run's first CLIENT span waits for a better one")
	h.clock.advance(300 * time.Millisecond)
	require.NoError(t, consume(modelcall.Server, 0).wait())
	require.NoError(t, client.wait())
	assert.Equal(t, 2, h.left(), "the SERVER span stands, the CLIENT span leaves with the id")

	h.clock.set(ends[1])
	require.NoError(t, consume(modelcall.Server, 1).wait())
	require.NoError(t, consume(modelcall.Client, 1).wait())
	assert.Equal(t, 4, h.left(), "a CLIENT span after its SERVER span leaves at once")

	h.clock.set(ends[2])
	client = consume(modelcall.Client, 2)
	assert.Equal(t, 4, h.left(), "a CLIENT span before its SERVER span waits")
	h.clock.advance(500 * time.Millisecond)
	h.p.poll(context.Background(), false)
	require.NoError(t, consume(modelcall.Server, 2).wait())
	require.NoError(t, client.wait())
	assert.Equal(t, 6, h.left())

	h.clock.set(ends[3])
	client = consume(modelcall.Client, 3)
	h.clock.advance(h.p.cfg.CaptureWait)
	h.p.poll(context.Background(), false)
	require.NoError(t, client.wait())
	assert.Equal(t, 7, h.left(), "a CLIENT span whose SERVER span does not come leaves at capture_wait")
	require.NoError(t, consume(modelcall.Server, 3).wait()) // too late: the call is stood for
	st := standingOf(t, h.sink.AllTraces())
	assert.Equal(t, map[string][]modelcall.Kind{
		"mc0": {modelcall.Server}, "mc1": {modelcall.Server}, "mc2": {modelcall.Server}, "mc3": {modelcall.Client},
	}, st.stood)
	assert.Len(t, st.parts["mc3"], 2)
}

// A run's first batch holds a model server's spans in the order they ended,
// the call to the LLM first: it does not stand for its call, gym.model.*
// does, and every span leaves with the batch.
func TestFirstBatchInEndOrder(t *testing.T) {
	h := newHarness(t, nil)
	ends := callEnds(h.clock.Now(), 2, 2*time.Millisecond)
	require.NoError(t, os.WriteFile(filepath.Join(h.dir, "0-0.capture.jsonl"), []byte(callLines(ends)), 0o640))
	batch := ptrace.NewTraces()
	for c := range 2 {
		for _, k := range []modelcall.Kind{modelcall.Upstream, modelcall.Managed, modelcall.Server} {
			callPart(k, c, ends[c]).ResourceSpans().MoveAndAppendTo(batch.ResourceSpans())
		}
	}
	require.NoError(t, h.consume(batch).wait())
	require.Equal(t, 6, h.left(), "every span leaves with its batch")
	assert.Equal(t, map[string][]modelcall.Kind{"mc0": {modelcall.Managed}, "mc1": {modelcall.Managed}}, standingOf(t, h.sink.AllTraces()).stood)
}

// gen_ai.provider.name is known from where a model server's calls to its
// LLM go: the span that stands for a call of that model server carries it,
// and so does a caller's CLIENT span that stands for a call to it.
func TestProviderFromUpstream(t *testing.T) {
	h := newHarness(t, nil)
	ends := callEnds(h.clock.Now(), 2, 10*time.Second)
	require.NoError(t, os.WriteFile(filepath.Join(h.dir, "0-0.capture.jsonl"), []byte(callLines(ends)), 0o640))
	upstream := callPart(modelcall.Upstream, 0, ends[0])
	upstream.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).Attributes().PutStr("url.full", "https://api.openai.com/v1/responses")
	batch := ptrace.NewTraces()
	for _, td := range []ptrace.Traces{upstream, callPart(modelcall.Managed, 0, ends[0])} {
		td.ResourceSpans().MoveAndAppendTo(batch.ResourceSpans())
	}
	require.NoError(t, h.consume(batch).wait())
	h.clock.set(ends[1])
	client := h.consume(callPart(modelcall.Client, 1, ends[1]))
	h.clock.advance(h.p.cfg.CaptureWait)
	h.p.poll(context.Background(), false)
	require.NoError(t, client.wait())
	require.Equal(t, 3, h.left())
	providers := map[string]string{}
	for _, td := range h.sink.AllTraces() {
		for _, rs := range td.ResourceSpans().All() {
			for _, s := range rs.ScopeSpans().At(0).Spans().All() {
				if v, ok := s.Attributes().Get("gen_ai.provider.name"); ok {
					id, _ := s.Attributes().Get("nemo.gym.model_call.id")
					providers[id.Str()] = v.Str()
				}
			}
		}
	}
	assert.Equal(t, map[string]string{"mc0": "openai", "mc1": "openai"}, providers)
}
