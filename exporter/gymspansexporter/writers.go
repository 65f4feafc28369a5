// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter"

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/capturedir"
	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/dedup"
	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/journal"
	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/pending"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"
)

// groupWriter is how a started exporter writes its pushes' batches. Start
// picks one for the configuration: throughWriter with combined_file "",
// journalWriter with the combined file, restWriter with combined_spans
// rest; pushTraces never asks which.
type groupWriter interface {
	// admit waits until a push may encode and queue its batch.
	admit(ctx context.Context) error
	// encoded is told of b once it is encoded, before it queues (on the
	// pushing goroutine).
	encoded(b *batch)
	// writeGroup writes the batches of the pushes that queued together
	// (commit.go); it runs as the group's writer.
	writeGroup(group []*batch)
	// appended marks which of b's file parts are written (fileBatch.ok),
	// counts them and returns the errors of those that are not.
	appended(b *batch) []error
	// settled is told, once b's deduplication claims are settled, which
	// spans of b were not written (failed; nil when all were).
	settled(b *batch, td ptrace.Traces, failed []bool)
}

// newGroupWriter picks the writer of the configuration (journal mode when
// start opened the journal).
func (e *spansExporter) newGroupWriter(store *capturedir.Store, f *flusher) groupWriter {
	switch {
	case e.journal != nil && e.cfg.restOnly():
		return &restWriter{journalWriter: journalWriter{e: e, store: store, flush: f}}
	case e.journal != nil:
		return &journalWriter{e: e, store: store, flush: f}
	default:
		return &throughWriter{e: e, store: store}
	}
}

// throughWriter appends every file of a group before the pushes return
// (combined_file ""); the spans of failed appends go back to the caller,
// and the retry table remembers which files hold them (retry.go).
type throughWriter struct {
	e     *spansExporter
	store *capturedir.Store
}

func (w *throughWriter) admit(context.Context) error { return nil }

func (w *throughWriter) encoded(*batch) {}

func (w *throughWriter) writeGroup(group []*batch) {
	e := w.e
	for _, b := range group {
		e.encodeRoots(b)
	}
	e.commits.write(group, func(*fileBatch) bool { return true }, func(name string, iovs [][]byte, size int, rot *capturedir.Rotation) error {
		return w.store.Append(name, iovs, size, capturedir.AppendOpts{Kind: e.kindOf(name), Rotate: rot, Hold: true})
	}, e.rotationOf)
}

func (w *throughWriter) appended(b *batch) []error {
	e := w.e
	var errs []error
	var n writtenCounts
	for _, fb := range b.files {
		switch {
		case fb.err == nil:
			fb.ok = true
			n.add(fb)
		case fb.kind == fileKindRollout && errors.Is(fb.err, capturedir.ErrUnsafeFile):
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
	n.report(e.metrics)
	return errs
}

// settled updates the retry table and hands the spans now in every file to
// the service map (a span that failed is observed when its retry succeeds).
func (w *throughWriter) settled(b *batch, td ptrace.Traces, failed []bool) {
	w.e.retry.settle(b, td, failed)
	w.e.observe(b, td)
}

// journalWriter appends a group's lines to the combined file only, recorded
// in the journal index under its lock; once they are there, the rollout
// lines and the roots' rollouts.jsonl lines go to the pending store (the
// flusher writes them) and the spans to the service map.
type journalWriter struct {
	e      *spansExporter
	store  *capturedir.Store
	flush  *flusher
	extent []byte // the writer's scratch for journal records
}

// admit holds a push while the rollout lines waiting for their files reach
// max_pending_bytes, until the flusher has written them.
func (w *journalWriter) admit(ctx context.Context) error {
	p := w.e.pending
	if err := p.WaitBelow(ctx, w.e.cfg.MaxPendingBytes, w.flush.poke); err != nil {
		return fmt.Errorf("gymspans exporter: %d bytes of rollout lines wait for their files (max_pending_bytes): %w", p.Size(), err)
	}
	return nil
}

// encoded records the length and CRC-32C of each line b appends to the
// combined file, for its group's extent: each console line (every one ends
// with its only '\n'), or the batch's one OTLP/JSON request.
func (w *journalWriter) encoded(b *batch) {
	fb := b.combined
	if fb == nil {
		return
	}
	if w.e.otlp {
		crc := uint32(0)
		for _, sg := range fb.segs {
			crc = journal.Checksum(crc, b.arena[sg.start:sg.end])
		}
		keys := 0
		if w.e.dedup != nil {
			keys = len(fb.spans)
		}
		b.lines = append(b.lines, journal.LineRef{N: uint32(fb.size), CRC: crc, Keys: uint32(keys)})
		return
	}
	keys := w.e.keysPerSpan()
	for _, sg := range fb.segs {
		for seg := b.arena[sg.start:sg.end]; len(seg) > 0; {
			n := bytes.IndexByte(seg, '\n') + 1
			if n == 0 {
				n = len(seg)
			}
			b.lines = append(b.lines, journal.LineRef{N: uint32(n), CRC: journal.Checksum(0, seg[:n]), Keys: keys})
			seg = seg[n:]
		}
	}
}

func (w *journalWriter) writeGroup(group []*batch) {
	e := w.e
	roots, keys := e.groupRoots(group)
	lines := 0
	for _, b := range group {
		lines += len(b.lines)
	}
	var seq uint64
	before := func(ino uint64, off int64) error {
		p := journal.AppendExtentHeader(w.extent, ino, off, lines)
		for _, b := range group {
			for _, l := range b.lines {
				p = journal.AppendLineRef(p, l)
			}
		}
		p = appendGroupTail(p, group, keys, roots)
		w.extent = p
		s, err := e.journal.AddExtent(p, keys)
		seq = s
		return err
	}
	e.commits.write(group, isCombined, func(name string, iovs [][]byte, size int, rot *capturedir.Rotation) error {
		return w.store.Append(name, iovs, size, capturedir.AppendOpts{Kind: fileKindCombined, Rotate: rot, Hold: true, Before: before})
	}, e.rotationOf)
	w.queuePending(group, seq)
}

// isCombined keeps the combined file's parts of a group.
func isCombined(fb *fileBatch) bool { return fb.kind == fileKindCombined }

// appended: a batch's combined-file part is its only append; its other
// parts wait in the pending store and count as written once it is, and
// none does when it (or its group's journal record) failed.
func (w *journalWriter) appended(b *batch) []error {
	e := w.e
	var errs []error
	var n writtenCounts
	for _, fb := range b.files {
		switch {
		case fb.kind != fileKindCombined:
			fb.ok = true // written from memory by the flusher
		case fb.err == nil:
			fb.ok = true
			n.add(fb)
		default:
			e.metrics.writeFailed(fb.kind)
			errs = append(errs, fb.err)
		}
	}
	if b.journalErr != nil {
		e.metrics.writeFailed(fileKindCombined)
		errs = append(errs, b.journalErr)
	}
	if b.journalErr != nil || (b.combined != nil && b.combined.err != nil) {
		// Nothing of the batch was written (a group writes one file, and
		// with combined_spans rest one journal record before it).
		for _, fb := range b.files {
			fb.ok = false
		}
	}
	n.report(e.metrics)
	return errs
}

// settled: the group writer handed the written spans to the service map.
func (w *journalWriter) settled(*batch, ptrace.Traces, []bool) {}

// groupRoots encodes the group's rollouts.jsonl lines and returns them, with
// the number of dedup keys of the spans the group writes.
func (e *spansExporter) groupRoots(group []*batch) (roots [][]byte, keys int) {
	for _, b := range group {
		e.encodeRoots(b)
		for _, r := range b.roots {
			if r.line.end > r.line.start {
				roots = append(roots, b.arena[r.line.start:r.line.end])
			}
		}
		for _, c := range b.claims {
			if c == dedup.ClaimNew {
				keys++
			}
		}
	}
	return roots, keys
}

// appendGroupTail appends what every journal record of a group ends with:
// the dedup keys of the spans it writes, then its rollouts.jsonl lines.
func appendGroupTail(p []byte, group []*batch, keys int, roots [][]byte) []byte {
	p = journal.AppendCount(p, keys)
	for _, b := range group {
		for i, c := range b.claims {
			if c == dedup.ClaimNew {
				p = append(p, b.keys[i][:]...)
			}
		}
	}
	return journal.AppendRoots(p, roots)
}

// queuePending hands the rollout lines and rollouts.jsonl lines of the
// group's batches that were written (journal record seq) to the pending
// store, and their spans to the service map.
func (w *journalWriter) queuePending(group []*batch, seq uint64) {
	e := w.e
	var ok []*batch
	for _, b := range group {
		if b.journalErr == nil && (b.combined == nil || b.combined.err == nil) {
			ok = append(ok, b)
		}
	}
	if len(ok) == 0 || seq == 0 {
		return
	}
	due := e.pending.AddGroup(seq, e.cfg.MaxPendingBytes, func(a *pending.Adder) {
		for _, b := range ok {
			for _, fb := range b.files {
				if fb.kind == fileKindRollout && fb.size > 0 {
					pf := a.File(fb.name)
					for _, sg := range fb.segs {
						a.Copy(pf, b.arena[sg.start:sg.end])
					}
					a.Count(pf, fb.lines, len(fb.spans))
				}
			}
			for _, r := range b.roots {
				a.Root(r.file, b.arena[r.line.start:r.line.end])
			}
		}
	})
	if e.sm != nil {
		e.sm.observeAt(e.journal.ID(), seq+1, writtenSpans(ok))
	}
	if due {
		w.flush.poke()
	}
}

// writtenSpans yields the spans the batches wrote (dedup.ClaimNew), with their
// resources.
func writtenSpans(group []*batch) func(yield func(pcommon.Resource, ptrace.Span) bool) {
	return func(yield func(pcommon.Resource, ptrace.Span) bool) {
		for _, b := range group {
			for _, ref := range b.refs {
				if ref.claim != dedup.ClaimNew {
					continue
				}
				rs := b.td.ResourceSpans().At(int(ref.rs))
				if !yield(rs.Resource(), rs.ScopeSpans().At(int(ref.ss)).Spans().At(int(ref.sp))) {
					return
				}
			}
		}
	}
}
