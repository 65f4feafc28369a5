// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymcaptureprocessor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// benchBatches is a default-preset-like stream: per rollout, 3 model calls
// (the agent's CLIENT, the model server's SERVER and its CLIENT to the LLM,
// each joined) and 17 other spans, in batches of 10 rollouts; the capture
// lines are on disk before the spans come, as Gym writes them.
func benchBatches(b *testing.B, dir string, rollouts int) []ptrace.Traces {
	b.Helper()
	var out []ptrace.Traces
	for base := 0; base < rollouts; base += 10 {
		td := ptrace.NewTraces()
		agent := td.ResourceSpans().AppendEmpty()
		agent.Resource().Attributes().PutStr("service.name", "nemo-gym/simple_agent")
		agent.Resource().Attributes().PutStr("nemo.gym.server.type", "responses_api_agents")
		model := td.ResourceSpans().AppendEmpty()
		model.Resource().Attributes().PutStr("service.name", "nemo-gym/policy_model")
		model.Resource().Attributes().PutStr("nemo.gym.server.type", "responses_api_models")
		as, ms := agent.ScopeSpans().AppendEmpty().Spans(), model.ScopeSpans().AppendEmpty().Spans()
		for r := base; r < base+10; r++ {
			id := fmt.Sprintf("%d-0", r)
			var lines strings.Builder
			for c := range 3 {
				start := float64(c) * 2
				lines.WriteString(captureJSON(start+0.1, start+0.9, 100+c))
				lines.WriteByte('\n')
				mk := func(spans ptrace.SpanSlice, name string, kind ptrace.SpanKind, s, e float64, k, v string) {
					sp := spans.AppendEmpty()
					sp.SetName(name)
					sp.SetKind(kind)
					sp.SetSpanID(pcommon.SpanID{byte(r), byte(r >> 8), byte(c), byte(kind), 1})
					sp.SetStartTimestamp(pcommon.Timestamp(t0Nanos + int64(s*1e9)))
					sp.SetEndTimestamp(pcommon.Timestamp(t0Nanos + int64(e*1e9)))
					sp.Attributes().PutStr("nemo.gym.rollout.id", id)
					sp.Attributes().PutStr(k, v)
				}
				mk(as, "HTTP POST", ptrace.SpanKindClient, start, start+1, "url.full", "http://m/ng-rollout/"+id+"/v1/responses")
				mk(ms, "POST", ptrace.SpanKindServer, start+0.05, start+0.95, "url.path", "/ng-rollout/"+id+"/v1/responses")
				mk(ms, "HTTP POST", ptrace.SpanKindClient, start+0.11, start+0.89, "url.full", "http://llm/v1/responses")
			}
			for k := range 17 {
				sp := as.AppendEmpty()
				sp.SetName("gym.other")
				sp.SetSpanID(pcommon.SpanID{byte(r), byte(r >> 8), byte(k), 9})
				sp.Attributes().PutStr("nemo.gym.rollout.id", id)
			}
			require.NoError(b, os.WriteFile(filepath.Join(dir, id+".capture.jsonl"), []byte(lines.String()), 0o640))
		}
		out = append(out, td)
	}
	return out
}

// BenchmarkConsumeTraces: the processor's cost per span of such a stream
// (every model-call span joined in its batch).
func BenchmarkConsumeTraces(b *testing.B) {
	dir := b.TempDir()
	batches := benchBatches(b, dir, 500)
	spans := 0
	for _, td := range batches {
		spans += td.SpanCount()
	}
	var cpu time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		h := &harness{clock: &fakeClock{}}
		cfg := createDefaultConfig().(*Config)
		cfg.CaptureDir = dir
		p, err := newCaptureProcessor(processortestSettings(), cfg, nopTraces{}, h.clock)
		require.NoError(b, err)
		p.openDir()
		copies := make([]ptrace.Traces, len(batches))
		for k, td := range batches {
			copies[k] = ptrace.NewTraces()
			td.CopyTo(copies[k])
		}
		b.StartTimer()
		before := cpuTime()
		for _, td := range copies {
			_ = p.ConsumeTraces(context.Background(), td)
		}
		cpu += cpuTime() - before
		b.StopTimer()
		require.NoError(b, p.Shutdown(context.Background())) // closes its files
		b.StartTimer()
	}
	// CPU, not wall time: the machine is shared.
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*spans), "cpu-ns/span")
}

// cpuTime is the process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
