// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package replay

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// consoleSpan is one span as the OpenTelemetry Python SDK's
// ReadableSpan.to_json() writes it (Gym's NEMO_GYM_OTEL_EXPORTER=console),
// and as gymspans writes it (the same keys, plus the flat ones: design §5.2;
// start_time_unix_nano, when present, keeps the nanoseconds the ISO time
// lost).
type consoleSpan struct {
	Name    string          `json:"name"`
	Context *consoleContext `json:"context"`
	Kind    string          `json:"kind"`
	Parent  *string         `json:"parent_id"`
	Start   string          `json:"start_time"`
	End     string          `json:"end_time"`
	StartNS *uint64         `json:"start_time_unix_nano"`
	EndNS   *uint64         `json:"end_time_unix_nano"`
	Status  struct {
		Code        string `json:"status_code"`
		Description string `json:"description"`
	} `json:"status"`
	Attributes map[string]json.RawMessage `json:"attributes"`
	Events     []struct {
		Name       string                     `json:"name"`
		Timestamp  string                     `json:"timestamp"`
		Attributes map[string]json.RawMessage `json:"attributes"`
	} `json:"events"`
	Links []struct {
		Context    *consoleContext            `json:"context"`
		Attributes map[string]json.RawMessage `json:"attributes"`
	} `json:"links"`
	Resource struct {
		Attributes map[string]json.RawMessage `json:"attributes"`
		SchemaURL  string                     `json:"schema_url"`
	} `json:"resource"`
	Scope struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"scope"`
}

type consoleContext struct {
	TraceID string `json:"trace_id"`
	SpanID  string `json:"span_id"`
}

// errNotSpan is a JSON object that is not a span (a log line in JSON).
var errNotSpan = errors.New("not a span")

// decodeConsoleSpan decodes one console span object into a new
// ResourceSpans of rss (its resource from the object).
func decodeConsoleSpan(obj []byte, rss ptrace.ResourceSpansSlice) error {
	var cs consoleSpan
	d := json.NewDecoder(bytes.NewReader(obj))
	d.UseNumber()
	if err := d.Decode(&cs); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	if cs.Context == nil || cs.Context.SpanID == "" {
		return errNotSpan
	}
	traceID, err := decodeTraceID(cs.Context.TraceID)
	if err != nil {
		return fmt.Errorf("context.trace_id: %w", err)
	}
	spanID, err := decodeSpanID(cs.Context.SpanID)
	if err != nil {
		return fmt.Errorf("context.span_id: %w", err)
	}
	start, err := spanTime(cs.Start, cs.StartNS)
	if err != nil {
		return fmt.Errorf("start_time: %w", err)
	}
	end, err := spanTime(cs.End, cs.EndNS)
	if err != nil {
		return fmt.Errorf("end_time: %w", err)
	}
	kind, err := spanKind(cs.Kind)
	if err != nil {
		return err
	}
	code, err := statusCode(cs.Status.Code)
	if err != nil {
		return err
	}
	rs := ptrace.NewResourceSpans()
	if err := putAttributes(rs.Resource().Attributes(), cs.Resource.Attributes); err != nil {
		return fmt.Errorf("resource.attributes: %w", err)
	}
	rs.SetSchemaUrl(cs.Resource.SchemaURL)
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName(cs.Scope.Name)
	ss.Scope().SetVersion(cs.Scope.Version)
	span := ss.Spans().AppendEmpty()
	span.SetName(cs.Name)
	span.SetTraceID(traceID)
	span.SetSpanID(spanID)
	if cs.Parent != nil && *cs.Parent != "" {
		parent, err := decodeSpanID(*cs.Parent)
		if err != nil {
			return fmt.Errorf("parent_id: %w", err)
		}
		span.SetParentSpanID(parent)
	}
	span.SetKind(kind)
	span.SetStartTimestamp(start)
	span.SetEndTimestamp(end)
	span.Status().SetCode(code)
	span.Status().SetMessage(cs.Status.Description)
	if err := putAttributes(span.Attributes(), cs.Attributes); err != nil {
		return fmt.Errorf("attributes: %w", err)
	}
	for i, e := range cs.Events {
		ev := span.Events().AppendEmpty()
		ev.SetName(e.Name)
		ts, err := spanTime(e.Timestamp, nil)
		if err != nil {
			return fmt.Errorf("events[%d].timestamp: %w", i, err)
		}
		ev.SetTimestamp(ts)
		if err := putAttributes(ev.Attributes(), e.Attributes); err != nil {
			return fmt.Errorf("events[%d].attributes: %w", i, err)
		}
	}
	for i, l := range cs.Links {
		if l.Context == nil {
			return fmt.Errorf("links[%d]: no context", i)
		}
		lt, err := decodeTraceID(l.Context.TraceID)
		if err != nil {
			return fmt.Errorf("links[%d].context.trace_id: %w", i, err)
		}
		ls, err := decodeSpanID(l.Context.SpanID)
		if err != nil {
			return fmt.Errorf("links[%d].context.span_id: %w", i, err)
		}
		lk := span.Links().AppendEmpty()
		lk.SetTraceID(lt)
		lk.SetSpanID(ls)
		if err := putAttributes(lk.Attributes(), l.Attributes); err != nil {
			return fmt.Errorf("links[%d].attributes: %w", i, err)
		}
	}
	rs.MoveTo(rss.AppendEmpty())
	return nil
}

func decodeTraceID(s string) (pcommon.TraceID, error) {
	var id pcommon.TraceID
	return id, decodeHex(s, id[:])
}

func decodeSpanID(s string) (pcommon.SpanID, error) {
	var id pcommon.SpanID
	return id, decodeHex(s, id[:])
}

// decodeHex decodes "0x<hex>" or "<hex>" of exactly len(dst) bytes.
func decodeHex(s string, dst []byte) error {
	h := strings.TrimPrefix(s, "0x")
	if len(h) != 2*len(dst) {
		return fmt.Errorf("%q is not %d hex digits", s, 2*len(dst))
	}
	if _, err := hex.Decode(dst, []byte(h)); err != nil {
		return fmt.Errorf("%q is not %d hex digits", s, 2*len(dst))
	}
	return nil
}

// spanTime is ns when given (gymspans' full precision), else the ISO time
// the SDK writes ("2026-08-21T12:00:00.123456Z").
func spanTime(iso string, ns *uint64) (pcommon.Timestamp, error) {
	if ns != nil {
		return pcommon.Timestamp(*ns), nil
	}
	t, err := time.Parse(time.RFC3339Nano, iso)
	if err != nil {
		return 0, fmt.Errorf("%q is not an ISO 8601 time", iso)
	}
	return pcommon.NewTimestampFromTime(t), nil
}

func spanKind(s string) (ptrace.SpanKind, error) {
	switch s {
	case "SpanKind.INTERNAL":
		return ptrace.SpanKindInternal, nil
	case "SpanKind.SERVER":
		return ptrace.SpanKindServer, nil
	case "SpanKind.CLIENT":
		return ptrace.SpanKindClient, nil
	case "SpanKind.PRODUCER":
		return ptrace.SpanKindProducer, nil
	case "SpanKind.CONSUMER":
		return ptrace.SpanKindConsumer, nil
	case "":
		return ptrace.SpanKindUnspecified, nil
	}
	return 0, fmt.Errorf("kind: %q is not a SpanKind", s)
}

func statusCode(s string) (ptrace.StatusCode, error) {
	switch s {
	case "UNSET", "":
		return ptrace.StatusCodeUnset, nil
	case "OK":
		return ptrace.StatusCodeOk, nil
	case "ERROR":
		return ptrace.StatusCodeError, nil
	}
	return 0, fmt.Errorf("status.status_code: %q is not UNSET, OK or ERROR", s)
}

// putAttributes puts the plain JSON values of attrs into m: strings,
// booleans, integers (numbers without a fraction or exponent), doubles,
// arrays and maps; null is skipped. Keys are put in sorted order, so the
// output does not depend on Go's map order.
func putAttributes(m pcommon.Map, attrs map[string]json.RawMessage) error {
	keys := make([]string, 0, len(attrs))
	for k := range attrs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	m.EnsureCapacity(len(keys))
	for _, k := range keys {
		var v any
		d := json.NewDecoder(bytes.NewReader(attrs[k]))
		d.UseNumber()
		if err := d.Decode(&v); err != nil {
			return fmt.Errorf("%q: %w", k, err)
		}
		if v == nil {
			continue
		}
		if err := putValue(m.PutEmpty(k), v); err != nil {
			return fmt.Errorf("%q: %w", k, err)
		}
	}
	return nil
}

func putValue(dst pcommon.Value, v any) error {
	switch x := v.(type) {
	case string:
		dst.SetStr(x)
	case bool:
		dst.SetBool(x)
	case json.Number:
		if i, err := x.Int64(); err == nil && !strings.ContainsAny(string(x), ".eE") {
			dst.SetInt(i)
			return nil
		}
		f, err := x.Float64()
		if err != nil {
			return err
		}
		dst.SetDouble(f)
	case []any:
		s := dst.SetEmptySlice()
		for _, e := range x {
			if e == nil {
				s.AppendEmpty()
				continue
			}
			if err := putValue(s.AppendEmpty(), e); err != nil {
				return err
			}
		}
	case map[string]any:
		mm := dst.SetEmptyMap()
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if x[k] == nil {
				continue
			}
			if err := putValue(mm.PutEmpty(k), x[k]); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("unexpected JSON value %T", v)
	}
	return nil
}
