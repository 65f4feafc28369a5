// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/otelcol-gym/otelcol-gym/internal/gymtest"
	"github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/metadata"
)

// fakeClock is a manual clock; its ticker fires only when a test says so.
type fakeClock struct {
	mu    sync.Mutex
	now   time.Time
	ticks chan time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 8, 21, 12, 0, 0, 0, time.UTC), ticks: make(chan time.Time)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) NewTicker(time.Duration) (<-chan time.Time, func()) { return c.ticks, func() {} }

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// Tick hands one tick to the timer goroutine (blocks until it takes it).
func (c *fakeClock) Tick() { c.ticks <- c.Now() }

func testConfig() *Config {
	return createDefaultConfig().(*Config)
}

// coreConfig is the default config with the service-map repairs (§4.4)
// off: the tests of §4.1–§4.3 and the golden cases of ../../testdata see
// exactly those rewrites (peer.service depends on arrival order by design).
func coreConfig() *Config {
	cfg := testConfig()
	cfg.ServiceMap.Enabled = false
	cfg.ServiceMap.SynthesizeClientSpans = false
	return cfg
}

// tb is what the harness needs of *testing.T, *testing.B and *rapid.T.
type tb interface {
	Errorf(format string, args ...any)
	FailNow()
	Cleanup(func())
}

type harness struct {
	t     tb
	p     *gymProcessor
	clock *fakeClock
	sink  *consumertest.TracesSink
	tel   *componenttest.Telemetry
}

func newHarness(t tb, cfg *Config) *harness {
	return newHarnessWithNext(t, cfg, nil)
}

func newHarnessWithNext(t tb, cfg *Config, next consumer.Traces) *harness {
	h := &harness{t: t, clock: newFakeClock(), sink: new(consumertest.TracesSink), tel: componenttest.NewTelemetry()}
	if next == nil {
		next = h.sink
	}
	set := processortest.NewNopSettings(componentType)
	set.TelemetrySettings = h.tel.NewTelemetrySettings()
	p, err := newGymProcessorWithClock(set, cfg, next, h.clock)
	require.NoError(t, err)
	h.p = p
	t.Cleanup(func() { _ = h.tel.Shutdown(context.Background()) })
	return h
}

func (h *harness) consume(td ptrace.Traces) {
	require.NoError(h.t, h.p.ConsumeTraces(context.Background(), td))
}

// tickAt advances the clock by d and runs one timer pass in this goroutine.
func (h *harness) tickAt(d time.Duration) {
	h.clock.Advance(d)
	h.p.tick(context.Background())
}

func (h *harness) shutdown() {
	require.NoError(h.t, h.p.Shutdown(context.Background()))
}

func (h *harness) out() []normSpan { return normalize(h.sink.AllTraces()) }

func (h *harness) pending() int {
	h.p.mu.Lock()
	defer h.p.mu.Unlock()
	return h.p.eng.core.Pending()
}

// metricSum sums the data points of an Int64 sum or gauge whose attributes
// include all of attrs.
func (h *harness) metricSum(name string, attrs ...string) int64 {
	m, err := h.tel.GetMetric(name)
	if err != nil {
		return 0
	}
	return sumPoints(m.Data, attrs)
}

// ---- building traces -------------------------------------------------------

func spanIDOf(name string) pcommon.SpanID { return gymtest.SpanID(name) }

func traceIDOf(name string) pcommon.TraceID { return gymtest.TraceID(name) }

// proc describes a sending process (gymtest.Process, in this package's
// short test notation).
type proc struct {
	service, host string
	pid           int64
	run           string
	serverType    string
	scope         string
}

// sdef describes one span (gymtest.Span, in short notation); parent ""
// means a root.
type sdef struct {
	id, parent, trace, name string
	kind                    ptrace.SpanKind
	proc                    string
	attrs                   map[string]any
	start, end              int64 // offsets in ms
	flags                   uint32
}

func (p proc) gymtest() gymtest.Process {
	return gymtest.Process{Service: p.service, Host: p.host, PID: p.pid, Run: p.run, ServerType: p.serverType, Scope: p.scope}
}

func procOf(p gymtest.Process) proc {
	return proc{service: p.Service, host: p.Host, pid: p.PID, run: p.Run, serverType: p.ServerType, scope: p.Scope}
}

func (d sdef) gymtest() gymtest.Span {
	return gymtest.Span{ID: d.id, Parent: d.parent, Trace: d.trace, Name: d.name, Kind: d.kind, Proc: d.proc, Attributes: d.attrs, Start: d.start, End: d.end, Flags: d.flags}
}

func sdefOf(s gymtest.Span) sdef {
	return sdef{id: s.ID, parent: s.Parent, trace: s.Trace, name: s.Name, kind: s.Kind, proc: s.Proc, attrs: s.Attributes, start: s.Start, end: s.End, flags: s.Flags}
}

// buildTraces builds spans with gymtest.Build.
func buildTraces(procs map[string]proc, order []string, spans []sdef) ptrace.Traces {
	ps := make(map[string]gymtest.Process, len(procs))
	for k, p := range procs {
		ps[k] = p.gymtest()
	}
	ss := make([]gymtest.Span, len(spans))
	for i, d := range spans {
		ss[i] = d.gymtest()
	}
	return gymtest.Build(ps, order, ss)
}

// ---- splitting input into batches --------------------------------------------

// Arrival plans (whole, one by one, reversed, random splits) are shared
// with the other processors' tests (internal/gymtest).
type spanRef = gymtest.SpanRef

var (
	flatRefs     = gymtest.Refs
	batchesOf    = gymtest.Batches
	arrivalPlans = gymtest.ArrivalPlans
)

// ---- normalized output --------------------------------------------------------

type normLink struct {
	TraceID    string         `json:"trace_id"`
	SpanID     string         `json:"span_id"`
	Attributes map[string]any `json:"attributes,omitempty"`
}

type normSpan struct {
	Name       string         `json:"name"`
	Service    string         `json:"service"`
	TraceID    string         `json:"trace_id"`
	SpanID     string         `json:"span_id"`
	ParentID   string         `json:"parent_span_id"`
	Rollout    string         `json:"rollout,omitempty"`
	ResRollout string         `json:"resource_rollout,omitempty"`
	Attributes map[string]any `json:"attributes"`
	Links      []normLink     `json:"links,omitempty"`
}

func normalize(tds []ptrace.Traces) []normSpan {
	var out []normSpan
	for _, td := range tds {
		rss := td.ResourceSpans()
		for i := 0; i < rss.Len(); i++ {
			rs := rss.At(i)
			svc := resourceString(rs.Resource().Attributes(), "service.name")
			resRollout := resourceString(rs.Resource().Attributes(), "nemo.gym.rollout.id")
			sss := rs.ScopeSpans()
			for j := 0; j < sss.Len(); j++ {
				spans := sss.At(j).Spans()
				for k := 0; k < spans.Len(); k++ {
					s := spans.At(k)
					n := normSpan{
						Name:       s.Name(),
						Service:    svc,
						TraceID:    s.TraceID().String(),
						SpanID:     s.SpanID().String(),
						ParentID:   s.ParentSpanID().String(),
						ResRollout: resRollout,
						Attributes: s.Attributes().AsRaw(),
					}
					if v, ok := s.Attributes().Get("nemo.gym.rollout.id"); ok {
						n.Rollout = v.AsString()
					}
					ls := s.Links()
					for l := 0; l < ls.Len(); l++ {
						n.Links = append(n.Links, normLink{
							TraceID:    ls.At(l).TraceID().String(),
							SpanID:     ls.At(l).SpanID().String(),
							Attributes: ls.At(l).Attributes().AsRaw(),
						})
					}
					sort.Slice(n.Links, func(a, b int) bool {
						if n.Links[a].TraceID != n.Links[b].TraceID {
							return n.Links[a].TraceID < n.Links[b].TraceID
						}
						return n.Links[a].SpanID < n.Links[b].SpanID
					})
					out = append(out, n)
				}
			}
		}
	}
	sort.SliceStable(out, func(a, b int) bool {
		if out[a].SpanID != out[b].SpanID {
			return out[a].SpanID < out[b].SpanID
		}
		return out[a].Name < out[b].Name
	})
	return out
}

func readTraces(t testing.TB, path string) ptrace.Traces {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(b)
	require.NoError(t, err)
	return td
}

func writeJSON(t testing.TB, path string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, append(b, '\n'), 0o600))
}

// expectedTraceID computes T' of design §4.3 independently of the processor.
func expectedTraceID(run, origTraceHex, rollout string) string {
	k := run
	if k == "" {
		k = origTraceHex
	}
	var buf []byte
	buf = append(buf, "otelcol-gym/rollout/v1"...)
	buf = append(buf, 0)
	buf = append(buf, k...)
	buf = append(buf, 0)
	buf = append(buf, rollout...)
	sum := sha256.Sum256(buf)
	id := sum[:16]
	zero := true
	for _, b := range id {
		zero = zero && b == 0
	}
	if zero {
		id[15] = 1
	}
	return hex.EncodeToString(id)
}

// signalSink hands every batch it receives to a channel.
type signalSink struct{ ch chan ptrace.Traces }

func newSignalSink() *signalSink { return &signalSink{ch: make(chan ptrace.Traces, 64)} }

func (s *signalSink) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

func (s *signalSink) ConsumeTraces(_ context.Context, td ptrace.Traces) error {
	s.ch <- td
	return nil
}

// expectedSyntheticSpanID computes the span id design §4.4 gives the CLIENT
// span synthesized above SERVER span serverHex in trace traceHex,
// independently of the processor: the first 8 bytes of
// SHA-256("otelcol-gym/synthetic/v1" ‖ 0x00 ‖ 16 raw bytes of the trace id ‖
// 8 raw bytes of the server span id), the last byte set to 1 if all are zero.
func expectedSyntheticSpanID(traceHex, serverHex string) string {
	t, err1 := hex.DecodeString(traceHex)
	s, err2 := hex.DecodeString(serverHex)
	if err1 != nil || err2 != nil || len(t) != 16 || len(s) != 8 {
		panic(fmt.Sprintf("bad ids %q %q", traceHex, serverHex))
	}
	buf := append([]byte("otelcol-gym/synthetic/v1\x00"), t...)
	buf = append(buf, s...)
	sum := sha256.Sum256(buf)
	id := sum[:8]
	if hex.EncodeToString(id) == "0000000000000000" {
		id[7] = 1
	}
	return hex.EncodeToString(id)
}

var componentType = metadata.Type
