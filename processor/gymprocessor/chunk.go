// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import "go.opentelemetry.io/collector/pdata/ptrace"

// maxEmitSpans bounds the spans of one call to the next consumer. A timer
// round (a pass-through release, a settle wave, shutdown) can release far
// more spans than arrived in any one request; sent whole, such a batch can
// exceed what the next hop accepts (gRPC's default message limit refuses
// it as a permanent error); maxEmitSpans Gym spans stay well under it.
const maxEmitSpans = 2048

// splitTraces moves the spans of td into batches of at most max spans each,
// keeping every span's resource and scope. td is consumed. A td within the
// bound is returned as it is.
func splitTraces(td ptrace.Traces, max int) []ptrace.Traces {
	if td.SpanCount() <= max {
		return []ptrace.Traces{td}
	}
	var out []ptrace.Traces
	cur, n := ptrace.NewTraces(), 0
	flush := func() {
		if n > 0 {
			out = append(out, cur)
			cur, n = ptrace.NewTraces(), 0
		}
	}
	for _, rs := range td.ResourceSpans().All() {
		var dstRS ptrace.ResourceSpans
		haveRS := false
		for _, ss := range rs.ScopeSpans().All() {
			spans := ss.Spans()
			for i := 0; i < spans.Len(); {
				if n == max {
					flush()
					haveRS = false
				}
				if !haveRS {
					dstRS = cur.ResourceSpans().AppendEmpty()
					rs.Resource().CopyTo(dstRS.Resource())
					dstRS.SetSchemaUrl(rs.SchemaUrl())
					haveRS = true
				}
				dstSS := dstRS.ScopeSpans().AppendEmpty()
				ss.Scope().CopyTo(dstSS.Scope())
				dstSS.SetSchemaUrl(ss.SchemaUrl())
				take := min(spans.Len()-i, max-n)
				dst := dstSS.Spans()
				dst.EnsureCapacity(take)
				for j := i; j < i+take; j++ {
					spans.At(j).MoveTo(dst.AppendEmpty())
				}
				i += take
				n += take
			}
		}
	}
	flush()
	return out
}
