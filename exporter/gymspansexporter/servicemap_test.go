// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter

import (
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-gym/otelcol-gym/internal/servicemap"
)

// clientCalls builds n CLIENT spans from service client to peer in run,
// errors of them with status ERROR, each lasting d.
func clientCalls(td ptrace.Traces, run, client, peer string, n, errors int, d time.Duration) {
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", client)
	rs.Resource().Attributes().PutStr("nemo.run.id", run)
	spans := rs.ScopeSpans().AppendEmpty().Spans()
	start := time.Date(2026, 8, 21, 12, 0, 0, 0, time.UTC)
	h := sha256.Sum256([]byte(run + "\x00" + client + "\x00" + peer)) // other calls are other spans
	for i := range n {
		s := spans.AppendEmpty()
		s.SetName("HTTP POST")
		s.SetKind(ptrace.SpanKindClient)
		s.SetTraceID(pcommon.TraceID{1, h[0], h[1], h[2], h[3], byte(i)})
		s.SetSpanID(pcommon.SpanID{2, h[4], h[5], h[6], h[7], byte(i)})
		s.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
		s.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(d)))
		s.Attributes().PutStr("peer.service", peer)
		s.Attributes().PutStr("nemo.gym.rollout.id", "0-1")
		if i < errors {
			s.Status().SetCode(ptrace.StatusCodeError)
		}
	}
}

// TestServiceMapFromWrittenSpans: the CLIENT spans an exporter writes become
// service_map.json edges per run, with calls and errors; a second exporter on
// the same capture dir (another collector, or a restart) adds to them.
func TestServiceMapFromWrittenSpans(t *testing.T) {
	dir := t.TempDir()
	for round := range 2 {
		e, _ := newTestExporter(t, func(c *Config) {
			c.CaptureDir = dir
			c.ServiceMap.Enabled = true
		})
		require.NoError(t, e.start(context.Background(), nil))
		td := ptrace.NewTraces()
		clientCalls(td, "run-a", "nemo-gym/simple_agent", "nemo-gym/policy_model", 4, 1, 200*time.Millisecond)
		clientCalls(td, "run-a", "nemo-gym/simple_agent", "nemo-gym/simple_agent", 3, 0, time.Millisecond) // same service: no edge
		clientCalls(td, "run-b", "nemo-gym/orchestrator", "nemo-gym/simple_agent", 2, 0, time.Second)
		require.NoError(t, e.pushTraces(context.Background(), td))
		require.NoError(t, e.shutdown(context.Background()))

		data, err := os.ReadFile(filepath.Join(dir, "service_map.json"))
		require.NoError(t, err)
		edges, err := servicemap.ReadEdges(data)
		require.NoError(t, err)
		k := uint64(round + 1)
		require.Len(t, edges, 2)
		require.Equal(t, [3]string{"run-a", "nemo-gym/simple_agent", "nemo-gym/policy_model"}, [3]string{edges[0].Run, edges[0].Client, edges[0].Server})
		require.Equal(t, 4*k, edges[0].Calls)
		require.Equal(t, 1*k, edges[0].Errors)
		require.InDelta(t, 200, edges[0].P50MS, 2)
		require.Equal(t, [3]string{"run-b", "nemo-gym/orchestrator", "nemo-gym/simple_agent"}, [3]string{edges[1].Run, edges[1].Client, edges[1].Server})
		require.Equal(t, 2*k, edges[1].Calls)
		md, err := os.ReadFile(filepath.Join(dir, "service_map.md"))
		require.NoError(t, err)
		require.Contains(t, string(md), "flowchart LR")
	}
}
