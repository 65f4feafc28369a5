// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymview

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// spanLine is one line of a spans file in gymspans' console format (design
// §5.2). Attributes, events, links, the resource and the scope are passed to
// the page as they are; only the keys the viewer uses are decoded.
type spanLine struct {
	Name    string `json:"name"`
	Context struct {
		TraceID string `json:"trace_id"`
		SpanID  string `json:"span_id"`
	} `json:"context"`
	Kind      string `json:"kind"`
	ParentID  string `json:"parent_id"`
	StartTime string `json:"start_time"`
	EndTime   string `json:"end_time"`
	Status    struct {
		Code        string `json:"status_code"`
		Description string `json:"description"`
	} `json:"status"`
	Attributes json.RawMessage `json:"attributes"`
	Events     json.RawMessage `json:"events"`
	Links      json.RawMessage `json:"links"`
	Resource   struct {
		Attributes json.RawMessage `json:"attributes"`
	} `json:"resource"`
	Scope        json.RawMessage `json:"scope"`
	TraceID      string          `json:"trace_id"`
	SpanID       string          `json:"span_id"`
	ParentSpanID string          `json:"parent_span_id"`
	StartNS      int64           `json:"start_time_unix_nano"`
	EndNS        int64           `json:"end_time_unix_nano"`
}

// spanKeys are the span attributes the viewer reads.
type spanKeys struct {
	RunID          any `json:"nemo.gym.run.id"`
	ModelRequestID any `json:"nemo.gym.model_request.id"`
	URLFull        any `json:"url.full"`
	HTTPURL        any `json:"http.url"`
	URLPath        any `json:"url.path"`
	HTTPTarget     any `json:"http.target"`
	HTTPRoute      any `json:"http.route"`
	PeerService    any `json:"peer.service"`
	ASGIEventType  any `json:"asgi.event.type"`
}

// resourceKeys are the resource attributes the viewer reads. A span's
// service is service.name.override when set (the display name Gym's
// renderer keeps), else service.name.
type resourceKeys struct {
	ServiceOverride any `json:"service.name.override"`
	ServiceName     any `json:"service.name"`
	RunID           any `json:"nemo.run.id"`
	ServerType      any `json:"nemo.gym.server.type"`
}

// viewSpan is a span as the rollout page gets it. Times are nanoseconds
// after the rollout's first start (a unix time in nanoseconds does not fit a
// JavaScript number).
type viewSpan struct {
	SpanID        string          `json:"span_id"`
	ParentID      string          `json:"parent_span_id"`
	TraceID       string          `json:"trace_id"`
	Name          string          `json:"name"`
	Label         string          `json:"label,omitempty"` // what the page shows when not the name (spanlabel.go)
	ASGI          bool            `json:"asgi,omitempty"`  // an ASGI receive/send span, folded until asked
	Kind          string          `json:"kind"`
	Service       string          `json:"service"`
	Start         int64           `json:"start"`
	End           int64           `json:"end"`
	Status        string          `json:"status"`
	StatusMessage string          `json:"status_message,omitempty"`
	Depth         int             `json:"depth"`
	Descendants   int             `json:"descendants"`
	Orphan        bool            `json:"orphan,omitempty"`
	ModelCall     bool            `json:"model_call,omitempty"`
	Exchange      int             `json:"exchange"`
	Attributes    json.RawMessage `json:"attributes"`
	Events        json.RawMessage `json:"events"`
	Links         json.RawMessage `json:"links"`
	Resource      int             `json:"resource"` // index into rolloutPage.Resources
	Scope         json.RawMessage `json:"scope,omitempty"`

	resource         json.RawMessage // its resource's attributes
	startAbs, endAbs int64
	run              string
	serverType       string
	attrs            spanKeys
}

var emptyArray, emptyObject = json.RawMessage(`[]`), json.RawMessage(`{}`)

func (l *spanLine) view() *viewSpan {
	v := &viewSpan{
		Name:          l.Name,
		Kind:          strings.TrimPrefix(l.Kind, "SpanKind."),
		Status:        l.Status.Code,
		StatusMessage: l.Status.Description,
		Attributes:    orEmpty(l.Attributes, emptyObject),
		Events:        orEmpty(l.Events, emptyArray),
		Links:         orEmpty(l.Links, emptyArray),
		resource:      orEmpty(l.Resource.Attributes, emptyObject),
		Scope:         l.Scope,
		Exchange:      -1,
	}
	v.TraceID = firstNonEmpty(l.TraceID, strings.TrimPrefix(l.Context.TraceID, "0x"))
	v.SpanID = firstNonEmpty(l.SpanID, strings.TrimPrefix(l.Context.SpanID, "0x"))
	v.ParentID = firstNonEmpty(l.ParentSpanID, strings.TrimPrefix(l.ParentID, "0x"))
	v.startAbs, v.endAbs = l.StartNS, l.EndNS
	if v.startAbs == 0 {
		v.startAbs = parseTime(l.StartTime)
	}
	if v.endAbs == 0 {
		v.endAbs = parseTime(l.EndTime)
	}
	// A key of another type than the viewer expects is only not used.
	_ = json.Unmarshal(v.Attributes, &v.attrs)
	v.Label = spanLabel(v)
	v.ASGI = isASGIEvent(v.attrs)
	var res resourceKeys
	_ = json.Unmarshal(v.resource, &res)
	v.Service = firstNonEmpty(str(res.ServiceOverride), str(res.ServiceName))
	v.run = firstNonEmpty(str(res.RunID), str(v.attrs.RunID))
	v.serverType = str(res.ServerType)
	return v
}

// parseSpanLine calls fn with the spans of one line: a console line (one
// span), or an OTLP/JSON ExportTraceServiceRequest (gymspans' otlp_json
// format). It reports whether the line was readable.
func parseSpanLine(line []byte, fn func(*viewSpan)) bool {
	if isOTLPLine(line) {
		return parseOTLPLine(line, fn)
	}
	var l spanLine
	if err := json.Unmarshal(line, &l); err != nil {
		return false
	}
	fn(l.view())
	return true
}

func isOTLPLine(line []byte) bool {
	i := bytes.IndexByte(line, '"')
	return i >= 0 && bytes.HasPrefix(line[i:], []byte(`"resourceSpans"`))
}

func parseOTLPLine(line []byte, fn func(*viewSpan)) bool {
	var u ptrace.JSONUnmarshaler
	td, err := u.UnmarshalTraces(line)
	if err != nil {
		return false
	}
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		res := rawJSON(rs.Resource().Attributes().AsRaw())
		for j := 0; j < rs.ScopeSpans().Len(); j++ {
			ss := rs.ScopeSpans().At(j)
			scope := rawJSON(map[string]any{"name": ss.Scope().Name(), "version": ss.Scope().Version()})
			for k := 0; k < ss.Spans().Len(); k++ {
				fn(otlpView(ss.Spans().At(k), res, scope))
			}
		}
	}
	return true
}

// otlpView is the console shape of an OTLP span, so the page reads one shape.
func otlpView(sp ptrace.Span, res, scope json.RawMessage) *viewSpan {
	l := spanLine{
		Name:       sp.Name(),
		Kind:       "SpanKind." + strings.ToUpper(sp.Kind().String()),
		Attributes: rawJSON(sp.Attributes().AsRaw()),
		Scope:      scope,
		TraceID:    hexID(sp.TraceID()),
		SpanID:     hexID(sp.SpanID()),
		StartNS:    int64(sp.StartTimestamp()),
		EndNS:      int64(sp.EndTimestamp()),
	}
	if !sp.ParentSpanID().IsEmpty() {
		l.ParentSpanID = hexID(sp.ParentSpanID())
	}
	l.Status.Code = strings.ToUpper(sp.Status().Code().String()) // "Unset", "Ok", "Error"
	l.Status.Description = sp.Status().Message()
	l.Resource.Attributes = res
	events := make([]map[string]any, 0, sp.Events().Len())
	for i := 0; i < sp.Events().Len(); i++ {
		e := sp.Events().At(i)
		events = append(events, map[string]any{
			"name":       e.Name(),
			"timestamp":  e.Timestamp().AsTime().UTC().Format(time.RFC3339Nano),
			"attributes": e.Attributes().AsRaw(),
		})
	}
	l.Events = rawJSON(events)
	links := make([]map[string]any, 0, sp.Links().Len())
	for i := 0; i < sp.Links().Len(); i++ {
		lk := sp.Links().At(i)
		links = append(links, map[string]any{
			"context":    map[string]any{"trace_id": "0x" + hexID(lk.TraceID()), "span_id": "0x" + hexID(lk.SpanID())},
			"attributes": lk.Attributes().AsRaw(),
		})
	}
	l.Links = rawJSON(links)
	return l.view()
}

func hexID[T pcommon.TraceID | pcommon.SpanID](id T) string {
	switch v := any(id).(type) {
	case pcommon.TraceID:
		return hex.EncodeToString(v[:])
	case pcommon.SpanID:
		return hex.EncodeToString(v[:])
	}
	return ""
}

func rawJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return emptyObject
	}
	return b
}

func orEmpty(m, empty json.RawMessage) json.RawMessage {
	if len(m) == 0 || string(m) == "null" {
		return empty
	}
	return m
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
