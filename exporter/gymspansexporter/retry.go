// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter"

import (
	"errors"
	"fmt"

	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"
)

// Partial failure. A span's lines go to up to three files. When some of
// those appends fail, the returned consumererror.Traces holds exactly the
// spans with a line in a failed file, and the retry table remembers, for
// each of them, the files that already hold its line. When a span comes
// again (a retry of the returned data, or the sender re-sending the batch),
// its line goes only to the files that lack it, so once writes succeed
// every span is in every file exactly once. The table is bounded
// (maxRetrySpans, oldest forgotten first); it is empty while writes succeed.

// finishBatch counts what b's appends wrote and returns the spans that have a
// line in a failed file (nil when every append succeeded).
func (e *spansExporter) finishBatch(b *batch, td ptrace.Traces) error {
	var errs []error
	var lines, bytes [3]int // by file kind
	for _, fb := range b.files {
		switch {
		case fb.err == nil:
			fb.ok = true
			k := fileKindIndex(fb.kind)
			lines[k] += fb.lines
			bytes[k] += fb.size
		case fb.kind == fileKindRollout && errors.Is(fb.err, errUnsafeFile):
			// A symlink or other planted file under a rollout's name: never
			// write through it; the spans are in the combined file.
			fb.ok = true
			e.metrics.reject(rejectUnsafeFile, len(fb.spans))
			e.logs.warn(rejectUnsafeFile, "per-rollout file is not a regular file; spans only in the combined file", zap.Error(fb.err))
		default:
			e.metrics.writeFailed(fb.kind)
			errs = append(errs, fb.err)
		}
	}
	for i, kind := range fileKinds {
		if lines[i] > 0 {
			e.metrics.written(kind, lines[i], bytes[i])
		}
	}
	if len(errs) == 0 {
		for i := range b.refs {
			if b.refs[i].retried {
				ref := b.refs[i]
				span := td.ResourceSpans().At(int(ref.rs)).ScopeSpans().At(int(ref.ss)).Spans().At(int(ref.sp))
				e.retry.Delete(spanKey(span.TraceID(), span.SpanID()))
			}
		}
		e.observe(b, td)
		return nil
	}
	return e.partialFailure(b, td, errs)
}

func (e *spansExporter) partialFailure(b *batch, td ptrace.Traces, errs []error) error {
	b.failed = append(b.failed[:0], make([]bool, len(b.refs))...)
	for _, fb := range b.files {
		if !fb.ok {
			for _, idx := range fb.spans {
				b.failed[idx] = true
			}
		}
	}
	spanAt := func(ref spanRef) ptrace.Span {
		return td.ResourceSpans().At(int(ref.rs)).ScopeSpans().At(int(ref.ss)).Spans().At(int(ref.sp))
	}
	// Remember, per failed span, the files that hold its line now.
	written := map[int32][]string{}
	for _, fb := range b.files {
		if fb.ok {
			for _, idx := range fb.spans {
				if b.failed[idx] {
					written[idx] = append(written[idx], fb.name)
				}
			}
		}
	}
	out := ptrace.NewTraces()
	lastRS, lastSS := int32(-1), int32(-1)
	var ors ptrace.ResourceSpans
	var oss ptrace.ScopeSpans
	unwritten := 0
	for idx, ref := range b.refs {
		span := spanAt(ref)
		key := spanKey(span.TraceID(), span.SpanID())
		if !b.failed[idx] {
			if ref.retried {
				e.retry.Delete(key)
			}
			continue
		}
		prev, _ := e.retry.Get(key)
		e.retry.Put(key, append(prev, written[int32(idx)]...))
		unwritten++
		if ref.rs != lastRS {
			src := td.ResourceSpans().At(int(ref.rs))
			ors = out.ResourceSpans().AppendEmpty()
			src.Resource().CopyTo(ors.Resource())
			ors.SetSchemaUrl(src.SchemaUrl())
			lastRS, lastSS = ref.rs, -1
		}
		if ref.ss != lastSS {
			src := td.ResourceSpans().At(int(ref.rs)).ScopeSpans().At(int(ref.ss))
			oss = ors.ScopeSpans().AppendEmpty()
			src.Scope().CopyTo(oss.Scope())
			oss.SetSchemaUrl(src.SchemaUrl())
			lastSS = ref.ss
		}
		span.CopyTo(oss.Spans().AppendEmpty())
	}
	e.observe(b, td)
	err := fmt.Errorf("gymspans exporter: %d of %d spans not written to every file: %w", unwritten, len(b.refs), errors.Join(errs...))
	return consumererror.NewTraces(err, out)
}

// spanKey identifies a span for the retry table.
func spanKey(tid pcommon.TraceID, sid pcommon.SpanID) [24]byte {
	var k [24]byte
	copy(k[:16], tid[:])
	copy(k[16:], sid[:])
	return k
}
