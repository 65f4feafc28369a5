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
	// joined, missed: model-call spans given their line, and left without.
	joined, missed int64
	lines          map[string]int64 // capture lines by result
}

var goldenCases = map[string]goldenCase{
	"capture_before_span": {leaveAtOnce: true, joined: 3, lines: map[string]int64{"kept": 1}},
	// The file exists (empty) when the spans come; the line is appended
	// while they wait.
	"capture_after_span_within_wait": {joined: 3, lines: map[string]int64{"kept": 1}},
	// The rollout's capture file exists (empty) and the line never comes.
	"capture_never":        {missed: 3},
	"same_model_two_calls": {leaveAtOnce: true, joined: 6, lines: map[string]int64{"kept": 2}},
	// Two attempts: each SERVER and gym.model.* span its own line; the
	// agent's CLIENT span the attempt it covers most (the retry).
	"retried_call": {leaveAtOnce: true, joined: 5, lines: map[string]int64{"kept": 2}},
	// Malformed lines and an oversized one (max_line_bytes 8192) are
	// skipped; the call whose line was oversized leaves without one.
	"hostile_capture": {
		adjust: func(c *Config) { c.MaxLineBytes = 8192 },
		joined: 6, missed: 3, lines: map[string]int64{"kept": 2, "malformed": 3, "oversized": 1},
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
				assert.Equal(t, spansIn, h.sink.SpanCount(), "every span leaves with its batch")
			} else {
				assert.Positive(t, h.waiting(), "model-call spans wait for their lines")
				assert.Zero(t, h.sink.SpanCount(), "and their batch waits with them")
			}
			copyDir(t, filepath.Join(dir, "after"), h.dir)
			h.clock.advance(h.p.cfg.PollInterval)
			h.p.poll(context.Background(), false)
			if gc.missed == 0 {
				require.NoError(t, c.wait())
				assert.Equal(t, spansIn, h.sink.SpanCount(), "every line came within capture_wait")
			}
			h.clock.advance(h.p.cfg.CaptureWait)
			h.p.poll(context.Background(), false)
			require.NoError(t, c.wait())
			assert.Equal(t, spansIn, h.sink.SpanCount(), "every span left by capture_wait")
			require.NoError(t, h.p.Shutdown(context.Background()))
			assert.Equal(t, spansIn, h.sink.SpanCount(), "each span left once")

			assert.Equal(t, gc.joined, h.counter(t, metricSpansJoined, "", ""), "joined")
			assert.Equal(t, gc.missed, h.counter(t, metricSpansMissed, "reason", "wait"), "missed")
			for result, n := range gc.lines {
				assert.Equal(t, n, h.counter(t, metricCaptureLines, "result", result), "lines %s", result)
			}
			out := canonical(h.sink.AllTraces())
			onlyNamedAttributes(t, canonical([]ptrace.Traces{readTraces(t, filepath.Join(dir, "input.json"))}), out)
			compareGolden(t, filepath.Join(dir, "expected.json"), out)
		})
	}
}

// namedAttributes are the only attributes the processor adds (design §4.7).
var namedAttributes = map[string]bool{
	"gen_ai.operation.name": true, "gen_ai.request.model": true, "gen_ai.response.model": true,
	"gen_ai.response.id": true, "gen_ai.usage.input_tokens": true, "gen_ai.usage.output_tokens": true,
	"gen_ai.response.finish_reasons": true, "error.type": true,
	"nemo.gym.model_call.id": true, "nemo.gym.model_call.ttft_ms": true,
}

// onlyNamedAttributes checks that out is in with nothing but named
// attributes added, each string within modelcall.MaxString bytes, valid
// UTF-8, and no body text (the captures' request holds "hunter2").
func onlyNamedAttributes(t *testing.T, in, out ptrace.Traces) {
	t.Helper()
	require.Equal(t, in.SpanCount(), out.SpanCount())
	for i := 0; i < out.ResourceSpans().Len(); i++ {
		want := in.ResourceSpans().At(i).ScopeSpans().At(0).Spans().At(0)
		got := out.ResourceSpans().At(i).ScopeSpans().At(0).Spans().At(0)
		require.Equal(t, want.SpanID(), got.SpanID())
		got.Attributes().Range(func(k string, v pcommon.Value) bool {
			if w, ok := want.Attributes().Get(k); ok && !namedAttributes[k] {
				assert.Equal(t, w.AsRaw(), v.AsRaw(), "attribute %s changed", k)
				return true
			}
			assert.True(t, namedAttributes[k], "attribute %s added", k)
			s := v.AsString()
			assert.NotContains(t, s, "hunter2")
			assert.True(t, utf8.ValidString(s), "%s is valid UTF-8", k)
			if v.Type() == pcommon.ValueTypeStr {
				assert.LessOrEqual(t, len(s), modelcall.MaxString, "%s is bounded", k)
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
