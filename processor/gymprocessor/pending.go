// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// origin is the resource and scope a held span came with. It is copied once
// per incoming ScopeSpans that has a span to hold, shared by those spans, and
// is the key by which released spans are regrouped.
type origin struct {
	rs   ptrace.ResourceSpans // resource + one ScopeSpans carrying the scope, no spans
	info *resInfo
}

func newOrigin(rs ptrace.ResourceSpans, ss ptrace.ScopeSpans, info *resInfo) *origin {
	o := &origin{rs: ptrace.NewResourceSpans(), info: info}
	rs.Resource().CopyTo(o.rs.Resource())
	o.rs.SetSchemaUrl(rs.SchemaUrl())
	dst := o.rs.ScopeSpans().AppendEmpty()
	ss.Scope().CopyTo(dst.Scope())
	dst.SetSchemaUrl(ss.SchemaUrl())
	return o
}

// Phases of a held span, in the order a flush takes them (SPEC §4.5: upward
// candidates settle, then roots are cut, then undecided spans leave, then
// job spans).
const (
	phaseSettle  = iota // undecided, settle not yet passed
	phaseCut            // decided upward, waiting to know whether its parent is in its rollout
	phaseRelease        // undecided after settle: waits for wait / rollout_wait
	phaseSynth          // parentless SERVER span waiting for its rollout's gym.rollout (§4.4)
	phaseJob            // job span waiting for its trace's pending spans
)

// heldSpan is a span the processor holds. It owns the span's data.
type heldSpan struct {
	span     ptrace.Span
	origin   *origin
	n        *node
	arrival  int64
	deadline int64
	seq      uint64
	bytes    int64
	heapIdx  int // -1 when not in the heap
	phase    uint8
	cut      bool
	cutType  string
	prev     rootRef
	hasPrev  bool
	synth    *rolloutSpanRef // §4.4: gym.rollout to synthesize a CLIENT parent below
}

// pendingHeap orders held spans by deadline, then arrival sequence.
type pendingHeap []*heldSpan

func (h pendingHeap) Len() int { return len(h) }
func (h pendingHeap) Less(i, j int) bool {
	if h[i].deadline != h[j].deadline {
		return h[i].deadline < h[j].deadline
	}
	return h[i].seq < h[j].seq
}
func (h pendingHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIdx = i
	h[j].heapIdx = j
}
func (h *pendingHeap) Push(x any) {
	hs := x.(*heldSpan)
	hs.heapIdx = len(*h)
	*h = append(*h, hs)
}
func (h *pendingHeap) Pop() any {
	old := *h
	n := len(old)
	hs := old[n-1]
	old[n-1] = nil
	hs.heapIdx = -1
	*h = old[:n-1]
	return hs
}

// Estimated bytes retained by a held span: the pdata structs and the
// processor's own bookkeeping, plus the span's strings and collections.
const (
	heldOverheadBytes = 400 // Span struct, heldSpan, heap slot
	attrOverheadBytes = 64  // KeyValue + AnyValue
	eventOverhead     = 96
	linkOverhead      = 112
)

func estimateSpanBytes(sp ptrace.Span) int64 {
	n := int64(heldOverheadBytes + len(sp.Name()) + len(sp.TraceState().AsRaw()) + len(sp.Status().Message()))
	n += estimateMapBytes(sp.Attributes())
	evs := sp.Events()
	for i := 0; i < evs.Len(); i++ {
		ev := evs.At(i)
		n += eventOverhead + int64(len(ev.Name())) + estimateMapBytes(ev.Attributes())
	}
	ls := sp.Links()
	for i := 0; i < ls.Len(); i++ {
		n += linkOverhead + estimateMapBytes(ls.At(i).Attributes())
	}
	return n
}

func estimateMapBytes(m pcommon.Map) int64 {
	var n int64
	m.Range(func(k string, v pcommon.Value) bool {
		n += attrOverheadBytes + int64(len(k)) + estimateValueBytes(v)
		return true
	})
	return n
}

func estimateValueBytes(v pcommon.Value) int64 {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return int64(len(v.Str()))
	case pcommon.ValueTypeBytes:
		return int64(v.Bytes().Len())
	case pcommon.ValueTypeMap:
		return estimateMapBytes(v.Map())
	case pcommon.ValueTypeSlice:
		s := v.Slice()
		var n int64
		for i := 0; i < s.Len(); i++ {
			n += attrOverheadBytes + estimateValueBytes(s.At(i))
		}
		return n
	default:
		return 0
	}
}
