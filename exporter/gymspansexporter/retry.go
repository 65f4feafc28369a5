// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter"

import (
	"errors"
	"fmt"
	"strings"

	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"
)

// Partial failure. The error a push returns is consumererror.NewTraces with
// exactly the spans it did not write, so a retry duplicates nothing:
//
//   - With the combined file (the journal), a push writes one file before it
//     returns: its spans are all written or none (the append is truncated
//     back on failure). The rollout files and rollouts.jsonl are written
//     from memory afterwards, and a failed append there is retried by the
//     flusher, never handed back to the caller.
//   - With combined_file "" a span's lines go to up to two files before the
//     push returns. When some of those appends fail, the error holds the
//     spans with a line in a failed file, and the retry table remembers,
//     for each of them, the files that already hold its line. When a span
//     comes again (a retry of the returned data, or the sender re-sending
//     the batch), its line goes only to the files that lack it, so once
//     writes succeed every span is in every file exactly once. The table is
//     bounded (maxRetrySpans, oldest forgotten first); it is empty while
//     writes succeed.
//
// In both, a span another push in flight is writing (deduplication claims,
// dedup.go) is in the error too.

// retried returns the files that already hold the line of the span with
// key k, if the retry table has it.
func (e *spansExporter) retried(k [24]byte) ([]string, bool) {
	e.retryMu.Lock()
	defer e.retryMu.Unlock()
	return e.retry.Get(k)
}

// finishBatch counts what b's appends wrote, settles its deduplication
// claims and returns the spans it did not write (nil when it wrote them all).
func (e *spansExporter) finishBatch(b *batch, td ptrace.Traces) error {
	var errs []error
	var lines, bytes [3]int // by file kind
	for _, fb := range b.files {
		switch {
		case e.journal != nil && fb.kind != fileKindCombined:
			fb.ok = true // written from memory by the flusher
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
	if b.journalErr != nil {
		e.metrics.writeFailed(fileKindCombined)
		errs = append(errs, b.journalErr)
	}
	if e.journal != nil && (b.journalErr != nil || (b.combined != nil && b.combined.err != nil)) {
		// Nothing of the batch was written (a group writes one file, and
		// with combined_spans rest one journal record before it).
		for _, fb := range b.files {
			fb.ok = false
		}
	}
	for i, kind := range fileKinds {
		if lines[i] > 0 {
			e.metrics.written(kind, lines[i], bytes[i])
		}
	}
	if len(errs) == 0 && b.inFlight == 0 {
		e.settleClaims(b, nil)
		if e.journal == nil {
			e.forgetRetried(b, td, nil)
			e.observe(b, td)
		}
		return nil
	}
	return e.partialFailure(b, td, errs)
}

// settleClaims tells the deduplication window which spans of b were
// written (failed: those that were not; nil when all were).
func (e *spansExporter) settleClaims(b *batch, failed []bool) {
	if e.dedup == nil {
		return
	}
	e.dedup.settle(b.push, b.keys, b.claims, func(i int) bool { return failed == nil || !failed[i] })
}

// forgetRetried drops from the retry table the spans of b that are now in
// every file.
func (e *spansExporter) forgetRetried(b *batch, td ptrace.Traces, failed []bool) {
	e.retryMu.Lock()
	defer e.retryMu.Unlock()
	for i, ref := range b.refs {
		if ref.retried && (failed == nil || !failed[i]) {
			span := td.ResourceSpans().At(int(ref.rs)).ScopeSpans().At(int(ref.ss)).Spans().At(int(ref.sp))
			e.retry.Delete(spanKey(span.TraceID(), span.SpanID()))
		}
	}
	e.retrying.Store(int64(e.retry.Len()))
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
	for idx, ref := range b.refs {
		if ref.claim == claimInFlight {
			b.failed[idx] = true
		}
	}
	spanAt := func(ref spanRef) ptrace.Span {
		return td.ResourceSpans().At(int(ref.rs)).ScopeSpans().At(int(ref.ss)).Spans().At(int(ref.sp))
	}
	e.settleClaims(b, b.failed)
	if e.journal == nil {
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
		e.forgetRetried(b, td, b.failed)
		e.retryMu.Lock()
		for idx, ref := range b.refs {
			if b.failed[idx] && ref.claim == claimNew {
				key := spanKey(spanAt(ref).TraceID(), spanAt(ref).SpanID())
				prev, _ := e.retry.Get(key)
				e.retry.Put(key, append(prev, written[int32(idx)]...))
			}
		}
		e.retrying.Store(int64(e.retry.Len()))
		e.retryMu.Unlock()
	}
	out := ptrace.NewTraces()
	lastRS, lastSS := int32(-1), int32(-1)
	var ors ptrace.ResourceSpans
	var oss ptrace.ScopeSpans
	unwritten := 0
	for idx, ref := range b.refs {
		if !b.failed[idx] {
			continue
		}
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
		spanAt(ref).CopyTo(oss.Spans().AppendEmpty())
	}
	if e.journal == nil {
		e.observe(b, td)
	}
	if b.inFlight > 0 {
		errs = append(errs, fmt.Errorf("%d spans are being written by another export in flight (sent twice at once)", b.inFlight))
	}
	// The capture dir and the cause (no space left on device, read-only
	// file system) lead the message: the gym processor's line about the
	// spans it holds for redelivery is this error.
	err := fmt.Errorf("capture dir %s: %w; gymspans exporter: %d of %d spans not written to every file", e.cfg.CaptureDir, oneLine(errs), unwritten, len(b.refs))
	return consumererror.NewTraces(err, out)
}

// oneLine joins errors as errors.Join does, on one line (a log line's).
type oneLine []error

func (o oneLine) Error() string {
	parts := make([]string, len(o))
	for i, err := range o {
		parts[i] = err.Error()
	}
	return strings.Join(parts, "; ")
}

func (o oneLine) Unwrap() []error { return o }

// spanKey identifies a span for the retry table.
func spanKey(tid pcommon.TraceID, sid pcommon.SpanID) [24]byte {
	var k [24]byte
	copy(k[:16], tid[:])
	copy(k[16:], sid[:])
	return k
}
