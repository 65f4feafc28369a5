// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymgenaiconnector // import "github.com/otelcol-gym/otelcol-gym/connector/gymgenaiconnector"

import (
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/service/hostcapabilities"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
	"github.com/otelcol-gym/otelcol-gym/internal/timesplit"
)

// metricRolloutCategory is where each finished rollout's time went, one
// point per category (design §4.8).
const metricRolloutCategory = "nemo.gym.rollout.category.duration"

// rolloutBounds: the duration advice of the GenAI conventions, doubled on
// to about an hour and a half (a long agentic rollout).
var rolloutBounds = append(append([]float64{}, durationBounds...), 163.84, 327.68, 655.36, 1310.72, 2621.44, 5242.88)

// rolloutSplits records nemo.gym.rollout.category.duration:
//
//	ConsumeTraces → each rollout span's facts into the tracker (40 bytes a
//	span, never the span) → at the rollout's root, its split → one point
//	per category in the run's histograms
//
// The gymspans exporter beside it in the fan-out computes the same split,
// with the same package, for rollouts.jsonl: neither sees the other's output.
type rolloutSplits struct {
	tracker *timesplit.Tracker
	types   map[string]string // service → nemo.gym.server.type, at most maxServiceTypes
	// started is when the connector started (Unix ns): a rollout first
	// seen with an older span may have had spans an earlier process
	// consumed (a restart); it is left out (missed_spans).
	started int64
	marked  bool // the roots are the spans the gym processor marked
	hist    *series[histogram]
	roots   []root // of the batch being consumed, split once all its spans are in
}

type root struct {
	key  timesplit.Key
	span timesplit.Span
}

const maxServiceTypes = 4096

func newRolloutSplits(cfg *Config) *rolloutSplits {
	if !cfg.TimeSplit.Enabled {
		return nil
	}
	return &rolloutSplits{
		tracker: timesplit.NewTracker(cfg.TimeSplit.MaxSpans),
		types:   map[string]string{},
		hist:    newSeries[histogram](cfg.MaxSeries),
	}
}

// start: the roots are the spans the gym processor marked when this
// collector has one (as the gymspans exporter's rollout_roots: auto), else
// the parentless spans of a rollout.
func (s *rolloutSplits) start(now time.Time, host component.Host) {
	s.started = now.UnixNano()
	s.marked = false
	if h, ok := host.(hostcapabilities.ComponentFactory); ok {
		m, ok := h.GetFactory(component.KindProcessor, component.MustNewType(gymconv.ProcessorType)).(gymconv.RootMarker)
		s.marked = ok && m.MarksRolloutRoots()
	}
}

// process is the split's view of a resource, and the rollout it names
// (promote_to_resource).
func (s *rolloutSplits) process(res pcommon.Map) (timesplit.Process, string) {
	p := timesplit.Process{Service: gymconv.Service(res, gymconv.DefaultServiceAttributes()), ServerType: str(res, gymconv.ServerTypeAttribute),
		TypeOf: func(service string) string { return s.types[service] }}
	if _, known := s.types[p.Service]; !known && p.Service != "" && p.ServerType != "" && len(s.types) < maxServiceTypes {
		s.types[p.Service] = p.ServerType
	}
	return p, str(res, gymconv.RolloutAttribute)
}

// observe takes span, of run and process p, into its rollout's facts, and
// keeps it for finishRoots when it is its rollout's root.
func (s *rolloutSplits) observe(run string, p timesplit.Process, rollout string, span ptrace.Span, n *counts) {
	if r := str(span.Attributes(), gymconv.RolloutAttribute); r != "" {
		rollout = r
	}
	if rollout == "" {
		return
	}
	key, f := timesplit.Key{run, rollout}, timesplit.Facts(span, p)
	if f.Role == timesplit.Event && f.Start >= s.started {
		return // kept out of the walk, and not a span older than the connector
	}
	if s.tracker.Add(key, f) && f.Start < s.started {
		s.tracker.Withhold(key)
	}
	n.late += s.tracker.TakeCounts().Late
	if s.isRoot(span) {
		s.roots = append(s.roots, root{key, f})
	}
}

// finishRoots records the split of each root of the batch, once every span
// of the batch is in its rollout's facts (a batch need not hold a root after
// the spans below it).
func (s *rolloutSplits) finishRoots(n *counts) {
	for _, r := range s.roots {
		split, o := s.tracker.Finish(r.key, r.span)
		n.splits[o]++
		if o != timesplit.Computed {
			continue
		}
		for c, ns := range split {
			h := s.hist.get(gymconv.RunAttribute, r.key[0], timesplit.CategoryAttribute, timesplit.Category(c).String())
			h.observe(rolloutBounds, float64(ns)/1e9)
		}
	}
	clear(s.roots)
	s.roots = s.roots[:0]
}

func (s *rolloutSplits) isRoot(span ptrace.Span) bool {
	if !s.marked {
		return span.ParentSpanID().IsEmpty()
	}
	v, ok := span.Attributes().Get(gymconv.RolloutRootAttribute)
	return ok && v.Type() == pcommon.ValueTypeBool && v.Bool()
}
