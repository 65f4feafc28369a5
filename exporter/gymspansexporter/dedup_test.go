// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
	"github.com/otelcol-gym/otelcol-gym/internal/gymtest"
)

// retraced is td with every span moved to another trace, as the gym
// processor may do with a second copy of a span (it rewrites trace ids per
// rollout), the original kept in nemo.gym.original_trace_id.
func retraced(td ptrace.Traces, trace pcommon.TraceID) ptrace.Traces {
	out := ptrace.NewTraces()
	td.CopyTo(out)
	gymtest.EachSpan(out, func(_ pcommon.Resource, span ptrace.Span) {
		if _, ok := span.Attributes().Get(gymconv.OriginalTraceAttribute); !ok {
			span.Attributes().PutStr(gymconv.OriginalTraceAttribute, span.TraceID().String())
		}
		span.SetTraceID(trace)
	})
	return out
}

// TestDuplicatesAreDropped (design §4.6): a span written before is dropped
// from every file and counted, whether it comes again in another push (a
// sender's retry), in the same push, or with another trace id and its
// original in nemo.gym.original_trace_id (the gym processor's redelivery
// after a restart); both modes.
func TestDuplicatesAreDropped(t *testing.T) {
	for _, combined := range []string{"spans.jsonl", ""} {
		t.Run("combined="+combined, func(t *testing.T) {
			e, tel := newTestExporter(t, func(c *Config) { c.CombinedFile = combined })
			startExporter(t, e)
			td := gymTraces(1, 3, 4)
			want := expectedFiles(td)
			if combined == "" {
				delete(want, "spans.jsonl")
			}
			require.NoError(t, e.pushTraces(context.Background(), td))
			require.NoError(t, e.pushTraces(context.Background(), td))                               // a sender's retry
			require.NoError(t, e.pushTraces(context.Background(), retraced(td, pcommon.TraceID{9}))) // redelivered, rewritten
			twice := ptrace.NewTraces()
			td.ResourceSpans().MoveAndAppendTo(twice.ResourceSpans())
			gymTraces(1, 3, 4).ResourceSpans().MoveAndAppendTo(twice.ResourceSpans())
			require.NoError(t, e.pushTraces(context.Background(), twice))
			require.NoError(t, e.shutdown(context.Background()))
			assertExactlyOnce(t, e.cfg.CaptureDir, want)
			assert.Equal(t, int64(4*12), sum(metricByAttr(t, tel, metricDuplicates, "")))
		})
	}
}

// TestDuplicateInFlightIsHandedBack: a span that another push is writing
// at that moment is not acknowledged by the second push (its error carries
// it); retried, it is then a duplicate and dropped.
func TestDuplicateInFlightIsHandedBack(t *testing.T) {
	disk := &gatedDisk{firstFiles: 1, entered: make(chan struct{}), release: make(chan struct{}), calls: map[string]int{}, only: "spans.jsonl"}
	e, _ := newTestExporter(t, nil)
	e.write = disk.write
	startExporter(t, e)
	td := gymTraces(1, 2, 3)
	first := make(chan error, 1)
	go func() { first <- e.pushTraces(context.Background(), td) }()
	<-disk.entered
	err := e.pushTraces(context.Background(), gymTraces(1, 2, 3))
	var perr consumererror.Traces
	require.ErrorAs(t, err, &perr)
	assert.Equal(t, countSpans(td), countSpans(perr.Data()), "every span is in flight in the first push")
	close(disk.release)
	require.NoError(t, <-first)
	require.NoError(t, e.pushTraces(context.Background(), perr.Data()), "the retry finds them written")
	flushFiles(t, e)
	assertExactlyOnce(t, e.cfg.CaptureDir, expectedFiles(td))
}

// TestFailedPushIsNotADuplicate: the spans of a push that failed are not
// remembered as written; their retry writes them.
func TestFailedPushIsNotADuplicate(t *testing.T) {
	disk := &faultyDisk{}
	e, tel := newTestExporter(t, nil)
	e.write = disk.write
	startExporter(t, e)
	td := gymTraces(2, 2, 3)
	disk.set([]string{"spans.jsonl"}, nil)
	require.Error(t, e.pushTraces(context.Background(), td))
	disk.set(nil, nil)
	require.NoError(t, e.pushTraces(context.Background(), td))
	flushFiles(t, e)
	assertExactlyOnce(t, e.cfg.CaptureDir, expectedFiles(td))
	assert.Zero(t, sum(metricByAttr(t, tel, metricDuplicates, "")))
}

// TestDedupWindowBound: the window remembers the last dedup_window_spans
// spans; one written before them is written again. A span without a span
// id cannot be told from another and is never dropped.
func TestDedupWindowBound(t *testing.T) {
	e, _ := newTestExporter(t, func(c *Config) { c.DedupWindowSpans = 8; c.CombinedFile = "" })
	startExporter(t, e)
	oldest := gymTraces(1, 1, 4) // 4 spans
	require.NoError(t, e.pushTraces(context.Background(), oldest))
	require.NoError(t, e.pushTraces(context.Background(), gymTraces(2, 2, 4))) // 8 more: the first 4 age out
	require.NoError(t, e.pushTraces(context.Background(), oldest))
	noID := ptrace.NewTraces()
	for range 2 {
		s := noID.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
		s.SetTraceID(pcommon.TraceID{5})
		s.Attributes().PutStr(gymconv.RolloutAttribute, "noid-1")
	}
	require.NoError(t, e.pushTraces(context.Background(), noID))
	require.NoError(t, e.shutdown(context.Background()))
	for id, n := range spanIDsIn(t, filepath.Join(e.cfg.CaptureDir, "0-0.spans.jsonl")) {
		if _, old := countSpans(oldest)[id]; old {
			assert.Equal(t, 2, n, "aged out of the window: written again")
		}
	}
	assert.Len(t, readLines(t, filepath.Join(e.cfg.CaptureDir, "noid-1.spans.jsonl")), 2)
}
