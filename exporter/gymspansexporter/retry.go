// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter"

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/dedup"
	"github.com/otelcol-gym/otelcol-gym/internal/bounded"
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
// internal/dedup) is in the error too.

// retryTable remembers, per span of a failed write-through push, the files
// that already hold its line. It owns its lock; it is empty while writes
// succeed, and active lets encoding skip it then without the lock.
type retryTable struct {
	mu      sync.Mutex
	spans   *bounded.Table[[24]byte, []string] // span → files already holding its line
	entries atomic.Int64                       // spans.Len(), read without mu
}

func newRetryTable() *retryTable {
	return &retryTable{spans: bounded.New[[24]byte, []string](maxRetrySpans)}
}

// active reports whether the table holds any span.
func (t *retryTable) active() bool { return t.entries.Load() > 0 }

// Len is the number of spans the table holds.
func (t *retryTable) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.spans.Len()
}

// files returns the files that already hold the line of the span with key
// k, if the table has it.
func (t *retryTable) files(k [24]byte) ([]string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.spans.Get(k)
}

// settle drops the spans of b that are now in every file (failed: those
// that are not; nil when all are), and remembers, per failed span this push
// wrote somewhere, the files that hold its line now.
func (t *retryTable) settle(b *batch, td ptrace.Traces, failed []bool) {
	var written map[int32][]string
	if failed != nil {
		written = map[int32][]string{}
		for _, fb := range b.files {
			if fb.ok {
				for _, idx := range fb.spans {
					if failed[idx] {
						written[idx] = append(written[idx], fb.name)
					}
				}
			}
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, ref := range b.refs {
		if ref.retried && (failed == nil || !failed[i]) {
			t.spans.Delete(refKey(td, ref))
		}
	}
	for idx, ref := range b.refs {
		if failed != nil && failed[idx] && ref.claim == dedup.ClaimNew {
			key := refKey(td, ref)
			prev, _ := t.spans.Get(key)
			t.spans.Put(key, append(prev, written[int32(idx)]...))
		}
	}
	t.entries.Store(int64(t.spans.Len()))
}

// refKey is the retry table's key of the span ref locates in td.
func refKey(td ptrace.Traces, ref spanRef) [24]byte {
	span := spanAt(td, ref)
	return spanKey(span.TraceID(), span.SpanID())
}

// spanAt is the span ref locates in td.
func spanAt(td ptrace.Traces, ref spanRef) ptrace.Span {
	return td.ResourceSpans().At(int(ref.rs)).ScopeSpans().At(int(ref.ss)).Spans().At(int(ref.sp))
}

// finishBatch counts what b's appends wrote (the writer says which of its
// file parts are written), settles its deduplication claims and returns
// the spans it did not write (nil when it wrote them all).
func (e *spansExporter) finishBatch(w groupWriter, b *batch, td ptrace.Traces) error {
	errs := w.appended(b)
	if len(errs) == 0 && b.inFlight == 0 {
		e.settleClaims(b, nil)
		w.settled(b, td, nil)
		return nil
	}
	return e.partialFailure(w, b, td, errs)
}

// writtenCounts adds up the lines and bytes of the file parts written, by
// file kind, for the written metric.
type writtenCounts struct{ lines, bytes [3]int }

func (n *writtenCounts) add(fb *fileBatch) {
	k := fileKindIndex(fb.kind)
	n.lines[k] += fb.lines
	n.bytes[k] += fb.size
}

func (n *writtenCounts) report(m *exporterMetrics) {
	for i, kind := range fileKinds {
		if n.lines[i] > 0 {
			m.written(kind, n.lines[i], n.bytes[i])
		}
	}
}

// settleClaims tells the deduplication window which spans of b were
// written (failed: those that were not; nil when all were).
func (e *spansExporter) settleClaims(b *batch, failed []bool) {
	if e.dedup == nil {
		return
	}
	e.dedup.Settle(b.push, b.keys, b.claims, func(i int) bool { return failed == nil || !failed[i] })
}

func (e *spansExporter) partialFailure(w groupWriter, b *batch, td ptrace.Traces, errs []error) error {
	b.failed = append(b.failed[:0], make([]bool, len(b.refs))...)
	for _, fb := range b.files {
		if !fb.ok {
			for _, idx := range fb.spans {
				b.failed[idx] = true
			}
		}
	}
	for idx, ref := range b.refs {
		if ref.claim == dedup.ClaimInFlight {
			b.failed[idx] = true
		}
	}
	e.settleClaims(b, b.failed)
	w.settled(b, td, b.failed)
	out, unwritten := unwrittenSpans(b, td)
	if b.inFlight > 0 {
		errs = append(errs, fmt.Errorf("%d spans are being written by another export in flight (sent twice at once)", b.inFlight))
	}
	// The capture dir and the cause (no space left on device, read-only
	// file system) lead the message: the gym processor's line about the
	// spans it holds for redelivery is this error.
	err := fmt.Errorf("capture dir %s: %w; gymspans exporter: %d of %d spans not written to every file", e.cfg.CaptureDir, oneLine(errs), unwritten, len(b.refs))
	return consumererror.NewTraces(err, out)
}

// unwrittenSpans copies the spans of td that b.failed marks, with their
// resources and scopes, and counts them.
func unwrittenSpans(b *batch, td ptrace.Traces) (ptrace.Traces, int) {
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
		spanAt(td, ref).CopyTo(oss.Spans().AppendEmpty())
	}
	return out, unwritten
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
