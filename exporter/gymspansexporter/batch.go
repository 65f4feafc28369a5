// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter"

import (
	"slices"
	"strconv"
	"sync"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/dedup"
	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/journal"
	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/spanjson"
	"github.com/otelcol-gym/otelcol-gym/internal/boundedlog"
	"github.com/otelcol-gym/otelcol-gym/internal/timesplit"
)

// A push's batch: every span encoded once into one arena, and each file's
// share of it (per-rollout file, combined file, rollouts.jsonl) as ranges of
// that arena, grouped for OTLP/JSON into one request per file.

// spanRef locates a span of the batch in its Traces.
type spanRef struct {
	rs, ss, sp int32
	retried    bool        // the retry table had it: some files already hold its line
	claim      dedup.Claim // what the deduplication window said (dedup.ClaimNew: written by this push)
}

// fileBatch is the bytes one file gets from one batch.
type fileBatch struct {
	name  string
	kind  string
	segs  []segment // the file's bytes, in order, as ranges of batch.arena
	size  int
	lines int
	spans []int32 // indexes into batch.refs
	ok    bool
	err   error // of the append
	// OTLP/JSON assembly: the ResourceSpans and ScopeSpans open in buf.
	rs, ss int32
}

// segment is a range of batch.arena.
type segment struct{ start, end int }

func (fb *fileBatch) addSeg(start, end int) {
	if n := len(fb.segs); n > 0 && fb.segs[n-1].end == start {
		fb.segs[n-1].end = end
	} else {
		fb.segs = append(fb.segs, segment{start, end})
	}
	fb.size += end - start
}

// batch is the per-push scratch state, reused across pushes. Every line is
// encoded once into arena; a file's bytes are segments of it, written with
// writev, so a line shared by a rollout's file and the combined file is
// never copied (and the combined file's lines are one segment).
type batch struct {
	td        ptrace.Traces
	files     []*fileBatch
	free      []*fileBatch
	byName    map[string]*fileBatch
	byRollout map[[2]string]int32 // index into targets
	targets   []rolloutTarget     // the batch's rollouts, in the order first seen
	refs      []spanRef
	roots     []rootRef
	failed    []bool
	// Deduplication: the push's id, each span's key and claim, how many
	// spans another push in flight writes.
	push     uint32
	keys     []dedup.Key
	claims   []dedup.Claim
	inFlight int
	// Journal mode: the combined file's lines (length and CRC-32C;
	// journalWriter.encoded), the
	// rollouts of the ERROR spans (the writer counts them for
	// rollouts.jsonl), and the combined append's result.
	lines    []journal.LineRef
	errSpans [][2]string
	// The time split (timesplit.go): the process of the resource being
	// encoded (the facts are in targets).
	splitProc timesplit.Process
	combined  *fileBatch
	// journalErr: the group's journal record could not be written, or was
	// cancelled (combined_spans rest): nothing of the batch was written.
	journalErr error
	arena      []byte
	lineStart  int // the current span's encoding in arena
	lineEnd    int
	res        []byte
	scope      []byte
	clock      spanjson.TimeCache
	wake       chan bool // groupCommit: false when written, true to become the writer
}

// batchPool keeps batches for reuse across pushes; it owns its lock.
type batchPool struct {
	mu   sync.Mutex
	free []*batch
}

func (p *batchPool) get() *batch {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.free); n > 0 {
		b := p.free[n-1]
		p.free = p.free[:n-1]
		return b
	}
	return &batch{wake: make(chan bool, 1)}
}

func (p *batchPool) put(b *batch) {
	b.reset()
	p.mu.Lock()
	p.free = append(p.free, b)
	p.mu.Unlock()
}

func (b *batch) reset() {
	for _, fb := range b.files {
		fb.segs, fb.spans = fb.segs[:0], fb.spans[:0]
		fb.size, fb.lines, fb.ok, fb.err = 0, 0, false, nil
		b.free = append(b.free, fb)
	}
	b.files = b.files[:0]
	clear(b.byName)
	clear(b.roots) // let go of the batch's strings
	clear(b.errSpans)
	b.resetTargets()
	b.splitProc = timesplit.Process{}
	b.refs, b.roots, b.failed = b.refs[:0], b.roots[:0], b.failed[:0]
	b.keys, b.claims, b.lines, b.errSpans = b.keys[:0], b.claims[:0], b.lines[:0], b.errSpans[:0]
	b.td, b.push, b.inFlight, b.combined, b.journalErr = ptrace.Traces{}, 0, 0, nil, nil
	// Do not keep a huge arena alive between batches.
	if cap(b.arena) > 16<<20 {
		b.arena = nil
	}
	b.arena = b.arena[:0]
}

func (b *batch) file(name, kind string) *fileBatch {
	if fb := b.byName[name]; fb != nil {
		return fb
	}
	var fb *fileBatch
	if n := len(b.free); n > 0 {
		fb, b.free = b.free[n-1], b.free[:n-1]
	} else {
		fb = &fileBatch{}
	}
	fb.name, fb.kind, fb.rs, fb.ss = name, kind, -1, -1
	if b.byName == nil {
		b.byName = map[string]*fileBatch{}
	}
	b.byName[name] = fb
	b.files = append(b.files, fb)
	return fb
}

// claimSpans asks the deduplication window about every span of td (one
// lock for the batch) and returns how many were written before.
func (e *spansExporter) claimSpans(b *batch, td ptrace.Traces) int {
	if e.dedup == nil {
		return 0
	}
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		sss := rss.At(i).ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			spans := sss.At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				b.keys = append(b.keys, dedup.KeyOf(spans.At(k)))
			}
		}
	}
	b.claims = append(b.claims, make([]dedup.Claim, len(b.keys))...)
	b.push = e.dedup.NewPush()
	e.dedup.Claim(b.push, b.keys, b.claims)
	dups := 0
	for _, c := range b.claims {
		switch c {
		case dedup.ClaimWritten:
			dups++
		case dedup.ClaimInFlight:
			b.inFlight++
		}
	}
	return dups
}

// encode fills b with the lines of every span this push writes (dedup.ClaimNew),
// grouped per file.
func (e *spansExporter) encode(b *batch, td ptrace.Traces) {
	if b.byRollout == nil {
		b.byRollout = map[[2]string]int32{}
	}
	var unkeyed unkeyedSpans
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		resAttrs := rs.Resource().Attributes()
		names := e.keys.namesOf(resAttrs)
		e.splitResource(b, resAttrs, names.Display)
		if e.otlp {
			b.res = spanjson.AppendOTLPResourceOpen(b.res[:0], rs.Resource(), names)
		} else {
			b.res = spanjson.AppendConsoleResource(b.res[:0], rs.Resource(), rs.SchemaUrl(), names)
		}
		sss := rs.ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			ss := sss.At(j)
			if e.otlp {
				b.scope = spanjson.AppendOTLPScopeOpen(b.scope[:0], ss.Scope())
			} else {
				b.scope = spanjson.AppendConsoleScope(b.scope[:0], ss.Scope())
			}
			spans := ss.Spans()
			for k := 0; k < spans.Len(); k++ {
				idx := int32(len(b.refs))
				ref := spanRef{rs: int32(i), ss: int32(j), sp: int32(k)}
				if len(b.claims) > 0 {
					ref.claim = b.claims[idx]
				}
				if ref.claim != dedup.ClaimNew {
					b.refs = append(b.refs, ref)
					continue
				}
				e.encodeSpan(b, td, spans.At(k), resAttrs, idx, ref, &unkeyed)
			}
		}
	}
	if e.otlp {
		e.finishOTLPBatch(b, td)
	}
	if unkeyed.spans > 0 {
		e.logs.warn("no_rollout_attribute", "spans of a rollout lack the exporter's rollout_attribute: they are in the combined file only, "+
			"in no rollout file nor rollouts.jsonl; give the gymspans exporter the gym processor's rollout_attribute",
			zap.String("rollout_attribute", e.cfg.RolloutAttribute), zap.String("seen", unkeyed.mark), zap.Int("spans", unkeyed.spans))
	}
}

// unkeyedSpans counts the spans of a push that are in a rollout but lack the
// rollout attribute; mark is the rollout mark of the last one.
type unkeyedSpans struct {
	spans int
	mark  string
}

// encodeSpan records the ref of a span this push writes (dedup.ClaimNew), the
// idx-th of the batch, encodes its line into the arena and routes it to its
// files. The loop of encode records the other spans' refs itself: a call
// per span this push skips costs a duplicate-heavy push.
func (e *spansExporter) encodeSpan(b *batch, td ptrace.Traces, span ptrace.Span, resAttrs pcommon.Map, idx int32, ref spanRef, unkeyed *unkeyedSpans) {
	var done []string
	if e.retry.active() {
		done, ref.retried = e.retry.files(spanKey(span.TraceID(), span.SpanID()))
	}
	b.refs = append(b.refs, ref)
	b.lineStart = len(b.arena)
	if e.otlp {
		// With its separator: a span that is not first in its
		// group is written as ",{...}".
		b.arena = append(b.arena, ',')
		b.arena = spanjson.AppendOTLPSpan(b.arena, span, &b.clock)
	} else {
		b.arena = spanjson.AppendConsoleSpan(b.arena, span, b.res, b.scope, &b.clock)
	}
	b.lineEnd = len(b.arena)
	e.routeSpan(b, td, span, resAttrs, idx, ref.retried, done, unkeyed)
}

// routeSpan adds the line just encoded (span, the idx-th ref) to its rollout
// file, rollouts.jsonl when it is a root, and the combined file, except
// those of done, which a retry of it already wrote.
func (e *spansExporter) routeSpan(b *batch, td ptrace.Traces, span ptrace.Span, resAttrs pcommon.Map, idx int32, retried bool, done []string, unkeyed *unkeyedSpans) {
	run, rollout := e.keys.rolloutOf(resAttrs, span.Attributes())
	var fb *fileBatch // the span's rollout file
	if rollout == "" {
		if m := e.keys.rolloutMark(resAttrs, span.Attributes()); m != "" {
			unkeyed.spans, unkeyed.mark = unkeyed.spans+1, m
		}
	}
	if rollout != "" {
		if !retried && span.Status().Code() == ptrace.StatusCodeError {
			b.errSpans = append(b.errSpans, rolloutKey(run, rollout))
		}
		t := e.rolloutTarget(b, run, rollout)
		fb = b.targets[t].fb
		atRoot := isRoot(span, e.markedRoots)
		facts, hasFacts := e.splitFacts(b, t, span, retried, atRoot)
		if atRoot && !slices.Contains(done, e.cfg.RolloutsFile) {
			root := rootRef{idx: idx, run: run, rollout: rollout, facts: facts, hasFacts: hasFacts}
			if fb != nil {
				root.file = fb.name
			}
			b.roots = append(b.roots, root)
		}
		if fb != nil && !slices.Contains(done, fb.name) {
			e.add(b, fb, idx, td)
		}
	}
	if fb != nil && e.cfg.restOnly() {
		return // in its rollout file only; the journal has it (internal/journal)
	}
	if e.cfg.CombinedFile != "" && !slices.Contains(done, e.cfg.CombinedFile) {
		if b.combined == nil {
			b.combined = b.file(e.cfg.CombinedFile, fileKindCombined)
		}
		e.add(b, b.combined, idx, td)
	}
}

// finishOTLPBatch closes the OTLP/JSON request of every file of b.
func (e *spansExporter) finishOTLPBatch(b *batch, td ptrace.Traces) {
	for _, fb := range b.files {
		e.finishOTLP(b, fb, td)
	}
}

// rolloutTarget is where a (run, rollout) of the batch goes: its file (nil
// when the ids may not become a file name, and reason why), and the time
// split's facts of its spans in the batch (timesplit.go).
type rolloutTarget struct {
	key    [2]string
	fb     *fileBatch
	reason string
	facts  []timesplit.Span
}

// maxTargetFacts bounds the facts slice a batch keeps for its next push.
const maxTargetFacts = 1 << 12

// newTarget appends a target for key to b.targets, reusing the facts slice
// a batch before left in its place.
func (b *batch) newTarget(key [2]string) int32 {
	n := len(b.targets)
	if n < cap(b.targets) {
		b.targets = b.targets[:n+1]
	} else {
		b.targets = append(b.targets, rolloutTarget{})
	}
	t := &b.targets[n]
	t.key, t.facts = key, t.facts[:0]
	b.byRollout[key] = int32(n)
	return int32(n)
}

// resetTargets lets go of the batch's rollouts and keeps their facts slices.
func (b *batch) resetTargets() {
	clear(b.byRollout)
	for i := range b.targets {
		t := &b.targets[i]
		t.key, t.fb, t.reason = [2]string{}, nil, ""
		if cap(t.facts) > maxTargetFacts {
			t.facts = nil
		}
	}
	b.targets = b.targets[:0]
}

// rolloutTarget returns the index in b.targets of (run, rollout). A rollout
// whose ids may not become a file name is counted per span and logged
// rate-limited.
func (e *spansExporter) rolloutTarget(b *batch, run, rollout string) int32 {
	key := [2]string{run, rollout}
	i, ok := b.byRollout[key]
	if !ok {
		i = b.newTarget(key)
		name, reason := e.names.Render(key)
		if reason == "" {
			b.targets[i].fb = b.file(name, fileKindRollout)
		} else {
			b.targets[i].reason = reason
			e.logs.warn(reason, "rollout span not written to a per-rollout file (it is in the combined file)",
				zap.String("reason", reason), zap.String("rollout_id", strconv.QuoteToASCII(boundedlog.Truncate(rollout, 256))),
				zap.String("run_id", strconv.QuoteToASCII(boundedlog.Truncate(run, 256))))
		}
	}
	if r := b.targets[i].reason; r != "" {
		e.metrics.reject(r, 1)
	}
	return i
}

// keysPerSpan is how many dedup keys a span has in the journal index: one,
// or none without deduplication.
func (e *spansExporter) keysPerSpan() uint32 {
	if e.dedup == nil {
		return 0
	}
	return 1
}

func (e *spansExporter) add(b *batch, fb *fileBatch, idx int32, td ptrace.Traces) {
	fb.spans = append(fb.spans, idx)
	if !e.otlp {
		fb.addSeg(b.lineStart, b.lineEnd)
		fb.lines++
		return
	}
	// OTLP/JSON: open, switch or continue the file's resource and scope group.
	ref := b.refs[idx]
	glue := len(b.arena)
	switch {
	case fb.rs < 0:
		b.arena = append(b.arena, `{"resourceSpans":[`...)
		b.arena = append(b.arena, b.res...)
		b.arena = append(b.arena, b.scope...)
		fb.lines = 1
	case fb.rs != ref.rs:
		b.arena = closeOTLPGroups(b.arena, fb, td)
		b.arena = append(b.arena, ',')
		b.arena = append(b.arena, b.res...)
		b.arena = append(b.arena, b.scope...)
	case fb.ss != ref.ss:
		rs := td.ResourceSpans().At(int(fb.rs))
		b.arena = spanjson.AppendOTLPScopeClose(b.arena, rs.ScopeSpans().At(int(fb.ss)).SchemaUrl())
		b.arena = append(b.arena, ',')
		b.arena = append(b.arena, b.scope...)
	default:
		fb.addSeg(b.lineStart, b.lineEnd) // ",{span}"
		return
	}
	fb.rs, fb.ss = ref.rs, ref.ss
	fb.addSeg(glue, len(b.arena))
	fb.addSeg(b.lineStart+1, b.lineEnd) // "{span}"
}

// closeOTLPGroups appends the end of fb's open scope and resource groups.
func closeOTLPGroups(arena []byte, fb *fileBatch, td ptrace.Traces) []byte {
	rs := td.ResourceSpans().At(int(fb.rs))
	arena = spanjson.AppendOTLPScopeClose(arena, rs.ScopeSpans().At(int(fb.ss)).SchemaUrl())
	return spanjson.AppendOTLPResourceClose(arena, rs.SchemaUrl())
}

func (e *spansExporter) finishOTLP(b *batch, fb *fileBatch, td ptrace.Traces) {
	if fb.kind == fileKindRollouts || fb.rs < 0 {
		return
	}
	glue := len(b.arena)
	b.arena = closeOTLPGroups(b.arena, fb, td)
	b.arena = append(b.arena, ']', '}', '\n')
	fb.addSeg(glue, len(b.arena))
}
