// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter"

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"
)

// spansExporter writes every span into the capture dir (SPEC §5.1, §5.2):
//
//	pushTraces → encode each span once (console or OTLP/JSON) → group lines per file
//	(per-rollout, combined, rollouts.jsonl) → fileStore.appendLines per file
//	(flock, torn tail, one write(2)) → the spans of failed files back to the caller
//
// Encoding and the bookkeeping after the write hold mu (the retry and
// rollout tables need no other lock); the appends do not: concurrent pushes
// are written together by groupCommit, one append per file. Nothing is
// queued in memory beyond the pushes in flight: when ConsumeTraces returns
// nil, every line of its batch is in the kernel (a kill -9 loses none); the
// flusher fsyncs.
//
// Partial failure. A span's lines go to up to three files. When some of
// those appends fail, the returned consumererror.Traces holds exactly the
// spans with a line in a failed file, and the retry table remembers, for
// each of them, the files that already hold its line. When a span comes
// again (a retry of the returned data, or the sender re-sending the batch),
// its line goes only to the files that lack it, so once writes succeed
// every span is in every file exactly once. The table is bounded
// (maxRetrySpans, oldest forgotten first); it is empty while writes succeed.
type spansExporter struct {
	cfg      *Config
	logger   *zap.Logger
	logs     *logLimiter
	metrics  *exporterMetrics
	tmpl     *pathTemplate
	rot      *rotation
	otlp     bool
	write    sysWrite
	filePerm os.FileMode
	dirPerm  os.FileMode

	// observers see every span once it is written; the service-map writer
	// (service_map.*) plugs in here.
	observers []spanObserver

	commits  groupCommit
	inflight sync.WaitGroup // pushes past encoding; shutdown waits for them
	active   atomic.Int32   // pushes in pushTraces; the last out calls store.idle

	mu      sync.Mutex
	store   *fileStore
	free    []*batch                             // batches to reuse
	retry   *boundedTable[[24]byte, []string]    // span → files already holding its line
	errs    *boundedTable[[2]string, int]        // (run, rollout) → ERROR spans seen
	names   *boundedTable[[2]string, nameResult] // (run, rollout) → rendered file name
	stop    chan struct{}
	stopped chan struct{}
}

// spanObserver is told about every span written, and flushed with the files.
type spanObserver interface {
	observe(res pcommon.Resource, span ptrace.Span)
	flush() error
	shutdown() error
}

const (
	maxRetrySpans      = 1 << 17
	maxTrackedRollouts = 1 << 17
	maxCachedNames     = 1 << 14
)

// nameResult is a rendered per-rollout file name, or why there is none.
type nameResult struct{ name, reason string }

func newSpansExporter(set exporter.Settings, cfg *Config) (*spansExporter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("gymspans exporter: %w", err)
	}
	logs := newLogLimiter(set.Logger, time.Minute)
	m, err := newExporterMetrics(set.TelemetrySettings, logs)
	if err != nil {
		return nil, fmt.Errorf("gymspans exporter: metrics: %w", err)
	}
	filePerm, _ := parsePerm(cfg.FilePermissions)
	dirPerm, _ := parsePerm(cfg.DirectoryPermissions)
	tmpl := newPathTemplate(cfg.PathTemplate, cfg.CombinedFile, cfg.RolloutsFile, cfg.ServiceMap.JSONFile, cfg.ServiceMap.MarkdownFile)
	tmpl.rotated = cfg.CombinedFile
	return &spansExporter{
		cfg:      cfg,
		logger:   set.Logger,
		logs:     logs,
		metrics:  m,
		tmpl:     tmpl,
		rot:      &rotation{maxBytes: int64(cfg.Rotation.MaxMegabytes) << 20, maxBackups: cfg.Rotation.MaxBackups},
		otlp:     cfg.Format == formatOTLPJSON,
		write:    writeSeam(),
		filePerm: filePerm,
		dirPerm:  dirPerm,
		retry:    newBoundedTable[[24]byte, []string](maxRetrySpans),
		errs:     newBoundedTable[[2]string, int](maxTrackedRollouts),
		names:    newBoundedTable[[2]string, nameResult](maxCachedNames),
	}, nil
}

func (e *spansExporter) start(context.Context, component.Host) error {
	if err := ensureDir(e.cfg.CaptureDir, e.dirPerm); err != nil {
		return fmt.Errorf("gymspans exporter: capture_dir: %w", err)
	}
	store, err := openFileStore(e.cfg.CaptureDir, e.filePerm, e.cfg.MaxOpenFiles, e.metrics)
	if err != nil {
		return fmt.Errorf("gymspans exporter: %w", err)
	}
	store.write = e.write
	store.startHolding(e.cfg.LockHold, e.commits.whenIdle)
	e.commits.afterGroup = func() { store.expireKept(time.Now()) }
	if e.cfg.ServiceMap.Enabled && len(e.observers) == 0 {
		sm, err := newServiceMapObserver(e.cfg, e.logger)
		if err != nil {
			_ = store.close()
			return fmt.Errorf("gymspans exporter: %w", err)
		}
		e.observers = append(e.observers, sm)
	}
	e.mu.Lock()
	e.store = store
	e.stop = make(chan struct{})
	e.stopped = make(chan struct{})
	e.mu.Unlock()
	go e.flushLoop(store, e.stop, e.stopped)
	return nil
}

// flushLoop fsyncs what was written, at most every flush_interval.
func (e *spansExporter) flushLoop(store *fileStore, stop <-chan struct{}, stopped chan<- struct{}) {
	tickUntil(e.cfg.FlushInterval, stop, stopped, func() {
		_ = store.flush() // failures are counted and logged by the store
		for _, o := range e.observers {
			if err := o.flush(); err != nil {
				e.logs.warn("observer", "flush failed", zap.Error(err))
			}
		}
	})
}

// tickUntil calls f every d until stop is closed, then closes stopped.
func tickUntil(d time.Duration, stop <-chan struct{}, stopped chan<- struct{}, f func()) {
	defer close(stopped)
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			f()
		}
	}
}

func (e *spansExporter) shutdown(context.Context) error {
	e.mu.Lock()
	store, stop, stopped := e.store, e.stop, e.stopped
	e.store = nil
	e.mu.Unlock()
	if store == nil {
		return nil
	}
	e.inflight.Wait()
	close(stop)
	<-stopped
	var errs []error
	for _, o := range e.observers {
		errs = append(errs, o.shutdown())
	}
	errs = append(errs, store.close())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("gymspans exporter: shutdown: %w", err)
	}
	return nil
}

// spanRef locates a span of the batch in its Traces.
type spanRef struct {
	rs, ss, sp int32
	retried    bool // the retry table had it: some files already hold its line
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
	files     []*fileBatch
	free      []*fileBatch
	byName    map[string]*fileBatch
	byRollout map[[2]string]rolloutTarget
	refs      []spanRef
	roots     []int32
	failed    []bool
	arena     []byte
	lineStart int // the current span's encoding in arena
	lineEnd   int
	res       []byte
	scope     []byte
	clock     timeCache
	wake      chan bool // groupCommit: false when written, true to become the writer
}

func (b *batch) reset() {
	for _, fb := range b.files {
		fb.segs, fb.spans = fb.segs[:0], fb.spans[:0]
		fb.size, fb.lines, fb.ok, fb.err = 0, 0, false, nil
		b.free = append(b.free, fb)
	}
	b.files = b.files[:0]
	clear(b.byName)
	clear(b.byRollout)
	b.refs, b.roots, b.failed = b.refs[:0], b.roots[:0], b.failed[:0]
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

func (e *spansExporter) pushTraces(_ context.Context, td ptrace.Traces) error {
	e.mu.Lock()
	store := e.store
	if store == nil {
		e.mu.Unlock()
		return errors.New("gymspans exporter: not started")
	}
	var b *batch
	if n := len(e.free); n > 0 {
		b, e.free = e.free[n-1], e.free[:n-1]
	} else {
		b = &batch{wake: make(chan bool, 1)}
	}
	e.active.Add(1)
	defer func() {
		if e.active.Add(-1) == 0 {
			store.idle()
		}
	}()
	e.encode(b, td)
	e.encodeRoots(b, td)
	e.inflight.Add(1)
	e.mu.Unlock()
	defer e.inflight.Done()

	e.commits.commit(b, store.appendLines, e.rotationOf)

	e.mu.Lock()
	defer e.mu.Unlock()
	err := e.finishBatch(b, td)
	b.reset()
	e.free = append(e.free, b)
	return err
}

// rotationOf is the rotation of a file kind (only the combined file rotates).
func (e *spansExporter) rotationOf(kind string) *rotation {
	if kind == fileKindCombined {
		return e.rot
	}
	return nil
}

// encode fills b with every span's lines, grouped per file.
func (e *spansExporter) encode(b *batch, td ptrace.Traces) {
	if b.byRollout == nil {
		b.byRollout = map[[2]string]rolloutTarget{}
	}
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		resAttrs := rs.Resource().Attributes()
		run := strAttr(resAttrs, attrRunID)
		resRollout := strAttr(resAttrs, attrRolloutID)
		if e.otlp {
			b.res = appendOTLPResourceOpen(b.res[:0], rs.Resource())
		} else {
			b.res = appendConsoleResource(b.res[:0], rs.Resource(), rs.SchemaUrl())
		}
		sss := rs.ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			ss := sss.At(j)
			if e.otlp {
				b.scope = appendOTLPScopeOpen(b.scope[:0], ss.Scope())
			} else {
				b.scope = appendConsoleScope(b.scope[:0], ss.Scope())
			}
			spans := ss.Spans()
			for k := 0; k < spans.Len(); k++ {
				span := spans.At(k)
				idx := int32(len(b.refs))
				ref := spanRef{rs: int32(i), ss: int32(j), sp: int32(k)}
				var done []string
				if e.retry.len() > 0 {
					done, ref.retried = e.retry.get(spanKey(span.TraceID(), span.SpanID()))
				}
				b.refs = append(b.refs, ref)
				b.lineStart = len(b.arena)
				if e.otlp {
					// With its separator: a span that is not first in its
					// group is written as ",{...}".
					b.arena = append(b.arena, ',')
					b.arena = appendOTLPSpan(b.arena, span, &b.clock)
				} else {
					b.arena = appendConsoleSpan(b.arena, span, b.res, b.scope, &b.clock)
				}
				b.lineEnd = len(b.arena)
				rollout := strAttr(span.Attributes(), attrRolloutID)
				if rollout == "" {
					rollout = resRollout
				}
				if rollout != "" {
					spanRun := run
					if spanRun == "" {
						spanRun = strAttr(span.Attributes(), attrSpanRunID)
					}
					if !ref.retried && span.Status().Code() == ptrace.StatusCodeError {
						k := rolloutKey(spanRun, rollout)
						n, _ := e.errs.get(k)
						e.errs.put(k, n+1)
					}
					if span.ParentSpanID().IsEmpty() && e.cfg.RolloutsFile != "" && !contains(done, e.cfg.RolloutsFile) {
						b.roots = append(b.roots, idx)
					}
					if fb := e.rolloutFile(b, spanRun, rollout); fb != nil && !contains(done, fb.name) {
						e.add(b, fb, idx, td)
					}
				}
				if e.cfg.CombinedFile != "" && !contains(done, e.cfg.CombinedFile) {
					e.add(b, b.file(e.cfg.CombinedFile, fileKindCombined), idx, td)
				}
			}
		}
	}
	if e.otlp {
		for _, fb := range b.files {
			e.finishOTLP(b, fb, td)
		}
	}
}

// rolloutTarget is where a (run, rollout) of the batch goes: its file, or
// the reason it may not have one.
type rolloutTarget struct {
	fb     *fileBatch
	reason string
}

// rolloutFile returns the batch file of (run, rollout), or nil when the ids
// may not become a file name (counted per span, logged rate-limited).
func (e *spansExporter) rolloutFile(b *batch, run, rollout string) *fileBatch {
	key := [2]string{run, rollout}
	tgt, ok := b.byRollout[key]
	if !ok {
		res, cached := e.names.get(key)
		if !cached {
			res.name, res.reason = e.tmpl.render(run, rollout)
			e.names.put(key, res)
		}
		name, reason := res.name, res.reason
		if reason == "" {
			tgt.fb = b.file(name, fileKindRollout)
		} else {
			tgt.reason = reason
			e.logs.warn(reason, "rollout span not written to a per-rollout file (it is in the combined file)",
				zap.String("reason", reason), zap.String("rollout_id", strconv.QuoteToASCII(truncate(rollout, 256))),
				zap.String("run_id", strconv.QuoteToASCII(truncate(run, 256))))
		}
		b.byRollout[key] = tgt
	}
	if tgt.reason != "" {
		e.metrics.reject(tgt.reason, 1)
	}
	return tgt.fb
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
		b.arena = appendOTLPScopeClose(b.arena, rs.ScopeSpans().At(int(fb.ss)).SchemaUrl())
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
	arena = appendOTLPScopeClose(arena, rs.ScopeSpans().At(int(fb.ss)).SchemaUrl())
	return appendOTLPResourceClose(arena, rs.SchemaUrl())
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

// encodeRoots writes one rollouts.jsonl line per rollout root of the batch
// (a span with nemo.gym.rollout.id and no parent):
//
//	{"rollout_id","run_id","trace_id","root_span_id","start_time","end_time",
//	 "status","error_count","service_name","name"}
//
// error_count is the number of spans of the same (run, rollout) with status
// ERROR that this exporter has consumed up to and including the root's batch
// (the root ends last, so normally all of them). Spans arriving after the
// root are not reflected. The count table is per process and bounded
// (maxTrackedRollouts rollouts, oldest forgotten first).
func (e *spansExporter) encodeRoots(b *batch, td ptrace.Traces) {
	if len(b.roots) == 0 {
		return
	}
	fb := b.file(e.cfg.RolloutsFile, fileKindRollouts)
	for _, idx := range b.roots {
		ref := b.refs[idx]
		rs := td.ResourceSpans().At(int(ref.rs))
		span := rs.ScopeSpans().At(int(ref.ss)).Spans().At(int(ref.sp))
		resAttrs := rs.Resource().Attributes()
		rollout := strAttr(span.Attributes(), attrRolloutID)
		if rollout == "" {
			rollout = strAttr(resAttrs, attrRolloutID)
		}
		run := strAttr(resAttrs, attrRunID)
		if run == "" {
			run = strAttr(span.Attributes(), attrSpanRunID)
		}
		n, _ := e.errs.get(rolloutKey(run, rollout))
		tid, sid := span.TraceID(), span.SpanID()
		start := len(b.arena)
		buf := b.arena
		buf = append(buf, `{"rollout_id":`...)
		buf = appendJSONString(buf, rollout)
		buf = append(buf, `,"run_id":`...)
		buf = appendJSONString(buf, run)
		buf = append(buf, `,"trace_id":"`...)
		buf = appendHex(buf, tid[:])
		buf = append(buf, `","root_span_id":"`...)
		buf = appendHex(buf, sid[:])
		buf = append(buf, `","start_time":`...)
		buf = b.clock.appendConsoleTime(buf, uint64(span.StartTimestamp()))
		buf = append(buf, `,"end_time":`...)
		buf = b.clock.appendConsoleTime(buf, uint64(span.EndTimestamp()))
		buf = append(buf, `,"status":"`...)
		buf = append(buf, statusName(span.Status().Code())...)
		buf = append(buf, `","error_count":`...)
		buf = strconv.AppendInt(buf, int64(n), 10)
		buf = append(buf, `,"service_name":`...)
		buf = appendJSONString(buf, serviceOf(resAttrs))
		buf = append(buf, `,"name":`...)
		buf = appendJSONString(buf, span.Name())
		buf = append(buf, '}', '\n')
		b.arena = buf
		fb.addSeg(start, len(b.arena))
		fb.lines++
		fb.spans = append(fb.spans, idx)
	}
}

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
				e.retry.delete(spanKey(span.TraceID(), span.SpanID()))
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
				e.retry.delete(key)
			}
			continue
		}
		prev, _ := e.retry.get(key)
		e.retry.put(key, append(prev, written[int32(idx)]...))
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

// observe hands the spans whose lines are now in every file to the
// observers (a span that failed before is observed when its retry succeeds).
func (e *spansExporter) observe(b *batch, td ptrace.Traces) {
	if len(e.observers) == 0 {
		return
	}
	for idx, ref := range b.refs {
		if len(b.failed) > 0 && b.failed[idx] {
			continue
		}
		rs := td.ResourceSpans().At(int(ref.rs))
		span := rs.ScopeSpans().At(int(ref.ss)).Spans().At(int(ref.sp))
		for _, o := range e.observers {
			o.observe(rs.Resource(), span)
		}
	}
}

// testSeam replaces write(2) in tests that build the exporter through the
// factory.
var testSeam sysWrite

func writeSeam() sysWrite {
	if testSeam != nil {
		return testSeam
	}
	return defaultWrite
}

var fileKinds = [3]string{fileKindRollout, fileKindCombined, fileKindRollouts}

func fileKindIndex(kind string) int {
	for i, k := range fileKinds {
		if k == kind {
			return i
		}
	}
	return 0
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// ensureDir creates a missing capture dir with perm (not subject to umask).
func ensureDir(dir string, perm os.FileMode) error {
	if fi, err := os.Stat(dir); err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("%q is not a directory", dir)
		}
		return nil
	}
	if err := os.MkdirAll(dir, perm); err != nil {
		return err
	}
	return os.Chmod(dir, perm)
}
