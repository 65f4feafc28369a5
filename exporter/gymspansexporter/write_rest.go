// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter"

import (
	"fmt"

	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/capturedir"
	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/dedup"
	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/journal"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"
)

// restWriter is the group writer with combined_spans rest: the journal
// holds every span, the combined file only those in no rollout file. It
// admits and settles pushes as journalWriter does. Its stages:
//
//	journalSpans   the group's spans (protobuf) and their P record to the
//	               journal: what ConsumeTraces' return stands for
//	writeRestLines the spans in no rollout file to the combined file (an X
//	               record cancels the group when that fails)
//	queuePending   the rollout lines and rollouts.jsonl lines to the pending
//	               store, the spans to the service map
type restWriter struct {
	journalWriter
	blob journal.SpansBlob // the writer's scratch for span data
}

// encoded: the group's journal record holds its spans, not the combined
// file's lines.
func (w *restWriter) encoded(*batch) {}

func (w *restWriter) writeGroup(group []*batch) {
	e := w.e
	seq, err := w.journalSpans(group)
	if err != nil {
		for _, b := range group {
			b.journalErr = err
		}
		return
	}
	if err := w.writeRestLines(group); err != nil {
		for _, b := range group {
			if b.combined == nil || b.combined.err == nil {
				b.journalErr = err // the whole group: its journal record is cancelled
			}
		}
		if err := e.journal.Cancel(seq); err != nil {
			e.logs.warn("journal", "cancelling a journal record failed: after a crash its spans would be completed although their push failed", zap.Error(err))
		}
		return
	}
	w.queuePending(group, seq)
}

// journalSpans writes the group's spans to the journal's data file and
// their P record, and returns its sequence number.
func (w *restWriter) journalSpans(group []*batch) (uint64, error) {
	e := w.e
	roots, keys := e.groupRoots(group)
	sb := &w.blob
	sb.Reset()
	var m ptrace.ProtoMarshaler
	for _, b := range group {
		proto, err := m.MarshalTraces(b.td)
		if err != nil {
			return 0, fmt.Errorf("journal: marshal spans: %w", err)
		}
		claims := b.claims
		sb.Add(proto, len(b.refs), func(i int) bool { return len(claims) == 0 || claims[i] == dedup.ClaimNew })
	}
	p := appendGroupTail(journal.AppendSpansHeader(w.extent), group, keys, roots)
	w.extent = p
	seq, err := e.journal.AddSpans(sb, p, keys)
	sb.Reset()
	return seq, err
}

// writeRestLines appends the group's combined-file lines (the spans in no
// rollout file), one append for the group.
func (w *restWriter) writeRestLines(group []*batch) error {
	e := w.e
	e.commits.write(group, isCombined, func(name string, iovs [][]byte, size int, rot *capturedir.Rotation) error {
		return w.store.Append(name, iovs, size, capturedir.AppendOpts{Kind: fileKindCombined, Rotate: rot, Hold: true})
	}, e.rotationOf)
	for _, b := range group {
		if b.combined != nil && b.combined.err != nil {
			return b.combined.err
		}
	}
	return nil
}
