// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package recovery // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/recovery"

// Reading lines back (recover.go). A console line is read into a
// span with what recovery needs of it: its ids, kind, times, status, name,
// attributes and resource attributes (events, links and the scope are not
// read: the line itself is what recovery writes). An OTLP/JSON line is an
// ExportTraceServiceRequest and reads back whole.

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/dedup"
	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/spanjson"
	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
)

// consoleLine is the part of a console line recovery reads.
type consoleLine struct {
	Name   string `json:"name"`
	Kind   string `json:"kind"`
	Status struct {
		Code string `json:"status_code"`
	} `json:"status"`
	Attributes map[string]json.RawMessage `json:"attributes"`
	Resource   struct {
		Attributes map[string]json.RawMessage `json:"attributes"`
	} `json:"resource"`
	TraceID      string `json:"trace_id"`
	SpanID       string `json:"span_id"`
	ParentSpanID string `json:"parent_span_id"`
	Start        uint64 `json:"start_time_unix_nano"`
	End          uint64 `json:"end_time_unix_nano"`
}

// decodeLine reads one line of a span file of the format.
func decodeLine(otlp bool, line []byte) (ptrace.Traces, error) {
	if otlp {
		var u ptrace.JSONUnmarshaler
		return u.UnmarshalTraces(line)
	}
	var l consoleLine
	if err := json.Unmarshal(line, &l); err != nil {
		return ptrace.Traces{}, err
	}
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	if err := putRaw(rs.Resource().Attributes(), l.Resource.Attributes); err != nil {
		return ptrace.Traces{}, err
	}
	span := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	span.SetName(l.Name)
	span.SetKind(spanjson.SpanKindOf(l.Kind))
	span.Status().SetCode(spanjson.StatusCodeOf(l.Status.Code))
	var tid pcommon.TraceID
	var sid, pid pcommon.SpanID
	if err := decodeHexID(tid[:], l.TraceID); err != nil {
		return ptrace.Traces{}, fmt.Errorf("trace_id: %w", err)
	}
	if err := decodeHexID(sid[:], l.SpanID); err != nil {
		return ptrace.Traces{}, fmt.Errorf("span_id: %w", err)
	}
	if l.ParentSpanID != "" {
		if err := decodeHexID(pid[:], l.ParentSpanID); err != nil {
			return ptrace.Traces{}, fmt.Errorf("parent_span_id: %w", err)
		}
	}
	span.SetTraceID(tid)
	span.SetSpanID(sid)
	span.SetParentSpanID(pid)
	span.SetStartTimestamp(pcommon.Timestamp(l.Start))
	span.SetEndTimestamp(pcommon.Timestamp(l.End))
	if err := putRaw(span.Attributes(), l.Attributes); err != nil {
		return ptrace.Traces{}, err
	}
	return td, nil
}

func decodeHexID(dst []byte, s string) error {
	if len(s) != 2*len(dst) {
		return fmt.Errorf("%q is not %d hex digits", s, 2*len(dst))
	}
	_, err := hex.Decode(dst, []byte(s))
	return err
}

// putRaw puts JSON attribute values into m: strings, booleans, integers
// (numbers without a fraction or exponent), doubles, arrays and objects.
func putRaw(m pcommon.Map, attrs map[string]json.RawMessage) error {
	for k, raw := range attrs {
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			return fmt.Errorf("attribute %q: %w", k, err)
		}
		putValue(m.PutEmpty(k), v)
	}
	return nil
}

func putValue(dst pcommon.Value, v any) {
	switch x := v.(type) {
	case string:
		dst.SetStr(x)
	case bool:
		dst.SetBool(x)
	case json.Number:
		if !strings.ContainsAny(x.String(), ".eE") {
			if i, err := x.Int64(); err == nil {
				dst.SetInt(i)
				return
			}
		}
		f, _ := x.Float64()
		dst.SetDouble(f)
	case []any:
		s := dst.SetEmptySlice()
		for _, e := range x {
			putValue(s.AppendEmpty(), e)
		}
	case map[string]any:
		mm := dst.SetEmptyMap()
		for k, e := range x {
			putValue(mm.PutEmpty(k), e)
		}
	}
}

// lineKeys are the dedup keys of the spans of one line of a span file.
func lineKeys(otlp bool, line []byte, out []dedup.Key) []dedup.Key {
	if otlp {
		td, err := decodeLine(true, line)
		if err != nil {
			return out
		}
		rss := td.ResourceSpans()
		for i := 0; i < rss.Len(); i++ {
			for j := 0; j < rss.At(i).ScopeSpans().Len(); j++ {
				spans := rss.At(i).ScopeSpans().At(j).Spans()
				for k := 0; k < spans.Len(); k++ {
					out = append(out, dedup.KeyOf(spans.At(k)))
				}
			}
		}
		return out
	}
	var l struct {
		TraceID    string                     `json:"trace_id"`
		SpanID     string                     `json:"span_id"`
		Attributes map[string]json.RawMessage `json:"attributes"`
	}
	if json.Unmarshal(line, &l) != nil {
		return out
	}
	var tid pcommon.TraceID
	var sid pcommon.SpanID
	if decodeHexID(tid[:], l.TraceID) != nil || decodeHexID(sid[:], l.SpanID) != nil {
		return out
	}
	if raw, ok := l.Attributes[gymconv.OriginalTraceAttribute]; ok {
		var orig string
		if json.Unmarshal(raw, &orig) == nil {
			if o, ok := gymconv.ParseTraceID(orig); ok {
				tid = o
			}
		}
	}
	return append(out, dedup.MakeKey(tid, sid))
}

// rootKey identifies a rollouts.jsonl line: its trace and root span.
func rootKey(line []byte) (string, bool) {
	var l struct {
		TraceID    string `json:"trace_id"`
		RootSpanID string `json:"root_span_id"`
	}
	if json.Unmarshal(line, &l) != nil || l.RootSpanID == "" {
		return "", false
	}
	return l.TraceID + "/" + l.RootSpanID, true
}
