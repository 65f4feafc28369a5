// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter"

// The line encoders of SPEC §5.2. Both append to a caller-owned []byte and
// allocate nothing per span once that buffer has grown.
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
//
// OTLP/JSON lines (format otlp_json) are ExportTraceServiceRequests with the
// fields, names and order of pdata's ptrace.JSONMarshaler, so the pdata and
// collector JSON readers (and fileexporter's consumers) read them; a span's
// encoding is computed once and shared by every file it goes to.

import (
	"encoding/base64"
	"encoding/hex"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string. Bytes that are not valid
// UTF-8 are replaced with U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if i+8 <= len(s) && plainASCII8(load8(s, i)) {
			i += 8
			continue
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, "\ufffd"...)
			i++
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// load8 reads s[i:i+8] as a little-endian word (the compiler makes it one
// load).
func load8(s string, i int) uint64 {
	_ = s[i+7]
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
}

// plainASCII8 reports whether each of the 8 bytes of w is printable ASCII
// other than '"' and '\\', i.e. is copied into a JSON string as it is. The
// tests are the classic word-at-a-time ones: (x - 0x01..) & ^x & 0x80..
// is non-zero exactly when some byte of x is zero, and (w - n*0x01..) & ^w
// & 0x80.. when some byte of w is below n (n <= 0x80).
func plainASCII8(w uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	ctl := (w - 0x20*ones) & ^w
	q := w ^ ('"' * ones)
	q = (q - ones) & ^q
	bs := w ^ ('\\' * ones)
	bs = (bs - ones) & ^bs
	return (ctl|q|bs|w)&highs == 0
}

func appendHex(b []byte, id []byte) []byte {
	return hex.AppendEncode(b, id)
}

// appendConsoleDouble writes f as Python writes it, a JSON number that reads
// back as a float, or as the string "NaN", "Infinity" or "-Infinity".
func appendConsoleDouble(b []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(b, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(b, `"-Infinity"`...)
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

// appendFloat formats a finite f as encoding/json does: the shortest
// representation, in exponent form only for very small or large values.
func appendFloat(b []byte, f float64) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// appendISOTime writes ns since the epoch as "2006-01-02T15:04:05.000000Z"
// (microseconds, truncated), quoted.
func appendISOTime(b []byte, ns uint64) []byte {
	ns = min(ns, math.MaxInt64)
	return appendISOSeconds(appendISOMinute(b, int64(ns/1e9)/60), ns)
}

// appendISOMinute writes the minute since the epoch m as `"2006-01-02T15:04:`.
func appendISOMinute(b []byte, m int64) []byte {
	y, mo, d := civilFromDays(m / (24 * 60))
	b = append(b, '"')
	b = append4(b, y)
	b = append(b, '-')
	b = append2(b, mo)
	b = append(b, '-')
	b = append2(b, d)
	b = append(b, 'T')
	b = append2(b, int(m%(24*60)/60))
	b = append(b, ':')
	b = append2(b, int(m%60))
	return append(b, ':')
}

// appendISOSeconds ends appendISOMinute's text for ns: `05.000000Z"`.
func appendISOSeconds(b []byte, ns uint64) []byte {
	b = append2(b, int(ns/1e9%60))
	b = append(b, '.')
	us := int(ns % 1e9 / 1e3)
	b = append2(b, us/10000)
	b = append2(b, us/100%100)
	b = append2(b, us%100)
	return append(b, 'Z', '"')
}

// timeCache keeps the text of the last minute written by appendISOTime and
// of the last second written by appendUnixNano: the times of a batch mostly
// fall within a few minutes, a span's start and end often within a second,
// and the date and the leading digits are the costly part. A nil cache
// writes every time in full.
type timeCache struct {
	minute  int64 // of text; meaningful once text is set
	text    []byte
	second  uint64 // of secText; meaningful once secText is set
	secText []byte
}

// appendUnixNano writes ns as a decimal integer.
func (c *timeCache) appendUnixNano(b []byte, ns uint64) []byte {
	if c == nil || ns < 1e9 {
		return strconv.AppendUint(b, ns, 10)
	}
	if s := ns / 1e9; s != c.second || len(c.secText) == 0 {
		c.second, c.secText = s, strconv.AppendUint(c.secText[:0], s, 10)
	}
	b = append(b, c.secText...)
	n := int(ns % 1e9)
	b = append(b, byte('0'+n/1e8))
	n %= 1e8
	b = append2(b, n/1e6)
	b = append2(b, n/1e4%100)
	b = append2(b, n/100%100)
	return append2(b, n%100)
}

// appendISOTime is appendISOTime with the minute's text cached.
func (c *timeCache) appendISOTime(b []byte, ns uint64) []byte {
	if c == nil {
		return appendISOTime(b, ns)
	}
	ns = min(ns, math.MaxInt64)
	if m := int64(ns/1e9) / 60; m != c.minute || len(c.text) == 0 {
		c.minute, c.text = m, appendISOMinute(c.text[:0], m)
	}
	return appendISOSeconds(append(b, c.text...), ns)
}

// civilFromDays converts days since 1970-01-01 to a proleptic Gregorian
// date (Howard Hinnant's days_from_civil, inverted).
func civilFromDays(z int64) (year, month, day int) {
	z += 719468
	era := z / 146097
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y := yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d := doy - (153*mp+2)/5 + 1
	m := mp + 3
	if m > 12 {
		m -= 12
	}
	if m <= 2 {
		y++
	}
	return int(y), int(m), int(d)
}

func append2(b []byte, v int) []byte {
	return append(b, byte('0'+v/10), byte('0'+v%10))
}

func append4(b []byte, v int) []byte {
	if v > 9999 {
		return strconv.AppendInt(b, int64(v), 10)
	}
	return append(b, byte('0'+v/1000), byte('0'+v/100%10), byte('0'+v/10%10), byte('0'+v%10))
}

// appendConsoleValue writes v as a plain JSON value.
func appendConsoleValue(b []byte, v pcommon.Value) []byte {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return appendJSONString(b, v.Str())
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
	first := true
	m.Range(func(k string, v pcommon.Value) bool {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendJSONString(b, k)
		b = append(b, ':')
		b = appendConsoleValue(b, v)
		return true
	})
	return append(b, '}')
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
	return appendJSONString(b, string(repr))
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

func statusName(c ptrace.StatusCode) string {
	if int(c) >= 0 && int(c) < len(statusCodes) {
		return statusCodes[c]
	}
	return "UNSET"
}

// appendConsoleResource writes the "resource" value of a console line once
// per ResourceSpans: {"attributes":{...},"schema_url":"..."}.
func appendConsoleResource(b []byte, res pcommon.Resource, schemaURL string) []byte {
	b = append(b, `{"attributes":`...)
	b = appendConsoleMap(b, res.Attributes())
	b = append(b, `,"schema_url":`...)
	b = appendJSONString(b, schemaURL)
	return append(b, '}')
}

// appendConsoleScope writes the flat "scope" value: {"name":..,"version":..}.
func appendConsoleScope(b []byte, scope pcommon.InstrumentationScope) []byte {
	b = append(b, `{"name":`...)
	b = appendJSONString(b, scope.Name())
	b = append(b, `,"version":`...)
	b = appendJSONString(b, scope.Version())
	return append(b, '}')
}

// appendConsoleSpan appends one console line (with its '\n'). resource and
// scope are the pre-encoded values of appendConsoleResource and
// appendConsoleScope; clock is the batch's time cache (nil for none).
func appendConsoleSpan(b []byte, span ptrace.Span, resource, scope []byte, clock *timeCache) []byte {
	tid, sid, pid := span.TraceID(), span.SpanID(), span.ParentSpanID()
	// Each id is written twice (0x-prefixed, and flat): hex it once.
	var ids [64]byte
	tidHex, sidHex, pidHex := ids[:32], ids[32:48], ids[48:64]
	hex.Encode(tidHex, tid[:])
	hex.Encode(sidHex, sid[:])
	hex.Encode(pidHex, pid[:])
	b = append(b, `{"name":`...)
	b = appendJSONString(b, span.Name())
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
	b = clock.appendConsoleTime(b, uint64(span.StartTimestamp()))
	b = append(b, `,"end_time":`...)
	b = clock.appendConsoleTime(b, uint64(span.EndTimestamp()))
	st := span.Status()
	b = append(b, `,"status":{"status_code":"`...)
	b = append(b, statusName(st.Code())...)
	b = append(b, '"')
	if msg := st.Message(); msg != "" {
		b = append(b, `,"description":`...)
		b = appendJSONString(b, msg)
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
		b = appendJSONString(b, ev.Name())
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

// appendConsoleTime writes a span's start or end: null when unset.
func (c *timeCache) appendConsoleTime(b []byte, ns uint64) []byte {
	if ns == 0 {
		return append(b, "null"...)
	}
	return c.appendISOTime(b, ns)
}

// --- OTLP/JSON -------------------------------------------------------------

// appendOTLPTime writes a time as OTLP/JSON's quoted decimal nanoseconds.
func (c *timeCache) appendOTLPTime(b []byte, ns uint64) []byte {
	b = append(b, '"')
	b = c.appendUnixNano(b, ns)
	return append(b, '"')
}

func appendOTLPDouble(b []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(b, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(b, `"-Infinity"`...)
	}
	return appendFloat(b, f)
}

func appendOTLPValue(b []byte, v pcommon.Value) []byte {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		b = append(b, `{"stringValue":`...)
		b = appendJSONString(b, v.Str())
	case pcommon.ValueTypeBool:
		b = append(b, `{"boolValue":`...)
		b = strconv.AppendBool(b, v.Bool())
	case pcommon.ValueTypeInt:
		b = append(b, `{"intValue":"`...)
		b = strconv.AppendInt(b, v.Int(), 10)
		b = append(b, '"')
	case pcommon.ValueTypeDouble:
		b = append(b, `{"doubleValue":`...)
		b = appendOTLPDouble(b, v.Double())
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
	first := true
	m.Range(func(k string, v pcommon.Value) bool {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, '{')
		if k != "" {
			b = append(b, `"key":`...)
			b = appendJSONString(b, k)
			b = append(b, ',')
		}
		b = append(b, `"value":`...)
		b = appendOTLPValue(b, v)
		b = append(b, '}')
		return true
	})
	return append(b, ']')
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

func appendOTLPDropped(b []byte, field string, n uint32) []byte {
	if n == 0 {
		return b
	}
	b = append(b, `,"`...)
	b = append(b, field...)
	b = append(b, `":`...)
	return strconv.AppendUint(b, uint64(n), 10)
}

// appendOTLPResourceOpen writes `{"resource":{...},"scopeSpans":[`; the
// group is closed by appendOTLPResourceClose.
func appendOTLPResourceOpen(b []byte, res pcommon.Resource) []byte {
	b = append(b, `{"resource":{`...)
	b = appendOTLPAttrsField(b, "", res.Attributes())
	if n := res.DroppedAttributesCount(); n != 0 {
		if res.Attributes().Len() > 0 {
			b = append(b, ',')
		}
		b = append(b, `"droppedAttributesCount":`...)
		b = strconv.AppendUint(b, uint64(n), 10)
	}
	return append(b, `},"scopeSpans":[`...)
}

func appendOTLPResourceClose(b []byte, schemaURL string) []byte {
	b = append(b, ']')
	if schemaURL != "" {
		b = append(b, `,"schemaUrl":`...)
		b = appendJSONString(b, schemaURL)
	}
	return append(b, '}')
}

// appendOTLPScopeOpen writes `{"scope":{...},"spans":[`.
func appendOTLPScopeOpen(b []byte, scope pcommon.InstrumentationScope) []byte {
	b = append(b, `{"scope":{`...)
	sep := ""
	if scope.Name() != "" {
		b = append(b, `"name":`...)
		b = appendJSONString(b, scope.Name())
		sep = ","
	}
	if scope.Version() != "" {
		b = append(b, sep...)
		b = append(b, `"version":`...)
		b = appendJSONString(b, scope.Version())
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

func appendOTLPScopeClose(b []byte, schemaURL string) []byte {
	b = append(b, ']')
	if schemaURL != "" {
		b = append(b, `,"schemaUrl":`...)
		b = appendJSONString(b, schemaURL)
	}
	return append(b, '}')
}

// appendOTLPSpan writes one span object as pdata's JSON marshaler does; clock
// is the batch's time cache (nil for none).
func appendOTLPSpan(b []byte, span ptrace.Span, clock *timeCache) []byte {
	b = append(b, '{')
	sep := ""
	if tid := span.TraceID(); !tid.IsEmpty() {
		b = appendField(b, sep, "traceId")
		sep = ","
		b = append(b, '"')
		b = appendHex(b, tid[:])
		b = append(b, '"')
	}
	if sid := span.SpanID(); !sid.IsEmpty() {
		b = appendField(b, sep, "spanId")
		sep = ","
		b = append(b, '"')
		b = appendHex(b, sid[:])
		b = append(b, '"')
	}
	if ts := span.TraceState().AsRaw(); ts != "" {
		b = appendField(b, sep, "traceState")
		sep = ","
		b = appendJSONString(b, ts)
	}
	if pid := span.ParentSpanID(); !pid.IsEmpty() {
		b = appendField(b, sep, "parentSpanId")
		sep = ","
		b = append(b, '"')
		b = appendHex(b, pid[:])
		b = append(b, '"')
	}
	if f := span.Flags(); f != 0 {
		b = appendField(b, sep, "flags")
		sep = ","
		b = strconv.AppendUint(b, uint64(f), 10)
	}
	if n := span.Name(); n != "" {
		b = appendField(b, sep, "name")
		sep = ","
		b = appendJSONString(b, n)
	}
	if k := span.Kind(); k != 0 {
		b = appendField(b, sep, "kind")
		sep = ","
		b = strconv.AppendInt(b, int64(k), 10)
	}
	if t := span.StartTimestamp(); t != 0 {
		b = appendField(b, sep, "startTimeUnixNano")
		sep = ","
		b = clock.appendOTLPTime(b, uint64(t))
	}
	if t := span.EndTimestamp(); t != 0 {
		b = appendField(b, sep, "endTimeUnixNano")
		sep = ","
		b = clock.appendOTLPTime(b, uint64(t))
	}
	if span.Attributes().Len() > 0 {
		b = appendField(b, sep, "attributes")
		sep = ","
		b = appendOTLPAttributes(b, span.Attributes())
	}
	if n := span.DroppedAttributesCount(); n != 0 {
		b = appendField(b, sep, "droppedAttributesCount")
		sep = ","
		b = strconv.AppendUint(b, uint64(n), 10)
	}
	if events := span.Events(); events.Len() > 0 {
		b = appendField(b, sep, "events")
		sep = ","
		b = append(b, '[')
		for i := 0; i < events.Len(); i++ {
			ev := events.At(i)
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '{')
			esep := ""
			if t := ev.Timestamp(); t != 0 {
				b = append(b, `"timeUnixNano":`...)
				b = clock.appendOTLPTime(b, uint64(t))
				esep = ","
			}
			if ev.Name() != "" {
				b = append(b, esep...)
				b = append(b, `"name":`...)
				b = appendJSONString(b, ev.Name())
				esep = ","
			}
			if ev.Attributes().Len() > 0 {
				b = appendOTLPAttrsField(b, esep, ev.Attributes())
				esep = ","
			}
			if n := ev.DroppedAttributesCount(); n != 0 {
				b = append(b, esep...)
				b = append(b, `"droppedAttributesCount":`...)
				b = strconv.AppendUint(b, uint64(n), 10)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if n := span.DroppedEventsCount(); n != 0 {
		b = appendField(b, sep, "droppedEventsCount")
		sep = ","
		b = strconv.AppendUint(b, uint64(n), 10)
	}
	if links := span.Links(); links.Len() > 0 {
		b = appendField(b, sep, "links")
		sep = ","
		b = append(b, '[')
		for i := 0; i < links.Len(); i++ {
			l := links.At(i)
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '{')
			lsep := ""
			if tid := l.TraceID(); !tid.IsEmpty() {
				b = append(b, `"traceId":"`...)
				b = appendHex(b, tid[:])
				b = append(b, '"')
				lsep = ","
			}
			if sid := l.SpanID(); !sid.IsEmpty() {
				b = append(b, lsep...)
				b = append(b, `"spanId":"`...)
				b = appendHex(b, sid[:])
				b = append(b, '"')
				lsep = ","
			}
			if ts := l.TraceState().AsRaw(); ts != "" {
				b = append(b, lsep...)
				b = append(b, `"traceState":`...)
				b = appendJSONString(b, ts)
				lsep = ","
			}
			if l.Attributes().Len() > 0 {
				b = appendOTLPAttrsField(b, lsep, l.Attributes())
				lsep = ","
			}
			if n := l.DroppedAttributesCount(); n != 0 {
				b = append(b, lsep...)
				b = append(b, `"droppedAttributesCount":`...)
				b = strconv.AppendUint(b, uint64(n), 10)
				lsep = ","
			}
			if f := l.Flags(); f != 0 {
				b = append(b, lsep...)
				b = append(b, `"flags":`...)
				b = strconv.AppendUint(b, uint64(f), 10)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if n := span.DroppedLinksCount(); n != 0 {
		b = appendField(b, sep, "droppedLinksCount")
		sep = ","
		b = strconv.AppendUint(b, uint64(n), 10)
	}
	b = appendField(b, sep, "status")
	st := span.Status()
	b = append(b, '{')
	if m := st.Message(); m != "" {
		b = append(b, `"message":`...)
		b = appendJSONString(b, m)
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

func appendField(b []byte, sep, name string) []byte {
	b = append(b, sep...)
	b = append(b, '"')
	b = append(b, name...)
	return append(b, '"', ':')
}
