// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package replay

import (
	"hash/fnv"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// The OTLP span flags that tell whether the parent span context was remote
// (SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK, SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK).
const (
	flagHasIsRemote = 0x100
	flagIsRemote    = 0x200
)

// maxPrintedSpans bounds the spans a console file's parentFlags remembers
// (about 40 bytes each); the oldest is forgotten first.
const maxPrintedSpans = 1 << 18

// parentFlags gives a console span the OTLP flags that say whether its
// parent is local or remote, which a live collector receives and the
// console JSON leaves out: the gym processor detaches a request that took a
// finished request's context only when its sender says the parent is local
// (design §4.2, leaked trace context). A span's parent is known here when
// it was printed before the span: by the same process (the same resource),
// local; by another, remote. A parent printed first ended first; in one
// process, a parent that ended before its child is the leaked context the
// flag is for. A parent not printed yet (it ends after its child, as a
// parent does) leaves the flags unset, as an SDK that sets none does.
type parentFlags struct {
	process map[pcommon.SpanID]uint64 // span → a hash of the resource that printed it
	order   []pcommon.SpanID          // a ring, to forget the oldest
	next    int
}

func newParentFlags() *parentFlags {
	return &parentFlags{process: map[pcommon.SpanID]uint64{}}
}

// mark sets span's parent flags from the spans printed before it, and
// remembers span as printed by resource.
func (p *parentFlags) mark(resource pcommon.Resource, span ptrace.Span) {
	proc := resourceHash(resource.Attributes())
	if parent := span.ParentSpanID(); !parent.IsEmpty() {
		if by, ok := p.process[parent]; ok {
			flags := uint32(flagHasIsRemote)
			if by != proc {
				flags |= flagIsRemote
			}
			span.SetFlags(span.Flags() | flags)
		}
	}
	p.remember(span.SpanID(), proc)
}

func (p *parentFlags) remember(id pcommon.SpanID, proc uint64) {
	if _, ok := p.process[id]; ok {
		p.process[id] = proc
		return
	}
	if len(p.order) < maxPrintedSpans {
		p.order = append(p.order, id)
	} else {
		delete(p.process, p.order[p.next])
		p.order[p.next] = id
		p.next = (p.next + 1) % maxPrintedSpans
	}
	p.process[id] = proc
}

// resourceHash identifies the process that printed a span by its resource
// (Gym's hold service.name and process.pid).
func resourceHash(attrs pcommon.Map) uint64 {
	h := fnv.New64a()
	for k, v := range attrs.All() {
		_, _ = h.Write([]byte(k))
		_, _ = h.Write([]byte{0})
		_, _ = h.Write([]byte(v.AsString()))
		_, _ = h.Write([]byte{0})
	}
	return h.Sum64()
}
