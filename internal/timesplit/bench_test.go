// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package timesplit

import (
	"path/filepath"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
)

// BenchmarkFacts: the facts of every span of the recorded real-Gym runs
// (both telemetry modes), per span.
func BenchmarkFacts(b *testing.B) {
	type item struct {
		span ptrace.Span
		p    Process
	}
	var items []item
	dirs, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "real_gym_*"))
	for _, dir := range dirs {
		for _, td := range readRequests(b, dir) {
			for i := 0; i < td.ResourceSpans().Len(); i++ {
				rs := td.ResourceSpans().At(i)
				p := Process{Service: str(rs.Resource().Attributes(), "service.name"),
					ServerType: str(rs.Resource().Attributes(), gymconv.ServerTypeAttribute)}
				for j := 0; j < rs.ScopeSpans().Len(); j++ {
					spans := rs.ScopeSpans().At(j).Spans()
					for k := 0; k < spans.Len(); k++ {
						items = append(items, item{spans.At(k), p})
					}
				}
			}
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		it := items[i%len(items)]
		_ = Facts(it.span, it.p)
	}
}

// BenchmarkTracker: a rollout of 60 spans (a model server's and a tool's
// subtrees under the agent's /run) added and finished, per span.
func BenchmarkTracker(b *testing.B) {
	spans := []Span{sp(2, 1, 1, 99, AgentRun)}
	for c := uint64(0); c < 19; c++ {
		call := 10 + 3*c
		role := ModelCall
		if c%3 == 2 {
			role = ToolCall
		}
		start := int64(2 + 5*c)
		spans = append(spans, sp(call, 2, start, start+4, role), sp(call+1, call, start+1, start+3, Plain), sp(call+2, call+1, start+1, start+2, Event))
	}
	tr := NewTracker(1 << 20)
	b.ResetTimer()
	for i := 0; i < b.N; i += len(spans) + 1 {
		k := Key{"run", string(rune('a' + i%26))}
		for _, s := range spans {
			tr.Add(k, s)
		}
		tr.Finish(k, sp(1, 0, 0, 100, Plain))
		delete(tr.rollouts.ids, tr.rollouts.idOf(k)) // finished: forgotten, for the key to be new again
	}
}
