// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter"

import (
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
)

// attrKeys are the attributes a span's rollout, run and service are read
// from (rollout_attribute, run_attribute, service_attributes): the gym
// processor's keys of the same names, with the same defaults (gymconv).
type attrKeys struct {
	rollout  string
	run      string
	services []string
}

func keysOf(cfg *Config) attrKeys {
	return attrKeys{rollout: cfg.RolloutAttribute, run: cfg.RunAttribute, services: cfg.ServiceAttributes}
}

// rolloutOf is a span's (run, rollout) from its resource's and its own
// attributes: the rollout is the span's rollout attribute, else its
// resource's (after the gym processor's promote_to_resource); the run is the
// resource's run attribute, else the span's nemo.gym.run.id (newer Gym).
// Both are "" for a span in no rollout.
func (k attrKeys) rolloutOf(res, span pcommon.Map) (run, rollout string) {
	if rollout = strAttr(span, k.rollout); rollout == "" {
		if rollout = strAttr(res, k.rollout); rollout == "" {
			return "", ""
		}
	}
	if run = strAttr(res, k.run); run == "" {
		run = strAttr(span, gymconv.SpanRunAttribute)
	}
	return run, rollout
}

// serviceOf is a resource's service: the first of service_attributes present.
func (k attrKeys) serviceOf(res pcommon.Map) string { return gymconv.Service(res, k.services) }

// rolloutMark names what shows that a span the exporter found in no rollout
// is in one all the same, or is "": the gym processor's marks of a rollout's
// spans (the original trace id of its split, its root mark), or Gym's own
// rollout attribute when the exporter reads another. Either means the gym
// processor and the exporter were given different rollout_attribute keys.
func (k attrKeys) rolloutMark(res, span pcommon.Map) string {
	for _, mark := range [...]string{gymconv.OriginalTraceAttribute, gymconv.RolloutRootAttribute} {
		if _, ok := span.Get(mark); ok {
			return mark
		}
	}
	if k.rollout != gymconv.RolloutAttribute && (strAttr(span, gymconv.RolloutAttribute) != "" || strAttr(res, gymconv.RolloutAttribute) != "") {
		return gymconv.RolloutAttribute
	}
	return ""
}

func strAttr(m pcommon.Map, key string) string {
	if v, ok := m.Get(key); ok && v.Type() == pcommon.ValueTypeStr {
		return v.Str()
	}
	return ""
}
