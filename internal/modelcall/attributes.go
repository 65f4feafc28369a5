// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package modelcall

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	oldconventions "go.opentelemetry.io/otel/semconv/v1.12.0"
	conventions "go.opentelemetry.io/otel/semconv/v1.37.0"
)

// ReadAttributes sets the URL attributes and peer.service of s from a
// span's attributes in one pass, each key's first value as Map.Get gives it
// (a value that is no string is absent). The gymcapture processor and the
// time split read a span's attributes with it.
func ReadAttributes(attrs pcommon.Map, s *Span) {
	var seen uint8
	take := func(bit uint8, dst *string, v pcommon.Value) {
		if seen&bit == 0 {
			seen |= bit
			if v.Type() == pcommon.ValueTypeStr {
				*dst = v.Str()
			}
		}
	}
	attrs.Range(func(k string, v pcommon.Value) bool {
		switch k {
		case string(conventions.URLPathKey):
			take(1, &s.URLPath, v)
		case string(oldconventions.HTTPTargetKey):
			take(2, &s.HTTPTarget, v)
		case string(conventions.HTTPRouteKey):
			take(4, &s.HTTPRoute, v)
		case string(conventions.URLFullKey):
			take(8, &s.URLFull, v)
		case string(oldconventions.HTTPURLKey):
			take(16, &s.HTTPURL, v)
		case string(conventions.PeerServiceKey):
			take(32, &s.PeerService, v)
		}
		return true
	})
}
