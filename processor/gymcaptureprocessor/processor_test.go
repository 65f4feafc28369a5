// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymcaptureprocessor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"golang.org/x/sys/unix"
)

// modelSpan is a model server's gym.model.responses span of rollout, from
// start to end seconds after t0.
func modelSpan(rollout string, id byte, start, end float64) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "nemo-gym/policy_model")
	rs.Resource().Attributes().PutStr("nemo.gym.server.type", "responses_api_models")
	s := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	s.SetName("gym.model.responses")
	s.SetSpanID(pcommon.SpanID{7, 7, 7, 7, 7, 7, 7, id})
	s.SetStartTimestamp(pcommon.Timestamp(t0Nanos + int64(start*1e9)))
	s.SetEndTimestamp(pcommon.Timestamp(t0Nanos + int64(end*1e9)))
	s.Attributes().PutStr("nemo.gym.rollout.id", rollout)
	return td
}

const t0Nanos = int64(1_788_000_000) * 1e9

func captureJSON(start, end float64, inTokens int) string {
	return fmt.Sprintf(`{"model_call_id":"mc","dialect":"chat","model_ref":{"name":"policy_model"},"started_at":%f,"completed_at":%f,"status_code":200,"response":{"id":"r","model":"m","usage":{"prompt_tokens":%d,"completion_tokens":2},"choices":[{"finish_reason":"stop"}]}}`,
		float64(t0Nanos)/1e9+start, float64(t0Nanos)/1e9+end, inTokens)
}

func inputTokens(t *testing.T, td ptrace.Traces) (int64, bool) {
	t.Helper()
	for _, span := range td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().All() {
		if v, ok := span.Attributes().Get("gen_ai.usage.input_tokens"); ok {
			require.True(t, synthesized(span), "the tokens are on the call's chat span")
			return v.Int(), ok
		}
	}
	return 0, false
}

// A line Gym has written half of when the span comes is read again only
// from where the last read stopped, and joins once it is whole.
func TestTailReadsByOffset(t *testing.T) {
	h := newHarness(t, nil)
	line := captureJSON(0.1, 0.9, 11)
	path := filepath.Join(h.dir, "0-0.capture.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(line[:40]), 0o640))
	c := h.consume(modelSpan("0-0", 1, 0, 1))
	assert.Equal(t, 1, h.waiting())
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(line[40:] + "\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	h.p.poll(context.Background(), false)
	require.NoError(t, c.wait())
	require.Equal(t, 1, h.left())
	n, ok := inputTokens(t, h.sink.AllTraces()[0])
	assert.True(t, ok)
	assert.Equal(t, int64(11), n)
	r := h.p.rollouts["0-0"]
	st, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, st.Size(), r.tail.offset)
	assert.Empty(t, r.tail.partial)
}

// A capture file that is a symlink or a FIFO is never read; its spans leave
// at capture_wait without a line, and the refusal is counted.
func TestCaptureFileNotFollowed(t *testing.T) {
	h := newHarness(t, nil)
	outside := filepath.Join(t.TempDir(), "elsewhere.jsonl")
	require.NoError(t, os.WriteFile(outside, []byte(captureJSON(0.1, 0.9, 5)+"\n"), 0o640))
	require.NoError(t, os.Symlink(outside, filepath.Join(h.dir, "0-0.capture.jsonl")))
	require.NoError(t, unix.Mkfifo(filepath.Join(h.dir, "1-0.capture.jsonl"), 0o640))
	c0 := h.consume(modelSpan("0-0", 1, 0, 1))
	c1 := h.consume(modelSpan("1-0", 2, 0, 1))
	h.clock.advance(time.Second)
	h.p.poll(context.Background(), false)
	require.NoError(t, c0.wait())
	require.NoError(t, c1.wait())
	require.Equal(t, 2, h.left())
	for _, td := range h.sink.AllTraces() {
		_, ok := inputTokens(t, td)
		assert.False(t, ok)
	}
	assert.Equal(t, int64(2), h.counter(t, metricSpansMissed, "reason", "wait"))
	assert.GreaterOrEqual(t, h.counter(t, metricCaptureErrors, "", ""), int64(2))
}

// A rollout id that may not name a file is never looked up: the span leaves
// with its batch, counted.
func TestUnsafeRolloutPassesAtOnce(t *testing.T) {
	h := newHarness(t, nil)
	for i, id := range []string{"../0-0", "a/b", ""} {
		require.NoError(t, h.p.ConsumeTraces(context.Background(), modelSpan(id, byte(i), 0, 1)))
	}
	assert.Equal(t, 3, h.left())
	assert.Equal(t, int64(3), h.counter(t, metricSpansMissed, "reason", "no_rollout"))
	assert.Empty(t, h.p.rollouts)
}

// At max_waiting_spans the span nearest its deadline leaves without its
// line; the others keep waiting.
func TestWaitingBound(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxWaitingSpans = 2 })
	for i := range 3 {
		require.NoError(t, os.WriteFile(filepath.Join(h.dir, fmt.Sprintf("%d-0.capture.jsonl", i)), nil, 0o640))
	}
	calls := make([]*pendingCall, 3)
	for i := range 3 {
		calls[i] = h.consume(modelSpan(fmt.Sprintf("%d-0", i), byte(i), 0, 1))
		h.clock.advance(time.Millisecond)
	}
	require.NoError(t, calls[0].wait())
	require.Equal(t, 1, h.left())
	assert.Equal(t, byte(0), h.sink.AllTraces()[0].ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).SpanID()[7])
	assert.Equal(t, int64(1), h.counter(t, metricSpansMissed, "reason", "bound"))
	assert.Equal(t, 2, h.waiting())
	require.NoError(t, h.p.Shutdown(context.Background()))
	require.NoError(t, calls[1].wait())
	require.NoError(t, calls[2].wait())
	assert.Equal(t, 3, h.left())
	assert.Equal(t, int64(2), h.counter(t, metricSpansMissed, "reason", "shutdown"))
}

// A span already joined (an earlier gymcapture, a replay) passes unchanged.
func TestJoinedSpanPasses(t *testing.T) {
	h := newHarness(t, nil)
	td := modelSpan("0-0", 1, 0, 1)
	td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).Attributes().PutStr("nemo.gym.model_call.id", "x")
	want := ptrace.NewTraces()
	td.CopyTo(want)
	require.NoError(t, h.p.ConsumeTraces(context.Background(), td))
	require.Equal(t, 1, h.left())
	assert.Equal(t, want, h.sink.AllTraces()[0])
}

// Past max_rollouts the least recently used rollout with nothing waiting is
// forgotten; one with a waiting span is kept.
func TestRolloutBound(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxRollouts = 2 })
	require.NoError(t, os.WriteFile(filepath.Join(h.dir, "0-0.capture.jsonl"), []byte(captureJSON(0.1, 0.9, 1)+"\n"), 0o640))
	for _, id := range []string{"1-0", "2-0"} {
		require.NoError(t, os.WriteFile(filepath.Join(h.dir, id+".capture.jsonl"), nil, 0o640))
	}
	require.NoError(t, h.p.ConsumeTraces(context.Background(), modelSpan("0-0", 0, 0, 1))) // joined at once
	c1 := h.consume(modelSpan("1-0", 1, 0, 1))                                             // waits
	c2 := h.consume(modelSpan("2-0", 2, 0, 1))                                             // waits
	assert.Len(t, h.p.rollouts, 2)
	assert.NotContains(t, h.p.rollouts, "0-0")
	require.NoError(t, h.p.Shutdown(context.Background()))
	require.NoError(t, c1.wait())
	require.NoError(t, c2.wait())
	assert.Equal(t, 3, h.left())
}

// A capture file replaced under its name is read from its start, and the
// old file's lines are forgotten.
func TestReplacedCaptureFile(t *testing.T) {
	h := newHarness(t, nil)
	path := filepath.Join(h.dir, "0-0.capture.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(captureJSON(5, 6, 1)+"\n"+captureJSON(7, 8, 2)+"\n"), 0o640))
	require.NoError(t, h.p.ConsumeTraces(context.Background(), modelSpan("0-0", 1, 5, 6)))
	require.Len(t, h.p.rollouts["0-0"].lines, 2)
	require.NoError(t, os.Remove(path))
	require.NoError(t, os.WriteFile(path, []byte(captureJSON(0.1, 0.9, 9)+"\n"), 0o640))
	require.NoError(t, h.p.ConsumeTraces(context.Background(), modelSpan("0-0", 2, 0, 1)))
	require.Equal(t, 2, h.left())
	n, ok := inputTokens(t, h.sink.AllTraces()[1])
	assert.True(t, ok)
	assert.Equal(t, int64(9), n)
	assert.Len(t, h.p.rollouts["0-0"].lines, 1)
}

// A rollout with no capture file has nothing to wait for: its model-call
// spans leave with their batch, counted (Gym captures nothing for it here).
func TestNoCaptureFileLeavesAtOnce(t *testing.T) {
	h := newHarness(t, nil)
	require.NoError(t, h.p.ConsumeTraces(context.Background(), modelSpan("0-0", 1, 0, 1)))
	assert.Equal(t, 1, h.left())
	assert.Equal(t, int64(1), h.counter(t, metricSpansMissed, "reason", "no_capture_file"))
	assert.Zero(t, h.p.queue.Len())
}
