// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymcaptureprocessor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-gym/otelcol-gym/internal/gymtest"
)

// Fault injection over the golden cases: the batches of each arrival plan
// wait for their lines in their callers; the next consumer refuses them
// (whole, in part, read-only) while the lines come in, or every other call;
// the caller sends again what each error carries, as the gym processor
// does, until it is taken. Every span reaches the consumer exactly once,
// with the golden output's attributes (but for which span of a model call
// stands for it, which depends on the order its spans came in: exactly one
// does, with the golden's attributes): a span joined before the refusal
// comes back joined and passes unchanged, and one let go without its line
// has ended long before it comes back, so it does not wait again.
func TestRefusedBatchesAreDeliveredOnceInEveryGoldenPlan(t *testing.T) {
	outages := []struct {
		name  string
		down  bool
		every int
	}{{"while_lines_come", true, 0}, {"every_other_call", false, 2}}
	for name, gc := range goldenCases {
		dir := filepath.Join("testdata", name)
		input := readTraces(t, filepath.Join(dir, "input.json"))
		for plan, batches := range gymtest.ArrivalPlans(input, 2) {
			if gc.agentByCalls && plan != "whole" && plan != "one_by_one" {
				continue // the plans in which spans come in the order they end
			}
			for mode, modeName := range gymtest.RefuseModes {
				for _, o := range outages {
					t.Run(fmt.Sprintf("%s/%s/%s/%s", name, plan, modeName, o.name), func(t *testing.T) {
						next := gymtest.NewRefusingTraces(mode, o.down)
						next.Every = o.every
						h := newHarnessWithNext(t, gc.adjust, next)
						copyDir(t, filepath.Join(dir, "before"), h.dir)
						sent := make([]ptrace.Traces, len(batches))
						calls := make([]*pendingCall, len(batches))
						for i, b := range batches {
							sent[i] = ptrace.NewTraces()
							b.CopyTo(sent[i])
							calls[i] = h.consume(sent[i])
						}
						copyDir(t, filepath.Join(dir, "after"), h.dir)
						h.clock.advance(h.p.cfg.PollInterval)
						h.p.poll(context.Background(), false)
						h.clock.advance(h.p.cfg.CaptureWait)
						h.p.poll(context.Background(), false)
						next.SetDown(false)
						h.clock.advance(2 * h.p.cfg.CaptureWait) // the caller's backoff
						for i, c := range calls {
							resendUntilTaken(t, h, c.wait(), sent[i])
						}
						require.Zero(t, h.waiting())
						got := canonical(next.Sink.AllTraces())
						require.Equal(t, input.SpanCount(), sentSpans([]ptrace.Traces{got}), "every span once")
						require.Len(t, chatSpans(t, []ptrace.Traces{got}), gc.calls-gc.lineless, "a chat span per call joined to its line")
						compareGoldenCalls(t, filepath.Join(dir, "expected.json"), got)
					})
				}
			}
		}
	}
}

// resendUntilTaken sends again what err says the consumer did not take of
// td, as the gym processor does, until it takes it all; a resent span does
// not wait (it ended long ago).
func resendUntilTaken(t *testing.T, h *harness, err error, td ptrace.Traces) {
	t.Helper()
	for i := 0; err != nil; i++ {
		require.Less(t, i, 100, "the consumer takes the batch at last")
		part, ok := gymtest.Refused(err, td)
		require.True(t, ok, "a retryable refusal: %v", err)
		td = part
		err = h.p.ConsumeTraces(context.Background(), td)
	}
}

// A caller whose context ends while its batch waits goes on: the waiting
// spans are let go without their lines, and the batch is handed on.
func TestCallerContextEndsTheWait(t *testing.T) {
	h := newHarness(t, nil)
	require.NoError(t, os.WriteFile(filepath.Join(h.dir, "0-0.capture.jsonl"), nil, 0o640))
	ctx, cancel := context.WithCancel(context.Background())
	c := h.consumeCtx(ctx, modelSpan("0-0", 1, 0, 1))
	require.Equal(t, 1, h.waiting())
	cancel()
	require.NoError(t, c.wait())
	assert.Zero(t, h.waiting())
	assert.Equal(t, 1, h.left())
	assert.Equal(t, int64(1), h.counter(t, metricSpansMissed, "reason", "wait"))
}

// A span that ended more than lineHorizon capture_waits before it came
// (handed on again after an outage, or after a restart) does not wait: its
// line is there, or it will not come (linewait.go).
func TestSpanEndedLongAgoDoesNotWait(t *testing.T) {
	h := newHarness(t, nil)
	require.NoError(t, os.WriteFile(filepath.Join(h.dir, "0-0.capture.jsonl"), nil, 0o640))
	h.clock.advance(lineHorizon*h.p.cfg.CaptureWait + 1) // the span ends at t0+1s, the harness starts then
	require.NoError(t, h.consume(modelSpan("0-0", 1, 0, 1)).wait())
	assert.Zero(t, h.waiting())
	assert.Equal(t, 1, h.left())
	assert.Equal(t, int64(1), h.counter(t, metricSpansMissed, "reason", "wait"))
}

// The next consumer's refusal goes back to the caller, counted: the
// processor keeps nothing it could lose.
func TestRefusalGoesBackToTheCaller(t *testing.T) {
	next := gymtest.NewRefusingTraces(gymtest.RefuseWhole, true)
	h := newHarnessWithNext(t, nil, next)
	err := h.consume(modelSpan("0-0", 1, 0, 1)).wait()
	require.ErrorIs(t, err, gymtest.ErrDiskFull)
	assert.Equal(t, int64(1), h.counter(t, metricDownstreamFailed, "", ""))
	assert.Zero(t, h.waiting())
}

// compareGoldenCalls compares got with the golden file as to everything but
// which span of a model call stands for it (callspan.go): the spans are
// compared without the chat spans, and each call has one chat span with the
// golden's attributes.
func compareGoldenCalls(t *testing.T, path string, got ptrace.Traces) {
	t.Helper()
	want := readTraces(t, path)
	wantCalls, gotCalls := splitCalls(want), splitCalls(got)
	for id, attrs := range wantCalls {
		require.Len(t, gotCalls[id], 1, "chat spans of call %s", id)
		assert.Equal(t, attrs[0], gotCalls[id][0], "call %s's attributes", id)
	}
	assert.Len(t, gotCalls, len(wantCalls))
	wb, err := (&ptrace.JSONMarshaler{}).MarshalTraces(want)
	require.NoError(t, err)
	gb, err := (&ptrace.JSONMarshaler{}).MarshalTraces(got)
	require.NoError(t, err)
	assert.JSONEq(t, string(wb), string(gb))
}

// splitCalls takes the chat spans out of td (their ids, resources and
// parents are the standing spans', which depend on the order the call's
// spans came in) and returns their attributes by call (every named
// attribute but the call's id and the rollout's, which every span of the
// call has).
func splitCalls(td ptrace.Traces) map[string][]map[string]any {
	calls := map[string][]map[string]any{}
	for _, rs := range td.ResourceSpans().All() {
		for _, ss := range rs.ScopeSpans().All() {
			ss.Spans().RemoveIf(func(span ptrace.Span) bool {
				if !synthesized(span) {
					return false
				}
				id, _ := span.Attributes().Get("nemo.gym.model_call.id")
				taken := map[string]any{}
				for k, v := range span.Attributes().All() {
					if (namedAttributes[k] || contentAttributes[k]) && k != "nemo.gym.model_call.id" && k != "nemo.gym.rollout.id" {
						taken[k] = v.AsRaw()
					}
				}
				taken["name"] = span.Name()
				calls[id.Str()] = append(calls[id.Str()], taken)
				return true
			})
		}
	}
	td.ResourceSpans().RemoveIf(func(rs ptrace.ResourceSpans) bool {
		rs.ScopeSpans().RemoveIf(func(ss ptrace.ScopeSpans) bool { return ss.Spans().Len() == 0 })
		return rs.ScopeSpans().Len() == 0
	})
	for _, rs := range td.ResourceSpans().All() {
		for _, ss := range rs.ScopeSpans().All() {
			for _, span := range ss.Spans().All() {
				attrs := span.Attributes()
				v, ok := attrs.Get("nemo.gym.model_call.id")
				if !ok {
					continue
				}
				id := v.Str() // before RemoveIf moves the map's values
				taken := map[string]any{}
				attrs.RemoveIf(func(k string, v pcommon.Value) bool {
					if (namedAttributes[k] || contentAttributes[k]) && k != "nemo.gym.model_call.id" {
						taken[k] = v.AsRaw()
						return true
					}
					return false
				})
				if len(taken) > 0 {
					calls[id] = append(calls[id], taken)
				}
			}
		}
	}
	return calls
}
