// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package spanjson // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/spanjson"

// The OTLP/JSON line encoder (design §5.2).
//
// OTLP/JSON lines (format otlp_json) are ExportTraceServiceRequests with the
// fields, names and order of pdata's ptrace.JSONMarshaler, so the pdata and
// collector JSON readers (and fileexporter's consumers) read them; a span's
// encoding is computed once and shared by every file it goes to.

import (
	"encoding/base64"
	"encoding/hex"
	"strconv"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

func appendOTLPValue(b []byte, v pcommon.Value) []byte {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		b = append(b, `{"stringValue":`...)
		b = AppendJSONString(b, v.Str())
	case pcommon.ValueTypeBool:
		b = append(b, `{"boolValue":`...)
		b = strconv.AppendBool(b, v.Bool())
	case pcommon.ValueTypeInt:
		b = append(b, `{"intValue":"`...)
		b = strconv.AppendInt(b, v.Int(), 10)
		b = append(b, '"')
	case pcommon.ValueTypeDouble:
		b = append(b, `{"doubleValue":`...)
		b = appendJSONDouble(b, v.Double())
	case pcommon.ValueTypeBytes:
		b = append(b, `{"bytesValue":"`...)
		b = base64.StdEncoding.AppendEncode(b, v.Bytes().AsRaw())
		b = append(b, '"')
	case pcommon.ValueTypeSlice:
		b = append(b, `{"arrayValue":{`...)
		s := v.Slice()
		if s.Len() > 0 {
			b = append(b, `"values":[`...)
			for i := 0; i < s.Len(); i++ {
				if i > 0 {
					b = append(b, ',')
				}
				b = appendOTLPValue(b, s.At(i))
			}
			b = append(b, ']')
		}
		b = append(b, '}')
	case pcommon.ValueTypeMap:
		b = append(b, `{"kvlistValue":{`...)
		if v.Map().Len() > 0 {
			b = append(b, `"values":`...)
			b = appendOTLPAttributes(b, v.Map())
		}
		b = append(b, '}')
	default:
		b = append(b, '{')
	}
	return append(b, '}')
}

// appendOTLPAttributes writes a non-empty map as [{"key":..,"value":{..}},..].
func appendOTLPAttributes(b []byte, m pcommon.Map) []byte {
	b = append(b, '[')
	n := 0
	m.Range(func(k string, v pcommon.Value) bool {
		b = appendOTLPAttribute(b, n, k, v)
		n++
		return true
	})
	return append(b, ']')
}

// appendOTLPAttribute writes the i-th {"key":..,"value":{..}} of a list.
func appendOTLPAttribute(b []byte, i int, k string, v pcommon.Value) []byte {
	if i > 0 {
		b = append(b, ',')
	}
	b = append(b, '{')
	if k != "" {
		b = append(b, `"key":`...)
		b = AppendJSONString(b, k)
		b = append(b, ',')
	}
	b = append(b, `"value":`...)
	b = appendOTLPValue(b, v)
	return append(b, '}')
}

// appendOTLPAttrsField writes `,"attributes":[...]` when m is not empty;
// lead is the separator before it.
func appendOTLPAttrsField(b []byte, lead string, m pcommon.Map) []byte {
	if m.Len() == 0 {
		return b
	}
	b = append(b, lead...)
	b = append(b, `"attributes":`...)
	return appendOTLPAttributes(b, m)
}

// AppendOTLPResourceOpen writes `{"resource":{...},"scopeSpans":[`, the
// service shown as names says (service.go); the group is closed by
// AppendOTLPResourceClose.
func AppendOTLPResourceOpen(b []byte, res pcommon.Resource, names ServiceNames) []byte {
	b = append(b, `{"resource":{`...)
	n := 0
	names.rangeAttrs(res.Attributes(), func(k string, v pcommon.Value) {
		if n == 0 {
			b = append(b, `"attributes":[`...)
		}
		b = appendOTLPAttribute(b, n, k, v)
		n++
	})
	if n > 0 {
		b = append(b, ']')
	}
	if d := res.DroppedAttributesCount(); d != 0 {
		if n > 0 {
			b = append(b, ',')
		}
		b = append(b, `"droppedAttributesCount":`...)
		b = strconv.AppendUint(b, uint64(d), 10)
	}
	return append(b, `},"scopeSpans":[`...)
}

func AppendOTLPResourceClose(b []byte, schemaURL string) []byte {
	b = append(b, ']')
	if schemaURL != "" {
		b = append(b, `,"schemaUrl":`...)
		b = AppendJSONString(b, schemaURL)
	}
	return append(b, '}')
}

// AppendOTLPScopeOpen writes `{"scope":{...},"spans":[`.
func AppendOTLPScopeOpen(b []byte, scope pcommon.InstrumentationScope) []byte {
	b = append(b, `{"scope":{`...)
	sep := ""
	if scope.Name() != "" {
		b = append(b, `"name":`...)
		b = AppendJSONString(b, scope.Name())
		sep = ","
	}
	if scope.Version() != "" {
		b = append(b, sep...)
		b = append(b, `"version":`...)
		b = AppendJSONString(b, scope.Version())
		sep = ","
	}
	if scope.Attributes().Len() > 0 {
		b = appendOTLPAttrsField(b, sep, scope.Attributes())
		sep = ","
	}
	if n := scope.DroppedAttributesCount(); n != 0 {
		b = append(b, sep...)
		b = append(b, `"droppedAttributesCount":`...)
		b = strconv.AppendUint(b, uint64(n), 10)
	}
	return append(b, `},"spans":[`...)
}

func AppendOTLPScopeClose(b []byte, schemaURL string) []byte {
	b = append(b, ']')
	if schemaURL != "" {
		b = append(b, `,"schemaUrl":`...)
		b = AppendJSONString(b, schemaURL)
	}
	return append(b, '}')
}

// AppendOTLPSpan writes one span object as pdata's JSON marshaler does; clock
// is the batch's time cache (nil for none). Fields are in the marshaler's
// order; sep is the separator before the next one ("" until one is
// written). Events and links are written by calls only when the span has
// some, and its ids by one call, which keeps the common span's calls few.
func AppendOTLPSpan(b []byte, span ptrace.Span, clock *TimeCache) []byte {
	b = append(b, '{')
	b, sep := appendOTLPSpanIDs(b, span)
	if n := span.Name(); n != "" {
		b = appendField(b, sep, `"name":`)
		sep = ","
		b = AppendJSONString(b, n)
	}
	if k := span.Kind(); k != 0 {
		b = appendField(b, sep, `"kind":`)
		sep = ","
		b = strconv.AppendInt(b, int64(k), 10)
	}
	if t := span.StartTimestamp(); t != 0 {
		b = appendField(b, sep, `"startTimeUnixNano":`)
		sep = ","
		b = clock.appendOTLPTime(b, uint64(t))
	}
	if t := span.EndTimestamp(); t != 0 {
		b = appendField(b, sep, `"endTimeUnixNano":`)
		sep = ","
		b = clock.appendOTLPTime(b, uint64(t))
	}
	if span.Attributes().Len() > 0 {
		b = appendField(b, sep, `"attributes":`)
		sep = ","
		b = appendOTLPAttributes(b, span.Attributes())
	}
	if n := span.DroppedAttributesCount(); n != 0 {
		b = appendField(b, sep, `"droppedAttributesCount":`)
		sep = ","
		b = strconv.AppendUint(b, uint64(n), 10)
	}
	if events := span.Events(); events.Len() > 0 {
		b = appendField(b, sep, `"events":`)
		sep = ","
		b = appendOTLPEvents(b, events, clock)
	}
	if n := span.DroppedEventsCount(); n != 0 {
		b = appendField(b, sep, `"droppedEventsCount":`)
		sep = ","
		b = strconv.AppendUint(b, uint64(n), 10)
	}
	if links := span.Links(); links.Len() > 0 {
		b = appendField(b, sep, `"links":`)
		sep = ","
		b = appendOTLPLinks(b, links)
	}
	if n := span.DroppedLinksCount(); n != 0 {
		b = appendField(b, sep, `"droppedLinksCount":`)
		sep = ","
		b = strconv.AppendUint(b, uint64(n), 10)
	}
	b = appendField(b, sep, `"status":`)
	// The status object is always written, empty when the status is unset.
	st := span.Status()
	b = append(b, '{')
	if m := st.Message(); m != "" {
		b = append(b, `"message":`...)
		b = AppendJSONString(b, m)
		if st.Code() != 0 {
			b = append(b, ',')
		}
	}
	if c := st.Code(); c != 0 {
		b = append(b, `"code":`...)
		b = strconv.AppendInt(b, int64(c), 10)
	}
	return append(b, '}', '}')
}

// appendOTLPSpanIDs writes the span's traceId, spanId, traceState,
// parentSpanId and flags, each when set; it is first in the object.
func appendOTLPSpanIDs(b []byte, span ptrace.Span) ([]byte, string) {
	sep := ""
	if tid := span.TraceID(); !tid.IsEmpty() {
		b = appendField(b, sep, `"traceId":`)
		sep = ","
		b = appendHexID(b, tid[:])
	}
	if sid := span.SpanID(); !sid.IsEmpty() {
		b = appendField(b, sep, `"spanId":`)
		sep = ","
		b = appendHexID(b, sid[:])
	}
	if ts := span.TraceState().AsRaw(); ts != "" {
		b = appendField(b, sep, `"traceState":`)
		sep = ","
		b = AppendJSONString(b, ts)
	}
	if pid := span.ParentSpanID(); !pid.IsEmpty() {
		b = appendField(b, sep, `"parentSpanId":`)
		sep = ","
		b = appendHexID(b, pid[:])
	}
	if f := span.Flags(); f != 0 {
		b = appendField(b, sep, `"flags":`)
		sep = ","
		b = strconv.AppendUint(b, uint64(f), 10)
	}
	return b, sep
}

// appendOTLPEvents writes a non-empty event list as [{..},..].
func appendOTLPEvents(b []byte, events ptrace.SpanEventSlice, clock *TimeCache) []byte {
	b = append(b, '[')
	for i := 0; i < events.Len(); i++ {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendOTLPEvent(b, events.At(i), clock)
	}
	return append(b, ']')
}

// appendOTLPEvent writes one event object, its fields when set.
func appendOTLPEvent(b []byte, ev ptrace.SpanEvent, clock *TimeCache) []byte {
	b = append(b, '{')
	sep := ""
	if t := ev.Timestamp(); t != 0 {
		b = append(b, `"timeUnixNano":`...)
		b = clock.appendOTLPTime(b, uint64(t))
		sep = ","
	}
	if ev.Name() != "" {
		b = append(b, sep...)
		b = append(b, `"name":`...)
		b = AppendJSONString(b, ev.Name())
		sep = ","
	}
	if ev.Attributes().Len() > 0 {
		b = appendOTLPAttrsField(b, sep, ev.Attributes())
		sep = ","
	}
	if n := ev.DroppedAttributesCount(); n != 0 {
		b = append(b, sep...)
		b = append(b, `"droppedAttributesCount":`...)
		b = strconv.AppendUint(b, uint64(n), 10)
	}
	return append(b, '}')
}

// appendOTLPLinks writes a non-empty link list as [{..},..].
func appendOTLPLinks(b []byte, links ptrace.SpanLinkSlice) []byte {
	b = append(b, '[')
	for i := 0; i < links.Len(); i++ {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendOTLPLink(b, links.At(i))
	}
	return append(b, ']')
}

// appendOTLPLink writes one link object, its fields when set.
func appendOTLPLink(b []byte, l ptrace.SpanLink) []byte {
	b = append(b, '{')
	sep := ""
	if tid := l.TraceID(); !tid.IsEmpty() {
		b = append(b, `"traceId":`...)
		b = appendHexID(b, tid[:])
		sep = ","
	}
	if sid := l.SpanID(); !sid.IsEmpty() {
		b = append(b, sep...)
		b = append(b, `"spanId":`...)
		b = appendHexID(b, sid[:])
		sep = ","
	}
	if ts := l.TraceState().AsRaw(); ts != "" {
		b = append(b, sep...)
		b = append(b, `"traceState":`...)
		b = AppendJSONString(b, ts)
		sep = ","
	}
	if l.Attributes().Len() > 0 {
		b = appendOTLPAttrsField(b, sep, l.Attributes())
		sep = ","
	}
	if n := l.DroppedAttributesCount(); n != 0 {
		b = append(b, sep...)
		b = append(b, `"droppedAttributesCount":`...)
		b = strconv.AppendUint(b, uint64(n), 10)
		sep = ","
	}
	if f := l.Flags(); f != 0 {
		b = append(b, sep...)
		b = append(b, `"flags":`...)
		b = strconv.AppendUint(b, uint64(f), 10)
	}
	return append(b, '}')
}

// appendHexID writes id as a quoted lowercase hex string.
func appendHexID(b, id []byte) []byte {
	b = append(b, '"')
	b = hex.AppendEncode(b, id)
	return append(b, '"')
}

// appendField writes sep and key, a field's quoted name and its colon.
func appendField(b []byte, sep, key string) []byte {
	b = append(b, sep...)
	return append(b, key...)
}
