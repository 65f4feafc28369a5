// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package credentials // import "github.com/otelcol-gym/otelcol-gym/internal/credentials"

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Removed is told the key of every attribute removed (never its value).
// It may be nil.
type Removed func(key string)

// RemoveFromTraces removes the attributes that carry credentials from td's
// resources, spans, span events and span links, and returns how many it
// removed. td must be mutable.
func (r *Rule) RemoveFromTraces(td ptrace.Traces, removed Removed) int {
	if r.Off() {
		return 0
	}
	n := 0
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		n += r.RemoveFromMap(rs.Resource().Attributes(), removed)
		sss := rs.ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			spans := sss.At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				n += r.removeFromSpan(spans.At(k), removed)
			}
		}
	}
	return n
}

func (r *Rule) removeFromSpan(span ptrace.Span, removed Removed) int {
	n := r.RemoveFromMap(span.Attributes(), removed)
	events := span.Events()
	for i := 0; i < events.Len(); i++ {
		n += r.RemoveFromMap(events.At(i).Attributes(), removed)
	}
	links := span.Links()
	for i := 0; i < links.Len(); i++ {
		n += r.RemoveFromMap(links.At(i).Attributes(), removed)
	}
	return n
}

// InTraces reports whether td holds an attribute that carries a credential
// where RemoveFromTraces looks; it reads td only, so a consumer that must not
// change its input can copy td only when it has to.
func (r *Rule) InTraces(td ptrace.Traces) bool {
	if r.Off() {
		return false
	}
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		if r.inMap(rs.Resource().Attributes()) {
			return true
		}
		sss := rs.ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			spans := sss.At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				if r.inSpan(spans.At(k)) {
					return true
				}
			}
		}
	}
	return false
}

func (r *Rule) inSpan(span ptrace.Span) bool {
	if r.inMap(span.Attributes()) {
		return true
	}
	events := span.Events()
	for i := 0; i < events.Len(); i++ {
		if r.inMap(events.At(i).Attributes()) {
			return true
		}
	}
	links := span.Links()
	for i := 0; i < links.Len(); i++ {
		if r.inMap(links.At(i).Attributes()) {
			return true
		}
	}
	return false
}

// RemoveFromMetrics removes the attributes that carry credentials from md's
// resources and returns how many it removed. md must be mutable.
func (r *Rule) RemoveFromMetrics(md pmetric.Metrics, removed Removed) int {
	if r.Off() {
		return 0
	}
	n := 0
	rms := md.ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		n += r.RemoveFromMap(rms.At(i).Resource().Attributes(), removed)
	}
	return n
}

// InMetrics reports whether md's resources hold an attribute that carries a
// credential; it reads md only.
func (r *Rule) InMetrics(md pmetric.Metrics) bool {
	if r.Off() {
		return false
	}
	rms := md.ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		if r.inMap(rms.At(i).Resource().Attributes()) {
			return true
		}
	}
	return false
}

// RemoveFromLogs removes the attributes that carry credentials from ld's
// resources and returns how many it removed. ld must be mutable.
func (r *Rule) RemoveFromLogs(ld plog.Logs, removed Removed) int {
	if r.Off() {
		return 0
	}
	n := 0
	rls := ld.ResourceLogs()
	for i := 0; i < rls.Len(); i++ {
		n += r.RemoveFromMap(rls.At(i).Resource().Attributes(), removed)
	}
	return n
}

// InLogs reports whether ld's resources hold an attribute that carries a
// credential; it reads ld only.
func (r *Rule) InLogs(ld plog.Logs) bool {
	if r.Off() {
		return false
	}
	rls := ld.ResourceLogs()
	for i := 0; i < rls.Len(); i++ {
		if r.inMap(rls.At(i).Resource().Attributes()) {
			return true
		}
	}
	return false
}

// RemoveFromMap removes the attributes of m that carry credentials and
// returns how many it removed. m is changed only when one is found.
func (r *Rule) RemoveFromMap(m pcommon.Map, removed Removed) int {
	if r.Off() || !r.inMap(m) {
		return 0
	}
	n := 0
	m.RemoveIf(func(k string, _ pcommon.Value) bool {
		if !r.Match(k) {
			return false
		}
		n++
		if removed != nil {
			removed(k)
		}
		return true
	})
	return n
}

func (r *Rule) inMap(m pcommon.Map) bool {
	for k := range m.All() {
		if r.Match(k) {
			return true
		}
	}
	return false
}
