// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package spanjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"pgregory.net/rapid"
)

// pythonConsoleLine is a console line as Gym prints it (the Python SDK
// 1.44's ReadableSpan.to_json, design §5.2), on one line.
const pythonConsoleLine = `{"name": "gym.verify", "context": {"trace_id": "0x4bf92f3577b34da6a3ce929d0e0e4736", "span_id": "0x00f067aa0ba902b7", "trace_state": "[]"}, "kind": "SpanKind.INTERNAL", "parent_id": "0x5fb397be34d26b51", "start_time": "2026-08-21T12:00:00.123456Z", "end_time": "2026-08-21T12:00:00.412345Z", "status": {"status_code": "UNSET"}, "attributes": {"nemo.gym.server.name": "example_single_tool_call", "nemo.gym.rollout.id": "0-0"}, "events": [], "links": [], "resource": {"attributes": {"service.name": "nemo-gym/example_single_tool_call", "nemo.run.id": "4f2a91c0be31", "dl.rank": 0}, "schema_url": ""}}`

// orderedKeys returns the keys of the JSON object at the top of line, in order.
func orderedKeys(t *testing.T, obj []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(obj))
	tok, err := dec.Token()
	require.NoError(t, err)
	require.Equal(t, json.Delim('{'), tok)
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		require.NoError(t, err)
		keys = append(keys, k.(string))
		var skip json.RawMessage
		require.NoError(t, dec.Decode(&skip))
	}
	return keys
}

// TestConsoleMatchesPythonShape encodes the reference's span and checks that
// the line is the Python line plus the flat fields of design §5.2: same keys
// in the same order, same values.
func TestConsoleMatchesPythonShape(t *testing.T) {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "nemo-gym/example_single_tool_call")
	rs.Resource().Attributes().PutStr("nemo.run.id", "4f2a91c0be31")
	rs.Resource().Attributes().PutInt("dl.rank", 0)
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("nemo.lens.helpers")
	span := ss.Spans().AppendEmpty()
	span.SetName("gym.verify")
	span.SetTraceID(pcommon.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36})
	span.SetSpanID(pcommon.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7})
	span.SetParentSpanID(pcommon.SpanID{0x5f, 0xb3, 0x97, 0xbe, 0x34, 0xd2, 0x6b, 0x51})
	span.SetKind(ptrace.SpanKindInternal)
	span.SetStartTimestamp(1787313600123456789) // 2026-08-21T12:00:00.123456789Z
	span.SetEndTimestamp(1787313600412345000)
	span.Attributes().PutStr("nemo.gym.server.name", "example_single_tool_call")
	span.Attributes().PutStr("nemo.gym.rollout.id", "0-0")

	res := AppendConsoleResource(nil, rs.Resource(), rs.SchemaUrl(), ServiceNames{})
	scope := AppendConsoleScope(nil, ss.Scope())
	line := AppendConsoleSpan(nil, span, res, scope, nil)
	require.Equal(t, byte('\n'), line[len(line)-1])
	require.Equal(t, 1, bytes.Count(line, []byte("\n")), "one line")

	pyKeys := orderedKeys(t, []byte(pythonConsoleLine))
	flatKeys := []string{"trace_id", "span_id", "parent_span_id", "start_time_unix_nano", "end_time_unix_nano", "scope"}
	assert.Equal(t, append(pyKeys, flatKeys...), orderedKeys(t, line))

	var py, ours map[string]any
	require.NoError(t, json.Unmarshal([]byte(pythonConsoleLine), &py))
	require.NoError(t, json.Unmarshal(line, &ours))
	for _, k := range pyKeys {
		assert.Equal(t, py[k], ours[k], "key %q", k)
	}
	assert.Equal(t, []string{"trace_id", "span_id", "trace_state"}, orderedKeys(t, mustRaw(t, line, "context")))
	assert.Equal(t, []string{"attributes", "schema_url"}, orderedKeys(t, mustRaw(t, line, "resource")))
	assert.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", ours["trace_id"])
	assert.Equal(t, "00f067aa0ba902b7", ours["span_id"])
	assert.Equal(t, "5fb397be34d26b51", ours["parent_span_id"])
	assert.Equal(t, map[string]any{"name": "nemo.lens.helpers", "version": ""}, ours["scope"])
	// Full precision survives in the flat fields (json.Number keeps every digit).
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var num map[string]any
	require.NoError(t, dec.Decode(&num))
	assert.Equal(t, json.Number("1787313600123456789"), num["start_time_unix_nano"])
}

func mustRaw(t *testing.T, line []byte, key string) []byte {
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(line, &m))
	return m[key]
}

func TestAppendJSONString(t *testing.T) {
	for in, want := range map[string]string{
		"":                     `""`,
		"plain":                `"plain"`,
		"q\"b\\":               `"q\"b\\"`,
		"\n\r\t\x00\x1f":       `"\n\r\t\u0000\u001f"`,
		"é✓😀":                  `"é✓😀"`,
		"a\xffb":               `"a` + "\ufffd" + `b"`,
		"\xe2\x82":             `"` + "\ufffd\ufffd" + `"`,
		"\xed\xa0\x80":         `"` + "\ufffd\ufffd\ufffd" + `"`, // a UTF-16 surrogate is not UTF-8
		"\u2028</script>&\x7f": "\"\u2028</script>&\x7f\"",
	} {
		got := AppendJSONString(nil, in)
		assert.Equal(t, want, string(got), "%q", in)
		var back string
		require.NoError(t, json.Unmarshal(got, &back), "%q", in)
		if utf8.ValidString(in) {
			assert.Equal(t, in, back)
		}
	}
}

// TestConsoleDoubles: doubles as Python's repr writes them (the values are
// Python 3.13's repr of each; TestConsolePythonFidelity in e2e compares with
// the real SDK's console lines).
func TestConsoleDoubles(t *testing.T) {
	for in, want := range map[float64]string{
		1: "1.0", -3: "-3.0", 0.25: "0.25", 1e21: "1e+21", 1e-7: "1e-07", 123456789: "123456789.0", 1.5e300: "1.5e+300",
		1e16: "1e+16", 1e15: "1000000000000000.0", 0.0001: "0.0001", 0.00001: "1e-05", 1.5e-5: "1.5e-05",
		123456789012345680.0: "1.2345678901234568e+17", math.Copysign(0, -1): "-0.0", 0: "0.0", 5e-324: "5e-324",
		1.7976931348623157e308: "1.7976931348623157e+308", 0.1: "0.1", 2.5e-10: "2.5e-10", 9999999999999998.0: "9999999999999998.0",
		12345.678: "12345.678",
	} {
		assert.Equal(t, want, string(appendConsoleDouble(nil, in)))
	}
}

func TestTraceStateRepr(t *testing.T) {
	for in, want := range map[string]string{
		"a=b":            `"['{key=a, value=b}']"`,
		"a=b,c=d":        `"['{key=a, value=b}', '{key=c, value=d}']"`,
		"v=x'y":          `"[\"{key=v, value=x'y}\"]"`,
		" a=b , bogus ,": `"['{key=a, value=b}']"`,
	} {
		assert.Equal(t, want, string(appendTraceStateRepr(nil, in)), in)
	}
}

func TestISOTimeMatchesTimeFormat(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ns := rapid.Uint64Range(0, uint64(math.MaxInt64)).Draw(t, "ns")
		want := `"` + time.Unix(0, int64(ns)).UTC().Format("2006-01-02T15:04:05.000000Z") + `"`
		if got := string(appendISOTime(nil, ns)); got != want {
			t.Fatalf("%d: got %s, want %s", ns, got, want)
		}
	})
	for _, ns := range []uint64{0, 1, 951782400e9 /* 2000-02-29 */, 4107542399999999999 /* 2100-02-28T23:59:59 */, math.MaxInt64} {
		want := `"` + time.Unix(0, int64(ns)).UTC().Format("2006-01-02T15:04:05.000000Z") + `"`
		assert.Equal(t, want, string(appendISOTime(nil, ns)))
	}
}

// A TimeCache writes what the uncached functions write, whatever the order
// of the times: near ones (the cache's hits), across a second, a minute or
// a day, and far ones.
func TestTimeCacheMatchesUncached(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var c TimeCache
		ns := rapid.Uint64Range(0, uint64(math.MaxInt64)).Draw(t, "start")
		for i, n := 0, rapid.IntRange(1, 50).Draw(t, "n"); i < n; i++ {
			switch rapid.IntRange(0, 3).Draw(t, "step") {
			case 0:
				ns += rapid.Uint64Range(0, 2e9).Draw(t, "near")
			case 1:
				ns -= min(ns, rapid.Uint64Range(0, 2e9).Draw(t, "back"))
			case 2:
				ns += rapid.Uint64Range(0, 100*86400e9).Draw(t, "far")
			default:
				ns = rapid.Uint64Range(0, uint64(math.MaxInt64)+1000).Draw(t, "any")
			}
			if got, want := string(c.appendISOTime(nil, ns)), string(appendISOTime(nil, ns)); got != want {
				t.Fatalf("ISO %d: cached %s, uncached %s", ns, got, want)
			}
			if got, want := string(c.appendUnixNano(nil, ns)), strconv.FormatUint(ns, 10); got != want {
				t.Fatalf("unix nano %d: cached %s, want %s", ns, got, want)
			}
		}
	})
}

// AppendJSONString's word-at-a-time skip changes nothing: it writes what a
// rune-at-a-time encoder writes, at every alignment of the special bytes.
func TestAppendJSONStringMatchesRuneByRune(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		parts := rapid.SliceOf(rapid.OneOf(
			rapid.StringMatching(`[ -~]{0,20}`),
			rapid.SampledFrom([]string{"\"", "\\", "\n", "\x00", "\x1f", "\x7f", "\x80", "\xff", "é", "😀", "\xe2\x82", "\u2028"}),
		)).Draw(t, "parts")
		s := strings.Join(parts, "")
		want := []byte{'"'}
		for i := 0; i < len(s); {
			r, size := utf8.DecodeRuneInString(s[i:])
			switch {
			case r == utf8.RuneError && size == 1:
				want = append(want, "\ufffd"...)
			case r == '"' || r == '\\':
				want = append(want, '\\', byte(r))
			case r == '\n':
				want = append(want, `\n`...)
			case r == '\r':
				want = append(want, `\r`...)
			case r == '\t':
				want = append(want, `\t`...)
			case r < 0x20:
				want = append(want, fmt.Sprintf(`\u%04x`, r)...)
			default:
				want = append(want, s[i:i+size]...)
			}
			i += size
		}
		want = append(want, '"')
		if got := AppendJSONString(nil, s); string(got) != string(want) {
			t.Fatalf("%q: got %s, want %s", s, got, want)
		}
	})
}

func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "a", "\xff", "\"\\\n", "é😀", "\xed\xa0\x80", strings.Repeat("x\x00", 10)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := AppendJSONString(nil, s)
		if !json.Valid(out) || !utf8.Valid(out) || bytes.IndexByte(out, '\n') >= 0 {
			t.Fatalf("%q -> %q", s, out)
		}
		var back string
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatal(err)
		}
		if utf8.ValidString(s) && back != s {
			t.Fatalf("%q came back as %q", s, back)
		}
	})
}

// drawValue builds a random attribute value, nested up to depth.
func drawValue(t *rapid.T, v pcommon.Value, depth int) {
	kinds := 7
	if depth == 0 {
		kinds = 5
	}
	switch rapid.IntRange(0, kinds-1).Draw(t, "type") {
	case 0:
		v.SetStr(rapid.StringOf(rapid.RuneFrom(nil, unicode.Latin, unicode.Cc, unicode.Han)).Draw(t, "s") + string(rapid.SliceOf(rapid.Byte()).Draw(t, "raw")))
	case 1:
		v.SetBool(rapid.Bool().Draw(t, "b"))
	case 2:
		v.SetInt(rapid.Int64().Draw(t, "i"))
	case 3:
		v.SetDouble(rapid.Float64().Draw(t, "d"))
	case 4:
		v.SetEmptyBytes().FromRaw(rapid.SliceOf(rapid.Byte()).Draw(t, "bytes"))
	case 5:
		s := v.SetEmptySlice()
		for n := rapid.IntRange(0, 3).Draw(t, "n"); n > 0; n-- {
			drawValue(t, s.AppendEmpty(), depth-1)
		}
	case 6:
		m := v.SetEmptyMap()
		for n := rapid.IntRange(0, 3).Draw(t, "n"); n > 0; n-- {
			drawValue(t, m.PutEmpty(rapid.String().Draw(t, "k")), depth-1)
		}
	}
}

// TestEncodersProperty: whatever a span holds, both encoders give one line
// of valid UTF-8 JSON, and the OTLP/JSON line reads back with pdata.
func TestEncodersProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		td := ptrace.NewTraces()
		rs := td.ResourceSpans().AppendEmpty()
		drawValue(t, rs.Resource().Attributes().PutEmpty(rapid.String().Draw(t, "rk")), 2)
		ss := rs.ScopeSpans().AppendEmpty()
		ss.Scope().SetName(rapid.String().Draw(t, "scope"))
		span := ss.Spans().AppendEmpty()
		span.SetName(rapid.String().Draw(t, "name") + string(rapid.SliceOf(rapid.Byte()).Draw(t, "rawname")))
		span.SetKind(ptrace.SpanKind(rapid.IntRange(0, 6).Draw(t, "kind")))
		span.SetStartTimestamp(pcommon.Timestamp(rapid.Uint64().Draw(t, "start")))
		span.Status().SetCode(ptrace.StatusCode(rapid.IntRange(0, 3).Draw(t, "status")))
		span.Status().SetMessage(rapid.String().Draw(t, "msg"))
		span.TraceState().FromRaw(rapid.String().Draw(t, "ts"))
		for n := rapid.IntRange(0, 4).Draw(t, "attrs"); n > 0; n-- {
			drawValue(t, span.Attributes().PutEmpty(rapid.String().Draw(t, "k")), 2)
		}
		ev := span.Events().AppendEmpty()
		drawValue(t, ev.Attributes().PutEmpty("e"), 1)
		l := span.Links().AppendEmpty()
		drawValue(t, l.Attributes().PutEmpty("l"), 1)

		res := AppendConsoleResource(nil, rs.Resource(), rs.SchemaUrl(), ServiceNames{})
		scope := AppendConsoleScope(nil, ss.Scope())
		for _, line := range [][]byte{
			AppendConsoleSpan(nil, span, res, scope, nil),
			append(AppendOTLPSpan(nil, span, nil), '\n'),
		} {
			if bytes.Count(line, []byte("\n")) != 1 || line[len(line)-1] != '\n' || !json.Valid(line) || !utf8.Valid(line) {
				t.Fatalf("bad line %q", line)
			}
		}
		var req []byte
		req = append(req, `{"resourceSpans":[`...)
		req = AppendOTLPResourceOpen(req, rs.Resource(), ServiceNames{})
		req = AppendOTLPScopeOpen(req, ss.Scope())
		req = AppendOTLPSpan(req, span, nil)
		req = AppendOTLPScopeClose(req, ss.SchemaUrl())
		req = AppendOTLPResourceClose(req, rs.SchemaUrl())
		req = append(req, ']', '}')
		back, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(req)
		if err != nil {
			t.Fatalf("pdata cannot read %s: %v", req, err)
		}
		if back.SpanCount() != 1 || back.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).Kind() != span.Kind() {
			t.Fatalf("read back differently: %s", req)
		}
	})
}
