// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import (
	"regexp"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
)

// evidenceFinder finds a span's direct rollout evidence (design §4.1).
type evidenceFinder struct {
	attr     string
	urlAttrs []string
	marker   string // "/<url_prefix>/"
	// modelRoutes: the paths of a model server's calls (model_routes).
	modelRoutes []string
	re          *regexp.Regexp // nil when the default pattern is matched by hand
}

func newEvidenceFinder(cfg *Config) (*evidenceFinder, error) {
	f := &evidenceFinder{
		attr:        cfg.RolloutAttribute,
		urlAttrs:    cfg.URLAttributes,
		marker:      "/" + cfg.URLPrefix + "/",
		modelRoutes: cfg.ModelRoutes,
	}
	if cfg.RolloutIDPattern != gymconv.RolloutIDPattern {
		re, err := compileRolloutIDPattern(cfg.RolloutIDPattern)
		if err != nil {
			return nil, err
		}
		f.re = re
	}
	return f, nil
}

// find returns the rollout id the span names directly, or "".
// The returned string never aliases a larger attribute value.
func (f *evidenceFinder) find(attrs pcommon.Map) string {
	if v, ok := attrs.Get(f.attr); ok && v.Type() == pcommon.ValueTypeStr && v.Str() != "" {
		return v.Str()
	}
	for _, k := range f.urlAttrs {
		v, ok := attrs.Get(k)
		if !ok {
			continue
		}
		if v.Type() != pcommon.ValueTypeStr {
			return ""
		}
		return f.fromURL(v.Str())
	}
	return ""
}

// fromURL returns R from the first "/<prefix>/R/" in u whose R matches the
// pattern, or "". R must be followed by a "/".
func (f *evidenceFinder) fromURL(u string) string {
	for {
		i := strings.Index(u, f.marker)
		if i < 0 {
			return ""
		}
		rest := u[i+len(f.marker):]
		j := strings.IndexByte(rest, '/')
		if j < 0 {
			return ""
		}
		if seg := rest[:j]; f.matches(seg) {
			return strings.Clone(seg)
		}
		u = rest
	}
}

func (f *evidenceFinder) matches(seg string) bool {
	if f.re != nil {
		return f.re.MatchString(seg)
	}
	return gymconv.ValidRolloutID(seg)
}

// spanOriginalTrace returns the trace id the span had before any gym
// processor rewrote it: nemo.gym.original_trace_id when valid, else its own.
func spanOriginalTrace(sp ptrace.Span) pcommon.TraceID {
	if id, ok := gymconv.OriginalTraceID(sp.Attributes()); ok {
		return id
	}
	return sp.TraceID()
}

// observabilityOffSign reports whether a span without direct evidence shows
// that Gym runs with observability off, so that no rollout id will come
// (design §4.2): Gym's gym.rollout span without the rollout attribute (Gym
// sets it on every gym.rollout once observability is on), or a SERVER POST
// on a model route (model_routes) without the /<url_prefix>/ prefix (Gym
// prefixes every model call of a rollout once observability is on). A POST
// without any URL attribute shows nothing.
func (f *evidenceFinder) observabilityOffSign(sp ptrace.Span) bool {
	if sp.Name() == gymconv.RolloutSpanName {
		return true
	}
	if sp.Kind() != ptrace.SpanKindServer {
		return false
	}
	attrs := sp.Attributes()
	if httpMethod(attrs) != "POST" {
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
func (f *evidenceFinder) unprefixedModelRoute(u string) bool {
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
