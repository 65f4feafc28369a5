// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymcaptureprocessor

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processortest"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
	"github.com/otelcol-gym/otelcol-gym/processor/gymcaptureprocessor/internal/metadata"
)

// fakeClock is moved by the test; its ticker never fires (the test calls
// poll itself, so every step is synchronous).
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func (c *fakeClock) set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

func (*fakeClock) NewTicker(time.Duration) (<-chan time.Time, func()) {
	return make(chan time.Time), func() {}
}

type harness struct {
	p     *captureProcessor
	sink  *consumertest.TracesSink
	clock *fakeClock
	dir   string
	tel   *componenttest.Telemetry
	waits chan struct{} // a ConsumeTraces call begins to wait
}

// harnessStart is the harness clock's start: one second after t0, when the
// test spans end (a span that ended capture_wait before it came would not
// wait at all).
var harnessStart = time.Unix(0, t0Nanos).Add(time.Second)

func newHarness(t *testing.T, adjust func(*Config)) *harness {
	t.Helper()
	return newHarnessWithNext(t, adjust, nil)
}

func newHarnessWithNext(t *testing.T, adjust func(*Config), next consumer.Traces) *harness {
	t.Helper()
	h := &harness{sink: new(consumertest.TracesSink), clock: &fakeClock{now: harnessStart}, dir: t.TempDir(), waits: make(chan struct{})}
	if next == nil {
		next = h.sink
	}
	cfg := createDefaultConfig().(*Config)
	cfg.CaptureDir = h.dir
	if adjust != nil {
		adjust(cfg)
	}
	require.NoError(t, cfg.Validate())
	h.tel = componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, h.tel.Shutdown(context.Background())) })
	set := processortest.NewNopSettings(componentType)
	set.TelemetrySettings = h.tel.NewTelemetrySettings()
	p, err := newCaptureProcessor(set, cfg, next, h.clock)
	require.NoError(t, err)
	p.onWait = func() { h.waits <- struct{}{} }
	require.NoError(t, p.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, p.Shutdown(context.Background())) })
	h.p = p
	return h
}

// pendingCall is a ConsumeTraces call in a goroutine of its own.
type pendingCall struct{ errc chan error }

// consume starts ConsumeTraces(td) and returns once the call returned or
// waits for capture lines (the processor's onWait says so).
func (h *harness) consume(td ptrace.Traces) *pendingCall {
	return h.consumeCtx(context.Background(), td)
}

func (h *harness) consumeCtx(ctx context.Context, td ptrace.Traces) *pendingCall {
	c := &pendingCall{errc: make(chan error, 1)}
	go func() { c.errc <- h.p.ConsumeTraces(ctx, td) }()
	select {
	case <-h.waits:
	case err := <-c.errc:
		c.errc <- err
	}
	return c
}

// wait returns the call's error once it returned.
func (c *pendingCall) wait() error {
	err := <-c.errc
	c.errc <- err
	return err
}

// waiting is the number of spans waiting for their lines.
func (h *harness) waiting() int {
	h.p.mu.Lock()
	defer h.p.mu.Unlock()
	return h.p.queue.Len()
}

// counter is the sum of an int counter's points whose attribute k is v
// (k == "": all points).
func (h *harness) counter(t *testing.T, name, k, v string) int64 {
	t.Helper()
	m, err := h.tel.GetMetric(name)
	if err != nil {
		return 0
	}
	var sum int64
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		for _, dp := range d.DataPoints {
			if got, ok := dp.Attributes.Value(attribute.Key(k)); k == "" || (ok && got.AsString() == v) {
				sum += dp.Value
			}
		}
	case metricdata.Gauge[int64]:
		for _, dp := range d.DataPoints {
			sum += dp.Value
		}
	}
	return sum
}

// appendFile appends the bytes of src to dst, creating it.
func appendFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	require.NoError(t, err)
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o640)
	require.NoError(t, err)
	_, err = f.Write(b)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// copyDir appends every file of src (if it exists) to the same name in dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	entries, err := os.ReadDir(src)
	if os.IsNotExist(err) {
		return
	}
	require.NoError(t, err)
	for _, e := range entries {
		appendFile(t, filepath.Join(src, e.Name()), filepath.Join(dst, e.Name()))
	}
}

// canonical is every span of tds, each in a ResourceSpans of its own, by
// span id: the order spans leave in is not part of the contract.
func canonical(tds []ptrace.Traces) ptrace.Traces {
	type one struct {
		id string
		td ptrace.Traces
	}
	var all []one
	for _, td := range tds {
		for i := 0; i < td.ResourceSpans().Len(); i++ {
			rs := td.ResourceSpans().At(i)
			for j := 0; j < rs.ScopeSpans().Len(); j++ {
				ss := rs.ScopeSpans().At(j)
				for k := 0; k < ss.Spans().Len(); k++ {
					o := ptrace.NewTraces()
					rs2 := o.ResourceSpans().AppendEmpty()
					rs.Resource().CopyTo(rs2.Resource())
					ss2 := rs2.ScopeSpans().AppendEmpty()
					ss.Scope().CopyTo(ss2.Scope())
					ss.Spans().At(k).CopyTo(ss2.Spans().AppendEmpty())
					all = append(all, one{ss.Spans().At(k).SpanID().String(), o})
				}
			}
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].id < all[j].id })
	out := ptrace.NewTraces()
	for _, o := range all {
		o.td.ResourceSpans().MoveAndAppendTo(out.ResourceSpans())
	}
	return out
}

func processortestSettings() processor.Settings { return processortest.NewNopSettings(componentType) }

var componentType = metadata.Type

type nopTraces struct{}

func (nopTraces) Capabilities() consumer.Capabilities                { return consumer.Capabilities{} }
func (nopTraces) ConsumeTraces(context.Context, ptrace.Traces) error { return nil }

// synthesized reports whether span is one the processor made (a chat span,
// chatspan.go).
func synthesized(span ptrace.Span) bool {
	v, ok := span.Attributes().Get(gymconv.SyntheticAttribute)
	return ok && v.Bool()
}

// sentSpans is the number of spans of tds that were sent in (not synthesized).
func sentSpans(tds []ptrace.Traces) int {
	n := 0
	for _, td := range tds {
		for _, rs := range td.ResourceSpans().All() {
			for _, ss := range rs.ScopeSpans().All() {
				for _, span := range ss.Spans().All() {
					if !synthesized(span) {
						n++
					}
				}
			}
		}
	}
	return n
}

// left is the number of spans that left that were sent in.
func (h *harness) left() int { return sentSpans(h.sink.AllTraces()) }

// chatSpans are the chat spans of tds by the id of the span they stand
// below, each checked for the shape chatspan.go gives it.
func chatSpans(t *testing.T, tds []ptrace.Traces) map[pcommon.SpanID]ptrace.Span {
	t.Helper()
	parents := map[pcommon.SpanID]ptrace.Span{}
	for _, td := range tds {
		for _, rs := range td.ResourceSpans().All() {
			for _, ss := range rs.ScopeSpans().All() {
				for _, span := range ss.Spans().All() {
					parents[span.SpanID()] = span
				}
			}
		}
	}
	chats := map[pcommon.SpanID]ptrace.Span{}
	for id, span := range parents {
		if !synthesized(span) {
			continue
		}
		parent, ok := parents[span.ParentSpanID()]
		if !assert.True(t, ok, "chat span %s: its parent left", id) {
			continue
		}
		call, _ := span.Attributes().Get(gymconv.ModelCallIDAttribute)
		assert.Equal(t, chatSpanID(parent.TraceID(), call.Str()), id, "chat span id")
		assert.Equal(t, parent.TraceID(), span.TraceID())
		assert.Equal(t, parent.StartTimestamp(), span.StartTimestamp())
		assert.Equal(t, parent.EndTimestamp(), span.EndTimestamp())
		assert.Equal(t, ptrace.SpanKindInternal, span.Kind())
		rollout, _ := span.Attributes().Get(gymconv.RolloutAttribute)
		parentRollout, _ := parent.Attributes().Get(gymconv.RolloutAttribute)
		assert.Equal(t, parentRollout.Str(), rollout.Str(), "chat span %s: its parent's rollout", id)
		op, _ := span.Attributes().Get("gen_ai.operation.name")
		model, hasModel := span.Attributes().Get("gen_ai.request.model")
		want := op.Str()
		if hasModel {
			want += " " + model.Str()
		}
		assert.Equal(t, want, span.Name(), "the conventions' name")
		_, dup := chats[span.ParentSpanID()]
		assert.False(t, dup, "one chat span below span %s", span.ParentSpanID())
		chats[span.ParentSpanID()] = span
	}
	return chats
}
