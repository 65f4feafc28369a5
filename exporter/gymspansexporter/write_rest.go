// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter"

import (
	"fmt"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"
)

// writeRest is the group writer with combined_spans rest. Its stages:
//
//	journalSpans   the group's spans (protobuf) and their P record to the
//	               journal: what ConsumeTraces' return stands for
//	writeRestLines the spans in no rollout file to the combined file (an X
//	               record cancels the group when that fails)
//	queuePending   the rollout lines and rollouts.jsonl lines to the pending
//	               store, the spans to the service map
func (e *spansExporter) writeRest(store *fileStore, f *flusher, group []*batch) {
	seq, err := e.journalSpans(group)
	if err != nil {
		for _, b := range group {
			b.journalErr = err
		}
		return
	}
	if err := e.writeRestLines(store, group); err != nil {
		for _, b := range group {
			if b.combined == nil || b.combined.err == nil {
				b.journalErr = err // the whole group: its journal record is cancelled
			}
		}
		if err := e.journal.cancel(seq); err != nil {
			e.logs.warn("journal", "cancelling a journal record failed: after a crash its spans would be completed although their push failed", zap.Error(err))
		}
		return
	}
	e.queuePending(f, group, seq)
}

// journalSpans writes the group's spans to the journal's data file and
// their P record, and returns its sequence number.
func (e *spansExporter) journalSpans(group []*batch) (uint64, error) {
	roots, keys := e.groupRoots(group)
	sb := &e.blob
	sb.reset()
	var m ptrace.ProtoMarshaler
	for _, b := range group {
		proto, err := m.MarshalTraces(b.td)
		if err != nil {
			return 0, fmt.Errorf("journal: marshal spans: %w", err)
		}
		claims := b.claims
		sb.add(proto, len(b.refs), func(i int) bool { return len(claims) == 0 || claims[i] == claimNew })
	}
	p := e.appendGroupTail(appendSpansHeader(e.extent), group, keys, roots)
	e.extent = p
	seq, err := e.journal.addSpans(sb, p, keys)
	sb.reset()
	return seq, err
}

// writeRestLines appends the group's combined-file lines (the spans in no
// rollout file), one append for the group.
func (e *spansExporter) writeRestLines(store *fileStore, group []*batch) error {
	e.commits.write(group, func(fb *fileBatch) bool { return fb.kind == fileKindCombined }, func(name string, iovs [][]byte, size int, rot *rotation) error {
		return store.appendLines(name, iovs, size, appendOpts{kind: fileKindCombined, rot: rot, hold: true})
	}, e.rotationOf)
	for _, b := range group {
		if b.combined != nil && b.combined.err != nil {
			return b.combined.err
		}
	}
	return nil
}
