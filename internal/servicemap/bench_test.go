// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package servicemap

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// latencies is a fixed spread of LLM-call-like latencies (1 ms to 60 s).
func latencies(n int) []time.Duration {
	rng := rand.New(rand.NewPCG(1, 2))
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = time.Duration(float64(time.Millisecond) * float64(rng.IntN(60_000)+1))
	}
	return out
}

func BenchmarkSketchAdd(b *testing.B) {
	s := mustSketch(b, DefaultRelativeAccuracy, BinsFor(DefaultRelativeAccuracy, DefaultDynamicRange))
	ls := latencies(1024)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		s.Add(float64(ls[i&1023]) / 1e6)
	}
}

func BenchmarkObserve(b *testing.B) {
	m := newTestMap(b, b.TempDir(), Options{})
	ls := latencies(1024)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		m.Observe(Edge{Run: "run-a", Client: "simple_agent", Server: "policy_model", Latency: ls[i&1023], Error: i%17 == 0})
	}
}

func BenchmarkObserveParallel(b *testing.B) {
	m := newTestMap(b, b.TempDir(), Options{})
	ls := latencies(1024)
	servers := []string{"policy_model", "math_resources", "judge_model", "code_resources"}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			m.Observe(Edge{Run: "run-a", Client: "simple_agent", Server: servers[i&3], Latency: ls[i&1023]})
			i++
		}
	})
}

func BenchmarkObserveSpan(b *testing.B) {
	m := newTestMap(b, b.TempDir(), Options{})
	td := readTraces(b, filepath.Join("testdata", "multi_run.traces.json"))
	type pair struct {
		rs   ptrace.ResourceSpans
		span ptrace.Span
	}
	var spans []pair
	for _, rs := range td.ResourceSpans().All() {
		for _, span := range rs.ScopeSpans().At(0).Spans().All() {
			spans = append(spans, pair{rs, span})
		}
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		p := spans[i%len(spans)]
		m.ObserveSpan(p.rs.Resource(), p.span)
	}
}

// BenchmarkEncode is the CPU part of a flush: 100 edges to JSON and Markdown.
func BenchmarkEncode(b *testing.B) {
	m := newTestMap(b, b.TempDir(), Options{})
	ls := latencies(1024)
	for i := range 100_000 {
		m.Observe(Edge{Run: fmt.Sprintf("run-%d", i%10), Client: "agent", Server: fmt.Sprintf("s%d", i%10), Latency: ls[i&1023]})
	}
	tb := m.delta
	b.ReportAllocs()
	for b.Loop() {
		_ = encodeTable(tb)
		_ = encodeMarkdown(tb, "service_map.json")
	}
}
