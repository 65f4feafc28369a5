// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import (
	"strings"
	"sync"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
	"github.com/otelcol-gym/otelcol-gym/internal/hostport"
	"github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/repair"
	"github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/rollout"

	conventions "go.opentelemetry.io/otel/semconv/v1.37.0"
)

// batchFacts is what the processor reads from an incoming batch before it
// takes the lock: everything that depends only on the batch and the
// configuration (attribute scans, evidence, ids, index hashes, keys), so
// that concurrent callers do it in parallel and the locked section only
// looks up and updates state. The batch is the caller's until it is
// consumed, so the facts still hold when the engine meets each span.
type batchFacts struct {
	res   []resFacts  // per ResourceSpans
	scope []int       // per ScopeSpans (res[i].scope + j): index of its first span in spans
	spans []spanFacts // every span, in batch order
}

// resFacts is what a ResourceSpans' attributes say.
type resFacts struct {
	scope       int // index of its first ScopeSpans in batchFacts.scope
	run         string
	service     string
	serviceOrch bool   // its server type is orchestrator, or its service ends so
	proc        string // service.name, host.name, process.pid
}

// spanFacts is what one span's own fields say: to the rollout core, and to
// the service-map repair.
type spanFacts struct {
	core   rollout.Facts
	repair repair.Span // but for Service and Origin, which the engine sets
	edit   editFacts
	held   bool // set by the engine: the span left its batch (held, or a copy of a held one)
}

// editFacts is what the rewrite of a span needs not write: its rollout
// attribute holds its rollout already (its direct evidence), it has a
// valid nemo.gym.original_trace_id.
type editFacts struct {
	rolloutInAttr, hasOrig bool
}

var factsPool = sync.Pool{New: func() any { return new(batchFacts) }}

// maxPooledFacts keeps a rare huge batch from pinning its facts in the pool.
const maxPooledFacts = 1 << 14

func (f *batchFacts) release() {
	if cap(f.spans) > maxPooledFacts {
		return
	}
	clear(f.res)
	clear(f.spans)
	f.res, f.scope, f.spans = f.res[:0], f.scope[:0], f.spans[:0]
	factsPool.Put(f)
}

// prepare reads td's facts. It reads the engine's configuration and hash
// seed, never its state, and runs without the lock.
func (e *engine) prepare(td ptrace.Traces) *batchFacts {
	f := factsPool.Get().(*batchFacts)
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		f.res = append(f.res, e.resourceFacts(rs.Resource(), len(f.scope)))
		sss := rs.ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			f.scope = append(f.scope, len(f.spans))
			spans := sss.At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				f.spans = append(f.spans, spanFacts{})
				e.spanFacts(spans.At(k), &f.spans[len(f.spans)-1])
			}
		}
	}
	return f
}

func (e *engine) resourceFacts(res pcommon.Resource, scope int) resFacts {
	attrs := res.Attributes()
	rf := resFacts{scope: scope, run: resourceString(attrs, e.cfg.RunAttribute)}
	for _, k := range e.cfg.ServiceAttributes {
		if rf.service = resourceString(attrs, k); rf.service != "" {
			break
		}
	}
	rf.serviceOrch = resourceString(attrs, gymconv.ServerTypeAttribute) == gymconv.ServerTypeOrchestrator || strings.HasSuffix(rf.service, "orchestrator")
	rf.proc = resourceString(attrs, string(conventions.ServiceNameKey)) + "\x00" + resourceString(attrs, string(conventions.HostNameKey)) + "\x00" +
		resourceString(attrs, "process.pid")
	return rf
}

func (e *engine) spanFacts(sp ptrace.Span, sf *spanFacts) {
	attrs := sp.Attributes()
	cf := &sf.core
	cf.Evidence, sf.edit.rolloutInAttr = e.ev.Find(attrs)
	var orig pcommon.TraceID
	orig, sf.edit.hasOrig = spanOriginalTrace(sp)
	cf.Key = rollout.Key{Trace: orig, Span: sp.SpanID()}
	if cf.Evidence == "" {
		cf.ObservabilityOff = e.ev.ObservabilityOffSign(sp)
	}
	if cf.Key.Span != [8]byte{} {
		// Most spans arrive before any child names them: their node is
		// new, and allocating it here keeps the allocation out of the lock.
		cf.Node = rollout.NewNode()
		cf.Hash = e.hasher.Hash(cf.Key)
	}
	pid := sp.ParentSpanID()
	if !pid.IsEmpty() {
		cf.Parent = pid
		cf.ParentHash = e.hasher.Hash(rollout.Key{Trace: cf.Key.Trace, Span: pid})
	}
	_, cf.Job = e.jobNames[sp.Name()]
	cf.LocalRequest = requestWithLocalParent(sp)
	cf.Start, cf.End = int64(sp.StartTimestamp()), int64(sp.EndTimestamp())
	kind := sp.Kind()
	// Gym calls a few routes with no traceparent by design: not a problem.
	cf.ServerWithoutParent = kind == ptrace.SpanKindServer && pid.IsEmpty() && !gymconv.ParentlessByDesign(sp.Name(), attrs)
	e.repairFacts(sp, kind, &sf.repair)
}

// repairFacts reads what the service-map repair asks of a span.
func (e *engine) repairFacts(sp ptrace.Span, kind ptrace.SpanKind, rf *repair.Span) {
	attrs := sp.Attributes()
	rf.NoParent = sp.ParentSpanID().IsEmpty()
	rf.RolloutSpan = sp.Name() == gymconv.RolloutSpanName
	switch kind {
	case ptrace.SpanKindServer:
		rf.Kind = repair.KindServer
		rf.Synthetic = isSynthetic(attrs)
		if e.cfg.ServiceMap.Enabled {
			rf.ServerHP = hostport.Server(attrs)
		}
	case ptrace.SpanKindClient:
		rf.Kind = repair.KindClient
		if e.cfg.ServiceMap.Enabled {
			_, rf.HasPeerService = attrs.Get(attrPeerService)
			rf.ClientHP = hostport.Client(attrs)
		}
	case ptrace.SpanKindInternal:
		rf.Kind = repair.KindInternal
	}
}

// spanOriginalTrace returns the trace id the span had before any gym
// processor rewrote it: nemo.gym.original_trace_id when valid (has), else
// its own.
func spanOriginalTrace(sp ptrace.Span) (id pcommon.TraceID, has bool) {
	if id, ok := gymconv.OriginalTraceID(sp.Attributes()); ok {
		return id, true
	}
	return sp.TraceID(), false
}

// isSynthetic reports whether a span was synthesized by a gym processor.
func isSynthetic(attrs pcommon.Map) bool {
	v, ok := attrs.Get(attrSynthetic)
	return ok && v.Type() == pcommon.ValueTypeBool && v.Bool()
}

func resourceString(attrs pcommon.Map, key string) string {
	v, ok := attrs.Get(key)
	if !ok {
		return ""
	}
	return v.AsString()
}

// The OTLP span flags that tell whether the parent span context was remote
// (SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK, SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK).
const (
	flagHasIsRemote = 0x100
	flagIsRemote    = 0x200
)

// requestWithLocalParent reports whether sp is an HTTP server's span of an
// incoming request whose parent the sender says is local (design §4.2, a
// leaked trace context: internal/rollout/leak.go).
func requestWithLocalParent(sp ptrace.Span) bool {
	if sp.Flags()&(flagHasIsRemote|flagIsRemote) != flagHasIsRemote || sp.ParentSpanID().IsEmpty() {
		return false
	}
	_, ok := sp.Attributes().Get(string(conventions.HTTPRouteKey))
	return ok
}
