// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymcaptureprocessor

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-gym/otelcol-gym/internal/modelcall"
)

var update = flag.Bool("update", false, "rewrite testdata/*/expected.json from the processor's output (inspect the diff by eye)")

// goldenCase is one testdata dir: input.json (OTLP traces, one batch, as
// the gym processor hands them on), before/ (capture files there when the
// batch comes), after/ (lines Gym appends while the spans wait) and
// expected.json (every span that left, by span id).
type goldenCase struct {
	adjust func(*Config)
	// leaveAtOnce: every span leaves with its batch (no line to wait for).
	leaveAtOnce bool
	// waitsForCall: a span joined to its line waits capture_wait for a
	// better span of its call (callspan.go) that never comes.
	waitsForCall bool
	// calls is how many model calls the input has: exactly one span of each
	// carries the GenAI operation; tools how many tool calls.
	calls, tools int
	// lineless: calls whose line never came (no chat span: chatspan.go).
	lineless int
	// joined, missed: model-call spans given their line, and left without.
	joined, missed int64
	lines          map[string]int64 // capture lines by result
	// agentByCalls: generic instrumentation, where the agent is the service
	// seen making model calls, so its POST /run is its rollout's agent span
	// only when it comes after one of them, as spans come in the order they
	// end; the fault-injection test keeps to the plans in that order.
	agentByCalls bool
	// content: capture_message_content is on.
	content bool
}

var goldenCases = map[string]goldenCase{
	// gym.model.* stands for the call; the SERVER and CLIENT spans get its id.
	"capture_before_span": {leaveAtOnce: true, calls: 1, joined: 3, lines: map[string]int64{"kept": 1}},
	// The file exists (empty) when the spans come; the line is appended
	// while they wait.
	"capture_after_span_within_wait": {calls: 1, joined: 3, lines: map[string]int64{"kept": 1}},
	// The rollout's capture file exists (empty) and the line never comes:
	// gym.model.* stands for the call with what is known without it.
	"capture_never":        {calls: 1, lineless: 1, missed: 3},
	"same_model_two_calls": {leaveAtOnce: true, calls: 2, joined: 6, lines: map[string]int64{"kept": 2}},
	// Two attempts: each SERVER and gym.model.* span its own line; the
	// agent's CLIENT span the attempt it covers most (the retry). Each
	// attempt's gym.model.* stands for it.
	"retried_call": {leaveAtOnce: true, calls: 2, joined: 5, lines: map[string]int64{"kept": 2}},
	// Malformed lines and an oversized one (max_line_bytes 8192) are
	// skipped; the call whose line was oversized leaves without one.
	"hostile_capture": {
		adjust: func(c *Config) { c.MaxLineBytes = 8192 },
		calls:  3, lineless: 1, joined: 6, missed: 3, lines: map[string]int64{"kept": 2, "malformed": 3, "oversized": 1},
	},
	// The model server sends no spans: the agent's CLIENT spans are all a
	// call has. Each waits capture_wait (its run's first) for a better span,
	// then stands for its call.
	"caller_side_only": {waitsForCall: true, calls: 2, joined: 2, lines: map[string]int64{"kept": 2}},
	// The model asked for get_weather: the agent's call to that route is
	// execute_tool with the call's id; its verify call is no tool.
	"rollout_with_tool_call": {leaveAtOnce: true, calls: 1, tools: 1, joined: 3, lines: map[string]int64{"kept": 1}},
	// Generic instrumentation (no gym.* spans, no server type): the agent is
	// the service seen making model calls, and its POST /run, INTERNAL as the
	// ASGI instrumentation makes it when a leaked context reached the handler,
	// is the rollout's invoke_agent span.
	"agent_run_context_leaked": {waitsForCall: true, calls: 1, tools: 1, joined: 1, lines: map[string]int64{"kept": 1}, agentByCalls: true},
	// capture_message_content on: the call's messages on the span that
	// stands for it, the task and answer on the agent span (gym.rollout,
	// also the root); the task is cut at max_message_bytes with the marker,
	// the api_key of the tool's arguments removed. Every other case has it
	// off and shows no content.
	"messages_on": {
		adjust:      func(c *Config) { c.CaptureMessageContent, c.MaxMessageBytes = true, 1024 },
		leaveAtOnce: true, calls: 1, tools: 1, joined: 3, lines: map[string]int64{"kept": 1}, content: true,
	},
}

func TestGolden(t *testing.T) {
	for name, gc := range goldenCases {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join("testdata", name)
			h := newHarness(t, gc.adjust)
			copyDir(t, filepath.Join(dir, "before"), h.dir)
			in := readTraces(t, filepath.Join(dir, "input.json"))
			spansIn := in.SpanCount()

			c := h.consume(in)
			if gc.leaveAtOnce {
				require.NoError(t, c.wait())
				assert.Equal(t, spansIn, h.left(), "every span leaves with its batch")
			} else {
				assert.Positive(t, h.waiting(), "model-call spans wait for their lines or their calls")
				assert.Zero(t, h.left(), "and their batch waits with them")
			}
			copyDir(t, filepath.Join(dir, "after"), h.dir)
			h.clock.advance(h.p.cfg.PollInterval)
			h.p.poll(context.Background(), false)
			if gc.missed == 0 && !gc.waitsForCall {
				require.NoError(t, c.wait())
				assert.Equal(t, spansIn, h.left(), "every line came within capture_wait")
			}
			h.clock.advance(h.p.cfg.CaptureWait)
			h.p.poll(context.Background(), false)
			require.NoError(t, c.wait())
			assert.Equal(t, spansIn, h.left(), "every span left by capture_wait")
			require.NoError(t, h.p.Shutdown(context.Background()))
			assert.Equal(t, spansIn, h.left(), "each span left once")

			assert.Equal(t, gc.joined, h.counter(t, metricSpansJoined, "", ""), "joined")
			assert.Equal(t, gc.missed, h.counter(t, metricSpansMissed, "reason", "wait"), "missed")
			for result, n := range gc.lines {
				assert.Equal(t, n, h.counter(t, metricCaptureLines, "result", result), "lines %s", result)
			}
			out := canonical(h.sink.AllTraces())
			onlyNamedAttributes(t, canonical([]ptrace.Traces{readTraces(t, filepath.Join(dir, "input.json"))}), out, gc.content)
			oneSpanPerCall(t, out, gc.calls)
			assert.Len(t, chatSpans(t, []ptrace.Traces{out}), gc.calls-gc.lineless, "a chat span per call joined to its line")
			rolloutInAgentTerms(t, out, gc.tools)
			compareGolden(t, filepath.Join(dir, "expected.json"), out)
		})
	}
}

// namedAttributes are the only attributes the processor adds (design §4.7).
var namedAttributes = map[string]bool{
	"gen_ai.operation.name": true, "gen_ai.request.model": true, "gen_ai.response.model": true,
	"gen_ai.response.id": true, "gen_ai.usage.input_tokens": true, "gen_ai.usage.output_tokens": true,
	"gen_ai.response.finish_reasons": true, "error.type": true,
	"nemo.gym.model_call.id": true, "nemo.gym.model_call.ttft_ms": true, "gen_ai.conversation.id": true, "session.id": true,
	"gen_ai.agent.name": true, "gen_ai.provider.name": true, "gen_ai.tool.name": true, "gen_ai.tool.call.id": true,
	"nemo.gym.model_call.server": true, // on chat spans
}

// rolloutInAgentTerms checks that the rollout's agent span (gym.rollout,
// else the agent's POST /run) is invoke_agent with the agent's name, and that tools spans are execute_tool,
// each with the rollout as the conversation.
func rolloutInAgentTerms(t *testing.T, out ptrace.Traces, tools int) {
	t.Helper()
	agents, toolSpans := 0, 0
	for i := 0; i < out.ResourceSpans().Len(); i++ {
		span := out.ResourceSpans().At(i).ScopeSpans().At(0).Spans().At(0)
		attrs := span.Attributes()
		op, _ := attrs.Get("gen_ai.operation.name")
		rollout, _ := attrs.Get("nemo.gym.rollout.id")
		conv, _ := attrs.Get("gen_ai.conversation.id")
		switch op.Str() {
		case "invoke_agent":
			agents++
			assert.Contains(t, []string{"gym.rollout", "POST /run"}, span.Name(), "the agent span: gym.rollout, else the agent's POST /run")
			name, _ := attrs.Get("gen_ai.agent.name")
			assert.Equal(t, "simple_agent", name.Str())
		case "execute_tool":
			toolSpans++
			name, _ := attrs.Get("gen_ai.tool.name")
			assert.Equal(t, "get_weather", name.Str())
		default:
			continue
		}
		assert.Equal(t, rollout.Str(), conv.Str(), "the conversation is the rollout")
	}
	assert.Equal(t, 1, agents, "invoke_agent spans")
	assert.Equal(t, tools, toolSpans, "execute_tool spans")
}

// oneSpanPerCall checks that calls spans carry the GenAI operation, each of
// another call (model_call.id), with the rollout as the conversation; that
// every other span of a call carries its id alone.
func oneSpanPerCall(t *testing.T, out ptrace.Traces, calls int) {
	t.Helper()
	standing := map[string]int{}
	ids := map[string]bool{}
	n := 0
	for i := 0; i < out.ResourceSpans().Len(); i++ {
		attrs := out.ResourceSpans().At(i).ScopeSpans().At(0).Spans().At(0).Attributes()
		id, _ := attrs.Get("nemo.gym.model_call.id")
		if id.Str() != "" {
			ids[id.Str()] = true
		}
		op, ok := attrs.Get("gen_ai.operation.name")
		if ok && op.Str() != "chat" {
			continue // the rollout's agent and tool spans: rolloutInAgentTerms
		}
		if !ok {
			for k := range attrs.All() {
				assert.False(t, namedAttributes[k] && k != "nemo.gym.model_call.id", "%s on a span that does not stand for its call", k)
			}
			continue
		}
		n++
		assert.Equal(t, "chat", op.Str())
		rollout, _ := attrs.Get("nemo.gym.rollout.id")
		conv, _ := attrs.Get("gen_ai.conversation.id")
		assert.Equal(t, rollout.Str(), conv.Str(), "the conversation is the rollout")
		session, _ := attrs.Get("session.id")
		assert.Equal(t, rollout.Str(), session.Str(), "the session is the rollout")
		if id.Str() != "" {
			standing[id.Str()]++
		}
	}
	assert.Equal(t, calls, n, "spans that carry the GenAI operation: one per model call")
	for id := range ids {
		assert.Equal(t, 1, standing[id], "spans that stand for call %s", id)
	}
}

// contentAttributes are the attributes capture_message_content adds
// (content.go), each within max_message_bytes.
var contentAttributes = map[string]bool{
	"gen_ai.input.messages": true, "gen_ai.output.messages": true, "gen_ai.system_instructions": true,
	"input.value": true, "input.mime_type": true, "output.value": true, "output.mime_type": true,
}

// onlyNamedAttributes checks that out is in with nothing but named
// attributes added (and, when content is on, the content attributes), each
// string within modelcall.MaxString bytes (content within
// max_message_bytes), valid UTF-8, and no body text (the captures' request
// holds "hunter2"; with content on, as a credential, which is removed).
func onlyNamedAttributes(t *testing.T, in, out ptrace.Traces, content bool) {
	t.Helper()
	require.Equal(t, in.SpanCount(), sentSpans([]ptrace.Traces{out}))
	sentIn := map[pcommon.SpanID]ptrace.Span{}
	for i := 0; i < in.ResourceSpans().Len(); i++ {
		s := in.ResourceSpans().At(i).ScopeSpans().At(0).Spans().At(0)
		sentIn[s.SpanID()] = s
	}
	for i := 0; i < out.ResourceSpans().Len(); i++ {
		got := out.ResourceSpans().At(i).ScopeSpans().At(0).Spans().At(0)
		want, ok := sentIn[got.SpanID()]
		if !ok {
			require.True(t, synthesized(got), "span %s: sent in, or a chat span", got.SpanID())
			want = ptrace.NewSpan() // every attribute of a chat span is added
			want.Attributes().PutBool("nemo.gym.synthetic", true)
			rollout, _ := got.Attributes().Get("nemo.gym.rollout.id") // its parent's (chatSpans)
			want.Attributes().PutStr("nemo.gym.rollout.id", rollout.Str())
		}
		got.Attributes().Range(func(k string, v pcommon.Value) bool {
			if w, ok := want.Attributes().Get(k); ok && !namedAttributes[k] {
				assert.Equal(t, w.AsRaw(), v.AsRaw(), "attribute %s changed", k)
				return true
			}
			bound := modelcall.MaxString
			if content && contentAttributes[k] {
				bound = 1024
			} else {
				assert.True(t, namedAttributes[k], "attribute %s added", k)
			}
			s := v.AsString()
			assert.NotContains(t, s, "hunter2")
			assert.True(t, utf8.ValidString(s), "%s is valid UTF-8", k)
			if v.Type() == pcommon.ValueTypeStr {
				assert.LessOrEqual(t, len(s), bound, "%s is bounded", k)
			}
			return true
		})
	}
}

func readTraces(t *testing.T, path string) ptrace.Traces {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(b)
	require.NoError(t, err)
	return td
}

func compareGolden(t *testing.T, path string, got ptrace.Traces) {
	t.Helper()
	b, err := (&ptrace.JSONMarshaler{}).MarshalTraces(got)
	require.NoError(t, err)
	var pretty bytes.Buffer
	require.NoError(t, json.Indent(&pretty, b, "", " "))
	pretty.WriteByte('\n')
	if *update {
		require.NoError(t, os.WriteFile(path, pretty.Bytes(), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run with -update to write it")
	assert.JSONEq(t, string(want), pretty.String())
}
