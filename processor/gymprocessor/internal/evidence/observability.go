// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package evidence // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/evidence"

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"

	oldconventions "go.opentelemetry.io/otel/semconv/v1.12.0"
	conventions "go.opentelemetry.io/otel/semconv/v1.37.0"
)

// ObservabilityOffSign reports whether a span without direct evidence shows
// that Gym runs with observability off, so that no rollout id will come
// (design §4.2): Gym's gym.rollout span without the rollout attribute (Gym
// sets it on every gym.rollout once observability is on), or a SERVER POST
// on a model route (model_routes) without the /<url_prefix>/ prefix (Gym
// prefixes every model call of a rollout once observability is on). A POST
// without any URL attribute shows nothing.
func (f *Finder) ObservabilityOffSign(sp ptrace.Span) bool {
	if sp.Name() == gymconv.RolloutSpanName {
		return true
	}
	if sp.Kind() != ptrace.SpanKindServer {
		return false
	}
	attrs := sp.Attributes()
	if Method(attrs) != "POST" {
		return false
	}
	for _, k := range f.urlAttrs {
		if v, ok := attrs.Get(k); ok {
			return v.Type() == pcommon.ValueTypeStr && f.unprefixedModelRoute(v.Str())
		}
	}
	return false
}

// unprefixedModelRoute reports whether the URL (or path) u is a model route
// without the /<url_prefix>/ prefix.
func (f *Finder) unprefixedModelRoute(u string) bool {
	if strings.Contains(u, f.marker) {
		return false
	}
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		u = u[:i]
	}
	for _, r := range f.modelRoutes {
		if strings.HasSuffix(u, r) {
			return true
		}
	}
	return false
}

// Method is an HTTP span's request method (http.request.method, else the
// older http.method), upper case, or "".
func Method(attrs pcommon.Map) string {
	for _, k := range []string{string(conventions.HTTPRequestMethodKey), string(oldconventions.HTTPMethodKey)} {
		if v, ok := attrs.Get(k); ok && v.Type() == pcommon.ValueTypeStr && v.Str() != "" {
			return strings.ToUpper(v.Str())
		}
	}
	return ""
}
