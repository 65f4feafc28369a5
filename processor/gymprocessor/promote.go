// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// promoteToResource regroups td so that each ResourceSpans holds the spans of
// one rollout and carries the rollout attribute on its resource (design §4.2,
// promote_to_resource). Spans in no rollout keep a resource without it.
func promoteToResource(td ptrace.Traces, attr string) ptrace.Traces {
	out := ptrace.NewTraces()
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		byRollout := map[string]ptrace.ResourceSpans{}
		sss := rs.ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			ss := sss.At(j)
			scopes := map[string]ptrace.SpanSlice{}
			spans := ss.Spans()
			for k := 0; k < spans.Len(); k++ {
				sp := spans.At(k)
				rollout := ""
				if v, ok := sp.Attributes().Get(attr); ok && v.Type() == pcommon.ValueTypeStr {
					rollout = v.Str()
				}
				dst, ok := scopes[rollout]
				if !ok {
					ors, ok := byRollout[rollout]
					if !ok {
						ors = out.ResourceSpans().AppendEmpty()
						rs.Resource().CopyTo(ors.Resource())
						ors.SetSchemaUrl(rs.SchemaUrl())
						if rollout != "" {
							ors.Resource().Attributes().PutStr(attr, rollout)
						}
						byRollout[rollout] = ors
					}
					oss := ors.ScopeSpans().AppendEmpty()
					ss.Scope().CopyTo(oss.Scope())
					oss.SetSchemaUrl(ss.SchemaUrl())
					dst = oss.Spans()
					scopes[rollout] = dst
				}
				sp.MoveTo(dst.AppendEmpty())
			}
		}
	}
	return out
}
