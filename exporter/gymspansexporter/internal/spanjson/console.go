// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package spanjson // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/spanjson"

// The console line encoder (format console, design §5.2).
//
// Console lines follow Python's ReadableSpan.to_json (opentelemetry-sdk 1.44,
// the shape Gym prints with NEMO_GYM_OTEL_EXPORTER=console), key for key and
// in its order, followed by flat fields for jq:
//
//	name, context{trace_id "0x..", span_id "0x..", trace_state}, kind "SpanKind.X",
//	parent_id "0x.."|null, start_time, end_time, status{status_code, description?},
//	attributes, events[{name, timestamp, attributes}], links[{context, attributes}],
//	resource{attributes, schema_url},
//	trace_id, span_id, parent_span_id, start_time_unix_nano, end_time_unix_nano,
//	scope{name, version}
//
// Where Python and JSON disagree, the line stays valid JSON:
//   - Strings are escaped by JSON rules; bytes that are not valid UTF-8 become
//     U+FFFD (Python would never hold them). Non-ASCII is written as UTF-8,
//     not \u escapes, and separators are compact (",", ":"): a JSON reader
//     sees the same values as in Python's output.
//   - NaN and ±Inf doubles, which Python prints as the invalid tokens NaN and
//     Infinity, are written as the strings "NaN", "Infinity", "-Infinity"
//     (the proto3 JSON convention, also used by format otlp_json).
//   - A double is written as Python's repr writes it ("1.0", "0.0001",
//     "1e-05", "1e+16"), so Python's json.loads reads it back as a float.
//   - Bytes values are base64 strings, maps are objects, empty values null.
//   - Times are UTC with microseconds, truncated (Python rounds through a
//     float, which can differ in the last digit); a zero start or end time
//     is null, as in Python.
//   - trace_state is Python's repr of the list of entries
//     ("['{key=a, value=b}']"); "[]" when empty.

import (
	"encoding/base64"
	"encoding/hex"
	"math"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// appendConsoleDouble writes f as Python writes it, a JSON number that reads
// back as a float, or as the string "NaN", "Infinity" or "-Infinity".
func appendConsoleDouble(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return appendJSONDouble(b, f) // the strings
	}
	return appendPythonFloat(b, f)
}

// appendPythonFloat formats a finite f as Python's float repr (and so its
// json.dumps) does: the shortest digits that read back as f, in fixed
// notation when the decimal exponent is in [-4, 16) ("0.0001", "1e+16" is
// not), keeping ".0" on an integral value; otherwise as strconv's 'e' form,
// which is Python's too ("1e-05", "1.5e+300": a sign and at least two
// exponent digits).
func appendPythonFloat(b []byte, f float64) []byte {
	var buf [32]byte
	e := strconv.AppendFloat(buf[:0], f, 'e', -1, 64)
	exp, neg, i := 0, false, len(e)-1
	for ; e[i] != 'e'; i-- {
	}
	for _, c := range e[i+1:] {
		switch c {
		case '-':
			neg = true
		case '+':
		default:
			exp = exp*10 + int(c-'0')
		}
	}
	if neg {
		exp = -exp
	}
	if exp < -4 || exp >= 16 {
		return append(b, e...)
	}
	start := len(b)
	b = strconv.AppendFloat(b, f, 'f', -1, 64)
	for _, c := range b[start:] {
		if c == '.' {
			return b
		}
	}
	return append(b, '.', '0')
}

// appendConsoleValue writes v as a plain JSON value.
func appendConsoleValue(b []byte, v pcommon.Value) []byte {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return AppendJSONString(b, v.Str())
	case pcommon.ValueTypeBool:
		return strconv.AppendBool(b, v.Bool())
	case pcommon.ValueTypeInt:
		return strconv.AppendInt(b, v.Int(), 10)
	case pcommon.ValueTypeDouble:
		return appendConsoleDouble(b, v.Double())
	case pcommon.ValueTypeBytes:
		b = append(b, '"')
		b = base64.StdEncoding.AppendEncode(b, v.Bytes().AsRaw())
		return append(b, '"')
	case pcommon.ValueTypeSlice:
		s := v.Slice()
		b = append(b, '[')
		for i := 0; i < s.Len(); i++ {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendConsoleValue(b, s.At(i))
		}
		return append(b, ']')
	case pcommon.ValueTypeMap:
		return appendConsoleMap(b, v.Map())
	default:
		return append(b, "null"...)
	}
}

func appendConsoleMap(b []byte, m pcommon.Map) []byte {
	b = append(b, '{')
	n := 0
	m.Range(func(k string, v pcommon.Value) bool {
		b = appendConsoleEntry(b, n, k, v)
		n++
		return true
	})
	return append(b, '}')
}

// appendConsoleEntry writes the i-th key and value of an object.
func appendConsoleEntry(b []byte, i int, k string, v pcommon.Value) []byte {
	if i > 0 {
		b = append(b, ',')
	}
	b = AppendJSONString(b, k)
	b = append(b, ':')
	return appendConsoleValue(b, v)
}

// appendTraceStateRepr writes Python's repr(TraceState) for a W3C
// tracestate header: the str() of a list of "{key=k, value=v}" strings.
func appendTraceStateRepr(b []byte, ts string) []byte {
	var repr []byte
	repr = append(repr, '[')
	n := 0
	for _, member := range strings.Split(ts, ",") {
		member = strings.TrimSpace(member)
		k, v, ok := strings.Cut(member, "=")
		if !ok || k == "" {
			continue
		}
		if n > 0 {
			repr = append(repr, ", "...)
		}
		n++
		repr = appendPythonStrRepr(repr, "{key="+k+", value="+v+"}")
	}
	repr = append(repr, ']')
	return AppendJSONString(b, string(repr))
}

// appendPythonStrRepr writes repr(s) for a Python str: single quotes unless
// s holds a single quote and no double quote.
func appendPythonStrRepr(b []byte, s string) []byte {
	q := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		q = '"'
	}
	b = append(b, q)
	for i := 0; i < len(s); i++ {
		if s[i] == q || s[i] == '\\' {
			b = append(b, '\\')
		}
		b = append(b, s[i])
	}
	return append(b, q)
}

// appendConsoleContext writes a console context from the ids in hex.
func appendConsoleContext(b, tidHex, sidHex []byte, ts string) []byte {
	b = append(b, `{"trace_id":"0x`...)
	b = append(b, tidHex...)
	b = append(b, `","span_id":"0x`...)
	b = append(b, sidHex...)
	b = append(b, `","trace_state":`...)
	if ts == "" {
		b = append(b, `"[]"`...)
	} else {
		b = appendTraceStateRepr(b, ts)
	}
	return append(b, '}')
}

var consoleKinds = [...]string{
	ptrace.SpanKindUnspecified: `"SpanKind.INTERNAL"`,
	ptrace.SpanKindInternal:    `"SpanKind.INTERNAL"`,
	ptrace.SpanKindServer:      `"SpanKind.SERVER"`,
	ptrace.SpanKindClient:      `"SpanKind.CLIENT"`,
	ptrace.SpanKindProducer:    `"SpanKind.PRODUCER"`,
	ptrace.SpanKindConsumer:    `"SpanKind.CONSUMER"`,
}

func consoleKind(k ptrace.SpanKind) string {
	if int(k) >= 0 && int(k) < len(consoleKinds) {
		return consoleKinds[k]
	}
	return `"SpanKind.INTERNAL"`
}

var statusCodes = [...]string{
	ptrace.StatusCodeUnset: "UNSET",
	ptrace.StatusCodeOk:    "OK",
	ptrace.StatusCodeError: "ERROR",
}

// StatusName is a status code as console lines and rollouts.jsonl show it.
func StatusName(c ptrace.StatusCode) string {
	if int(c) >= 0 && int(c) < len(statusCodes) {
		return statusCodes[c]
	}
	return "UNSET"
}

// SpanKindOf reads a console kind back ("SpanKind.SERVER", unquoted).
func SpanKindOf(name string) ptrace.SpanKind {
	q := strconv.Quote(name)
	for k, v := range consoleKinds {
		if v == q && ptrace.SpanKind(k) != ptrace.SpanKindUnspecified {
			return ptrace.SpanKind(k)
		}
	}
	return ptrace.SpanKindInternal
}

// StatusCodeOf reads a console status code back.
func StatusCodeOf(name string) ptrace.StatusCode {
	for c, v := range statusCodes {
		if v == name {
			return ptrace.StatusCode(c)
		}
	}
	return ptrace.StatusCodeUnset
}

// AppendConsoleResource writes the "resource" value of a console line once
// per ResourceSpans: {"attributes":{...},"schema_url":"..."}, the service
// shown as names says (service.go).
func AppendConsoleResource(b []byte, res pcommon.Resource, schemaURL string, names ServiceNames) []byte {
	b = append(b, `{"attributes":{`...)
	n := 0
	names.rangeAttrs(res.Attributes(), func(k string, v pcommon.Value) {
		b = appendConsoleEntry(b, n, k, v)
		n++
	})
	b = append(b, '}')
	b = append(b, `,"schema_url":`...)
	b = AppendJSONString(b, schemaURL)
	return append(b, '}')
}

// AppendConsoleScope writes the flat "scope" value: {"name":..,"version":..}.
func AppendConsoleScope(b []byte, scope pcommon.InstrumentationScope) []byte {
	b = append(b, `{"name":`...)
	b = AppendJSONString(b, scope.Name())
	b = append(b, `,"version":`...)
	b = AppendJSONString(b, scope.Version())
	return append(b, '}')
}

// AppendConsoleSpan appends one console line (with its '\n'). resource and
// scope are the pre-encoded values of AppendConsoleResource and
// AppendConsoleScope; clock is the batch's time cache (nil for none).
func AppendConsoleSpan(b []byte, span ptrace.Span, resource, scope []byte, clock *TimeCache) []byte {
	tid, sid, pid := span.TraceID(), span.SpanID(), span.ParentSpanID()
	// Each id is written twice (0x-prefixed, and flat): hex it once.
	var ids [64]byte
	tidHex, sidHex, pidHex := ids[:32], ids[32:48], ids[48:64]
	hex.Encode(tidHex, tid[:])
	hex.Encode(sidHex, sid[:])
	hex.Encode(pidHex, pid[:])
	b = append(b, `{"name":`...)
	b = AppendJSONString(b, span.Name())
	b = append(b, `,"context":`...)
	b = appendConsoleContext(b, tidHex, sidHex, span.TraceState().AsRaw())
	b = append(b, `,"kind":`...)
	b = append(b, consoleKind(span.Kind())...)
	b = append(b, `,"parent_id":`...)
	if pid.IsEmpty() {
		b = append(b, "null"...)
	} else {
		b = append(b, `"0x`...)
		b = append(b, pidHex...)
		b = append(b, '"')
	}
	b = append(b, `,"start_time":`...)
	b = clock.AppendConsoleTime(b, uint64(span.StartTimestamp()))
	b = append(b, `,"end_time":`...)
	b = clock.AppendConsoleTime(b, uint64(span.EndTimestamp()))
	st := span.Status()
	b = append(b, `,"status":{"status_code":"`...)
	b = append(b, StatusName(st.Code())...)
	b = append(b, '"')
	if msg := st.Message(); msg != "" {
		b = append(b, `,"description":`...)
		b = AppendJSONString(b, msg)
	}
	b = append(b, `},"attributes":`...)
	b = appendConsoleMap(b, span.Attributes())
	b = append(b, `,"events":[`...)
	events := span.Events()
	for i := 0; i < events.Len(); i++ {
		ev := events.At(i)
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"name":`...)
		b = AppendJSONString(b, ev.Name())
		b = append(b, `,"timestamp":`...)
		b = clock.appendISOTime(b, uint64(ev.Timestamp()))
		b = append(b, `,"attributes":`...)
		b = appendConsoleMap(b, ev.Attributes())
		b = append(b, '}')
	}
	b = append(b, `],"links":[`...)
	links := span.Links()
	for i := 0; i < links.Len(); i++ {
		l := links.At(i)
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"context":`...)
		ltid, lsid := l.TraceID(), l.SpanID()
		var lids [48]byte // not ids: the span's own are written again below
		hex.Encode(lids[:32], ltid[:])
		hex.Encode(lids[32:], lsid[:])
		b = appendConsoleContext(b, lids[:32], lids[32:], l.TraceState().AsRaw())
		b = append(b, `,"attributes":`...)
		b = appendConsoleMap(b, l.Attributes())
		b = append(b, '}')
	}
	b = append(b, `],"resource":`...)
	b = append(b, resource...)
	b = append(b, `,"trace_id":"`...)
	b = append(b, tidHex...)
	b = append(b, `","span_id":"`...)
	b = append(b, sidHex...)
	b = append(b, `","parent_span_id":"`...)
	if !pid.IsEmpty() {
		b = append(b, pidHex...)
	}
	b = append(b, `","start_time_unix_nano":`...)
	b = clock.appendUnixNano(b, uint64(span.StartTimestamp()))
	b = append(b, `,"end_time_unix_nano":`...)
	b = clock.appendUnixNano(b, uint64(span.EndTimestamp()))
	b = append(b, `,"scope":`...)
	b = append(b, scope...)
	return append(b, '}', '\n')
}
