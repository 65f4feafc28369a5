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

	conventions "go.opentelemetry.io/otel/semconv/v1.37.0"
)

// batchFacts is what the processor reads from an incoming batch before it
// takes the lock: everything that depends only on the batch and the
// configuration (attribute scans, evidence, ids, keys), so that concurrent
// callers do it in parallel and the locked section only looks up and
// updates shared state. The batch is the caller's until it is consumed, so
// the facts still hold when the engine meets each span.
type batchFacts struct {
	res   []resFacts  // per ResourceSpans
	scope []int       // per ScopeSpans (res[i].scope + j): index of its first span in spans
	spans []spanFacts // every span, in batch order
}

// resFacts is what a ResourceSpans' attributes say (see engine.resourceInfo).
type resFacts struct {
	scope       int // index of its first ScopeSpans in batchFacts.scope
	run         string
	service     string
	serviceOrch bool   // its server type is orchestrator, or its service ends so
	proc        string // service.name, host.name, process.pid
}

// spanFacts is what one span's own fields say.
type spanFacts struct {
	ev string // direct rollout evidence, or ""
	// observabilityOff: the span shows that Gym's observability is off, if
	// its run has shown no evidence yet.
	observabilityOff bool
	orig             pcommon.TraceID // original trace id (nemo.gym.original_trace_id or its own)
	job              bool            // its name is a job span name
	held             bool            // set by the engine: the span moved to the pending store
	serverHP         string          // a SERVER span's host:port, when the service-map repairs are on
	node             *node           // a fresh index node for the span, unless its id is zero
	h, ph            uint64          // index hashes of the span's key and its parent's (see spanIndex)
	localRequest     bool            // an HTTP server's request span whose parent is local (leak.go)
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

// prepare reads td's facts. It touches only the engine's configuration,
// never its state, and runs without the lock.
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
				f.spans = append(f.spans, e.spanFacts(spans.At(k)))
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

func (e *engine) spanFacts(sp ptrace.Span) spanFacts {
	sf := spanFacts{ev: e.ev.Find(sp.Attributes()), orig: spanOriginalTrace(sp)}
	if sf.ev == "" {
		sf.observabilityOff = e.ev.ObservabilityOffSign(sp)
	}
	if sid := sp.SpanID(); !sid.IsEmpty() {
		// Most spans arrive before any child names them: their node is
		// new, and allocating it here keeps the allocation out of the lock.
		sf.node = new(node)
		sf.h = e.idx.hash(spanKey{trace: sf.orig, span: sid})
	}
	if pid := sp.ParentSpanID(); !pid.IsEmpty() {
		sf.ph = e.idx.hash(spanKey{trace: sf.orig, span: pid})
	}
	_, sf.job = e.jobNames[sp.Name()]
	sf.localRequest = requestWithLocalParent(sp)
	if e.sm.peers && sp.Kind() == ptrace.SpanKindServer {
		sf.serverHP = hostport.Server(sp.Attributes())
	}
	return sf
}

// spanOriginalTrace returns the trace id the span had before any gym
// processor rewrote it: nemo.gym.original_trace_id when valid, else its own.
func spanOriginalTrace(sp ptrace.Span) pcommon.TraceID {
	if id, ok := gymconv.OriginalTraceID(sp.Attributes()); ok {
		return id
	}
	return sp.TraceID()
}
