// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
	"github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/evidence"
	"github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/split"
)

// spanEdit is the attribute and id rewrite of one leaving span (design
// §4.2–§4.4). It is decided under the processor's lock, where the shared
// tables are, and applied after the lock is released: a span that left
// belongs to its round's output, which nobody else touches, so the pdata
// writes (the bulk of the rewrite's cost) run in parallel across callers.
type spanEdit struct {
	sp      ptrace.Span
	rollout string // the span's rollout; "" for none
	extra   int    // attributes the rewrite adds, to grow the map once
	// putRollout: the rollout attribute is written (it does not hold it
	// already); putOrig: nemo.gym.original_trace_id is (the span has none).
	putRollout, putOrig bool
	split               bool // the per-rollout trace rewrite applies
	orig                pcommon.TraceID
	origHex             string          // hex of orig, written unless the span has a valid one
	tid                 pcommon.TraceID // T'
	// A cut from its parent (a link of type cutType to it), the link to its
	// previous attempt's root.
	cut     bool
	cutType string
	prev    split.RootRef
	hasPrev bool
	peer    string // peer.service to set, when hasPeer
	hasPeer bool
	root    bool // the rollout's root: marked with nemo.gym.rollout.root
	// A job span's count of and links to the roots cut from its trace.
	jobCount int
	jobLinks []split.RootRef
}

// clientEdit is a CLIENT span synthesized above a SERVER span (§4.4): its
// id, parent and resource are decided under the lock (the repair's plan),
// its fields, and the SERVER span's new parent, written after it.
type clientEdit struct {
	client, server ptrace.Span
	tid            pcommon.TraceID
	id, parent     pcommon.SpanID
	serverService  string
	origHex        string
	rollout        string
}

// traceID is the span's trace id once ed is applied.
func (ed *spanEdit) traceID() pcommon.TraceID {
	if ed.rollout != "" && ed.split {
		return ed.tid
	}
	return ed.sp.TraceID()
}

// originalTraceHex is the span's nemo.gym.original_trace_id once ed is
// applied, or "".
func (ed *spanEdit) originalTraceHex() string {
	v, ok := ed.sp.Attributes().Get(gymconv.OriginalTraceAttribute)
	has := ok && v.Type() == pcommon.ValueTypeStr
	if ed.rollout != "" && ed.split {
		if has {
			if _, valid := gymconv.ParseTraceID(v.Str()); valid {
				return v.Str()
			}
		}
		return ed.origHex
	}
	if has {
		return v.Str()
	}
	return ""
}

func (ed *spanEdit) empty() bool { return ed.rollout == "" && !ed.hasPeer && ed.jobCount == 0 }

// apply writes ed into its span.
func (ed *spanEdit) apply(rolloutAttr string) {
	sp := ed.sp
	attrs := sp.Attributes()
	if ed.rollout != "" {
		if ed.extra > 0 {
			attrs.EnsureCapacity(attrs.Len() + ed.extra)
		}
		if ed.putRollout {
			attrs.PutStr(rolloutAttr, ed.rollout)
		}
		if ed.root {
			attrs.PutBool(gymconv.RolloutRootAttribute, true)
		}
		if ed.split {
			if ed.putOrig {
				attrs.PutStr(gymconv.OriginalTraceAttribute, ed.origHex)
			}
			sp.SetTraceID(ed.tid)
			if ed.cut {
				parent := sp.ParentSpanID()
				sp.SetParentSpanID(pcommon.SpanID{})
				l := sp.Links().AppendEmpty()
				l.SetTraceID(ed.orig)
				l.SetSpanID(parent)
				l.Attributes().PutStr(attrLinkType, ed.cutType)
			}
			if ed.hasPrev {
				l := sp.Links().AppendEmpty()
				l.SetTraceID(ed.prev.Trace)
				l.SetSpanID(ed.prev.Span)
				l.Attributes().PutStr(attrLinkType, linkTypePreviousAttempt)
			}
		}
	}
	if ed.hasPeer {
		attrs.PutStr(attrPeerService, ed.peer)
	}
	if ed.jobCount > 0 {
		attrs.PutInt(attrSplitRollouts, int64(ed.jobCount))
		for _, ref := range ed.jobLinks {
			l := sp.Links().AppendEmpty()
			l.SetTraceID(ref.Trace)
			l.SetSpanID(ref.Span)
			l.Attributes().PutStr(attrLinkType, linkTypeRollout)
		}
	}
}

// apply writes the synthesized CLIENT span and re-parents its SERVER span.
func (ce *clientEdit) apply(rolloutAttr string) {
	c, server := ce.client, ce.server
	c.SetTraceID(ce.tid)
	c.SetSpanID(ce.id)
	c.SetParentSpanID(ce.parent)
	c.SetKind(ptrace.SpanKindClient)
	c.SetStartTimestamp(server.StartTimestamp())
	c.SetEndTimestamp(server.EndTimestamp())
	method := evidence.Method(server.Attributes())
	if method != "" {
		c.SetName("HTTP " + method)
	} else {
		c.SetName("HTTP")
	}
	if server.Status().Code() == ptrace.StatusCodeError {
		c.Status().SetCode(ptrace.StatusCodeError)
	}
	attrs := c.Attributes()
	attrs.EnsureCapacity(5)
	attrs.PutBool(attrSynthetic, true)
	if method != "" {
		attrs.PutStr(attrHTTPMethod, method)
	}
	if ce.serverService != "" {
		attrs.PutStr(attrPeerService, ce.serverService)
	}
	if ce.rollout != "" {
		attrs.PutStr(rolloutAttr, ce.rollout)
	}
	if ce.origHex != "" {
		attrs.PutStr(gymconv.OriginalTraceAttribute, ce.origHex)
	}
	server.SetParentSpanID(ce.id)
}

// applyEdits applies a round's edits, then writes its synthesized spans;
// called without the lock, before the output is regrouped or split.
func (r *round) applyEdits(rolloutAttr string) {
	for i := range r.edits {
		r.edits[i].apply(rolloutAttr)
		r.edits[i] = spanEdit{} // drop the references into the output
	}
	r.edits = r.edits[:0]
	for i := range r.clients {
		r.clients[i].apply(rolloutAttr)
		r.clients[i] = clientEdit{}
	}
	r.clients = r.clients[:0]
}
