// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter"

import (
	"encoding/hex"
	"strconv"

	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/spanjson"
	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
	"github.com/otelcol-gym/otelcol-gym/internal/timesplit"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/service/hostcapabilities"
)

// rootRef is a rollout root of the batch, with the (run, rollout) encode
// found for it and its rollout's file ("" when it has none).
type rootRef struct {
	idx          int32 // into batch.refs
	run, rollout string
	file         string
	line         segment // its rollouts.jsonl line in the batch's arena
	// facts: what the time split keeps of it (hasFacts: the split is on).
	facts    timesplit.Span
	hasFacts bool
}

// marksRoots resolves rollout_roots: whether the roots are the spans the gym
// processor marked, or the parentless ones. auto asks the host the exporter
// was started with (gymProcessorIn).
func marksRoots(rolloutRoots string, host component.Host) bool {
	return rolloutRoots == rootsMarked || (rolloutRoots == rootsAuto && gymProcessorIn(host))
}

// gymProcessorIn reports whether host's collector created a gym processor:
// its factory, which the host hands out, says so (gymconv.RootMarker).
func gymProcessorIn(host component.Host) bool {
	h, ok := host.(hostcapabilities.ComponentFactory)
	if !ok {
		return false
	}
	m, ok := h.GetFactory(component.KindProcessor, gymProcessorType).(gymconv.RootMarker)
	return ok && m.MarksRolloutRoots()
}

var gymProcessorType = component.MustNewType(gymconv.ProcessorType)

// isRoot reports whether span, which has a rollout, is its rollout's root:
// marked nemo.gym.rollout.root = true by the gym processor, which decided
// it; or, with the parentless rule, without a parent (a guess that fails
// when the split is off, or when a rollout's SERVER spans have no CLIENT
// parent).
func isRoot(span ptrace.Span, marked bool) bool {
	if marked {
		v, ok := span.Attributes().Get(gymconv.RolloutRootAttribute)
		return ok && v.Type() == pcommon.ValueTypeBool && v.Bool()
	}
	return span.ParentSpanID().IsEmpty()
}

// encodeRoots counts the batch's ERROR spans per rollout and writes one
// rollouts.jsonl line per rollout root of the batch (isRoot). The group
// writer calls it, for the batches of a group in order, so the counts are
// those of the spans written before the root and with it:
//
//	{"rollout_id","run_id","trace_id","root_span_id","start_time","end_time",
//	 "status","error_count","service_name","name"[,"time_split_ms"]}
//
// error_count is the number of spans of the same (run, rollout) with status
// ERROR that this exporter has consumed up to and including the root's batch
// (the root ends last, so normally all of them). Spans arriving after the
// root are not reflected. The count table is per process and bounded
// (maxTrackedRollouts rollouts, oldest forgotten first).
func (e *spansExporter) encodeRoots(b *batch) {
	for _, k := range b.errSpans {
		n, _ := e.errs.Get(k)
		e.errs.Put(k, n+1)
	}
	e.addSplitSpans(b)
	if len(b.roots) == 0 || e.cfg.RolloutsFile == "" {
		return
	}
	td := b.td
	fb := b.file(e.cfg.RolloutsFile, fileKindRollouts)
	for i, root := range b.roots {
		idx, run, rollout := root.idx, root.run, root.rollout
		ref := b.refs[idx]
		rs := td.ResourceSpans().At(int(ref.rs))
		span := rs.ScopeSpans().At(int(ref.ss)).Spans().At(int(ref.sp))
		resAttrs := rs.Resource().Attributes()
		n, _ := e.errs.Get(rolloutKey(run, rollout))
		tid, sid := span.TraceID(), span.SpanID()
		start := len(b.arena)
		buf := b.arena
		buf = append(buf, `{"rollout_id":`...)
		buf = spanjson.AppendJSONString(buf, rollout)
		buf = append(buf, `,"run_id":`...)
		buf = spanjson.AppendJSONString(buf, run)
		buf = append(buf, `,"trace_id":"`...)
		buf = hex.AppendEncode(buf, tid[:])
		buf = append(buf, `","root_span_id":"`...)
		buf = hex.AppendEncode(buf, sid[:])
		buf = append(buf, `","start_time":`...)
		buf = b.clock.AppendConsoleTime(buf, uint64(span.StartTimestamp()))
		buf = append(buf, `,"end_time":`...)
		buf = b.clock.AppendConsoleTime(buf, uint64(span.EndTimestamp()))
		buf = append(buf, `,"status":"`...)
		buf = append(buf, spanjson.StatusName(span.Status().Code())...)
		buf = append(buf, `","error_count":`...)
		buf = strconv.AppendInt(buf, int64(n), 10)
		buf = append(buf, `,"service_name":`...)
		buf = spanjson.AppendJSONString(buf, e.keys.serviceOf(resAttrs))
		buf = append(buf, `,"name":`...)
		buf = spanjson.AppendJSONString(buf, span.Name())
		buf = e.appendSplit(buf, root)
		buf = append(buf, '}', '\n')
		b.arena = buf
		fb.addSeg(start, len(b.arena))
		fb.lines++
		fb.spans = append(fb.spans, idx)
		b.roots[i].line = segment{start, len(b.arena)}
	}
}

// rolloutKey identifies a rollout across runs (ids repeat across runs).
func rolloutKey(run, rollout string) [2]string { return [2]string{run, rollout} }
