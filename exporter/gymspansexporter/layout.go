// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter"

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
)

// Attribute names the layout reads.
const (
	attrRolloutID       = gymconv.RolloutAttribute
	attrRunID           = gymconv.RunAttribute     // resource
	attrSpanRunID       = gymconv.SpanRunAttribute // span, newer Gym
	attrServiceName     = gymconv.ServiceNameAttribute
	attrServiceOverride = gymconv.ServiceOverrideAttribute
	maxFileNameBytes    = 255
)

// pathTemplate renders path_template for a (run, rollout).
type pathTemplate struct {
	parts    []string // literal text between placeholders
	holes    []byte   // 'r' for {rollout_id}, 'u' for {run_id}, one per gap
	usesRun  bool
	reserved map[string]bool // names the exporter's other files use
	rotated  string          // the combined file, whose backups are reserved too
}

func newPathTemplate(t string, reserved ...string) *pathTemplate {
	pt := &pathTemplate{reserved: map[string]bool{}}
	for _, r := range reserved {
		if r != "" {
			pt.reserved[r] = true
		}
	}
	rest := t
	for {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			pt.parts = append(pt.parts, rest)
			return pt
		}
		switch {
		case strings.HasPrefix(rest[i:], "{rollout_id}"):
			pt.parts = append(pt.parts, rest[:i])
			pt.holes = append(pt.holes, 'r')
			rest = rest[i+len("{rollout_id}"):]
		case strings.HasPrefix(rest[i:], "{run_id}"):
			pt.parts = append(pt.parts, rest[:i])
			pt.holes = append(pt.holes, 'u')
			pt.usesRun = true
			rest = rest[i+len("{run_id}"):]
		default: // Validate refuses this; keep the brace literally
			pt.parts = append(pt.parts, rest[:i+1])
			rest = rest[i+1:]
		}
	}
}

// render returns the file name for a span of rollout in run, or the
// rejection reason.
func (pt *pathTemplate) render(run, rollout string) (string, string) {
	if !gymconv.SafeFileID(rollout) {
		return "", rejectRolloutID
	}
	if pt.usesRun && !gymconv.SafeFileID(run) {
		return "", rejectRunID
	}
	var sb strings.Builder
	for i, p := range pt.parts {
		sb.WriteString(p)
		if i < len(pt.holes) {
			if pt.holes[i] == 'r' {
				sb.WriteString(rollout)
			} else {
				sb.WriteString(run)
			}
		}
	}
	name := sb.String()
	if len(name) > maxFileNameBytes || pt.reserved[name] || (pt.rotated != "" && isBackupName(pt.rotated, name)) {
		return "", rejectRolloutID
	}
	return name, ""
}

func strAttr(m pcommon.Map, key string) string {
	if v, ok := m.Get(key); ok && v.Type() == pcommon.ValueTypeStr {
		return v.Str()
	}
	return ""
}

// rolloutOf is a span's (run, rollout) from its resource's and its own
// attributes: the rollout is the span's rollout attribute, else its
// resource's (after the gym processor's promote_to_resource); the run is the
// resource's run attribute, else the span's (newer Gym). Both are "" for a
// span in no rollout.
func rolloutOf(res, span pcommon.Map) (run, rollout string) {
	if rollout = strAttr(span, attrRolloutID); rollout == "" {
		if rollout = strAttr(res, attrRolloutID); rollout == "" {
			return "", ""
		}
	}
	if run = strAttr(res, attrRunID); run == "" {
		run = strAttr(span, attrSpanRunID)
	}
	return run, rollout
}

// serviceOf is the span's service as the gym processor defines it.
func serviceOf(res pcommon.Map) string {
	if s := strAttr(res, attrServiceOverride); s != "" {
		return s
	}
	return strAttr(res, attrServiceName)
}
