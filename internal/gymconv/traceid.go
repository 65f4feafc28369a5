// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymconv // import "github.com/otelcol-gym/otelcol-gym/internal/gymconv"

import (
	"encoding/hex"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// ParseTraceID parses the 32 hex digits of a trace id, as
// OriginalTraceAttribute holds it.
func ParseTraceID(s string) (pcommon.TraceID, bool) {
	var id pcommon.TraceID
	if len(s) != 2*len(id) {
		return id, false
	}
	if _, err := hex.Decode(id[:], []byte(s)); err != nil {
		return pcommon.TraceID{}, false
	}
	return id, true
}

// OriginalTraceID is the trace id a span with attributes attrs had before
// the gym processor gave its rollout a trace of its own: its
// OriginalTraceAttribute, when that is a string holding a trace id.
func OriginalTraceID(attrs pcommon.Map) (pcommon.TraceID, bool) {
	v, ok := attrs.Get(OriginalTraceAttribute)
	if !ok || v.Type() != pcommon.ValueTypeStr {
		return pcommon.TraceID{}, false
	}
	return ParseTraceID(v.Str())
}
