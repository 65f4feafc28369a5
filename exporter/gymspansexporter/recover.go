// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter"

import (
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/journal"
	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/recovery"
	"github.com/otelcol-gym/otelcol-gym/internal/servicemap"
)

// recoveryOptions are the values recovery (internal/recovery) works over
// for e's configuration, completing into j's dir.
func (e *spansExporter) recoveryOptions(j *journal.Index) recovery.Options {
	var sm *servicemap.Map
	if e.sm != nil {
		sm = e.sm.m
	}
	return recovery.Options{
		Logger: e.logger, Warn: e.logs.warn, Recovered: e.metrics.recoveredLines,
		Journal: j, ServiceMap: sm, Dedup: e.dedup,
		RolloutOf: e.keys.rolloutOf, Template: e.tmpl, OTLP: e.otlp, Encode: e.encodeRecovered,
		CombinedFile: e.cfg.CombinedFile, RolloutsFile: e.cfg.RolloutsFile, WindowSpans: e.cfg.DedupWindowSpans,
		RolloutKind: fileKindRollout, RolloutsKind: fileKindRollouts,
	}
}

// encodeRecovered encodes recovered spans as name's OTLP/JSON line (the
// recovery's Options.Encode).
func (e *spansExporter) encodeRecovered(td ptrace.Traces, name string) []byte {
	b := &batch{}
	b.td = td
	e.encode(b, td)
	fb := b.byName[name]
	if fb == nil {
		return nil
	}
	var out []byte
	for _, sg := range fb.segs {
		out = append(out, b.arena[sg.start:sg.end]...)
	}
	return out
}
