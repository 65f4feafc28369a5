// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

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
