// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter"

import (
	"context"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
	"github.com/otelcol-gym/otelcol-gym/internal/timesplit"
)

// rolloutSplits writes time_split_ms, where a rollout's time went (design
// §4.8), into its rollouts.jsonl line:
//
//	encode (pushes in parallel): each rollout span's facts into its batch,
//	per rollout (splitFacts) → encodeRoots (the group writer, batches in the order they
//	are written): the facts into the tracker (addSplitSpans), then each
//	root's split (appendSplit)
//
// The tracker holds 40 bytes per span of the rollouts in flight, never a
// span, at most time_split.max_spans of them.
type rolloutSplits struct {
	tracker *timesplit.Tracker // the group writer's
	held    int                // the tracker's facts, as last reported

	// types: service → nemo.gym.server.type, learned from the resources
	// encode sees (a CLIENT span's callee), at most maxServiceTypes. Read
	// for every CLIENT span and written once a service, it is replaced whole
	// (under typesMu) rather than changed: a read is a load and a lookup.
	types   atomic.Pointer[map[string]string]
	typesMu sync.Mutex

	// started is when Start ran (Unix ns) and dirFD the capture dir: a
	// rollout first seen with a span older than the exporter may have had
	// spans written by an exporter before it (a restart, another collector
	// on the dir); its split is left out when its file already holds lines.
	started int64
	dirFD   int

	outcomes [timesplit.Outcomes]metric.MeasurementOption
}

const maxServiceTypes = 4096

// newRolloutSplits returns nil when there is nothing to write the split in.
func newRolloutSplits(cfg *Config) *rolloutSplits {
	if !cfg.TimeSplit.Enabled || cfg.RolloutsFile == "" {
		return nil
	}
	s := &rolloutSplits{tracker: timesplit.NewTracker(cfg.TimeSplit.MaxSpans)}
	for o, name := range timesplit.OutcomeNames() {
		s.outcomes[o] = metric.WithAttributeSet(attribute.NewSet(attribute.String(metricAttrOutcome, name)))
	}
	return s
}

func (s *rolloutSplits) start(dirFD int) {
	s.started, s.dirFD = time.Now().UnixNano(), dirFD
}

func (s *rolloutSplits) typeOf(service string) string {
	if m := s.types.Load(); m != nil {
		return (*m)[service]
	}
	return ""
}

// learnType records that service is of serverType, unless its type is known
// or maxServiceTypes are.
func (s *rolloutSplits) learnType(service, serverType string) {
	if !s.mayLearn(s.types.Load(), service) {
		return // most resources: no lock
	}
	s.typesMu.Lock()
	defer s.typesMu.Unlock()
	old := s.types.Load()
	if !s.mayLearn(old, service) {
		return
	}
	m := map[string]string{}
	if old != nil {
		m = maps.Clone(*old)
	}
	m[service] = serverType
	s.types.Store(&m)
}

func (*rolloutSplits) mayLearn(m *map[string]string, service string) bool {
	return m == nil || len(*m) < maxServiceTypes && (*m)[service] == ""
}

// splitResource readies b for the spans of a resource whose service is
// service.
func (e *spansExporter) splitResource(b *batch, res pcommon.Map, service string) {
	if e.split == nil {
		return
	}
	serverType := ""
	if v, ok := res.Get(gymconv.ServerTypeAttribute); ok {
		serverType = v.AsString()
	}
	if service != "" && serverType != "" {
		e.split.learnType(service, serverType)
	}
	b.splitProc = timesplit.Process{Service: service, ServerType: serverType, TypeOf: e.split.typeOf}
}

// splitFacts adds the facts of span to its rollout's, b.targets[t], unless
// a retry of the span is being written (its facts are in already), and
// returns them when span is its rollout's root; ok is false with the split
// off.
func (e *spansExporter) splitFacts(b *batch, t int32, span ptrace.Span, retried, root bool) (f timesplit.Span, ok bool) {
	if e.split == nil {
		return f, false
	}
	// An event is kept out of the walk; it is given to the tracker only
	// when it may be a rollout's first span seen that is older than the
	// exporter (addSplitSpans), which is rare: most spans are events, and
	// theirs are not read.
	if !root && timesplit.IsEvent(span) && int64(span.StartTimestamp()) >= e.split.started {
		return f, true
	}
	f = timesplit.Facts(span, b.splitProc)
	if !retried && (f.Role != timesplit.Event || f.Start < e.split.started) {
		b.targets[t].facts = append(b.targets[t].facts, f)
	}
	return f, true
}

// addSplitSpans gives the tracker the facts of b, a rollout at a time, each
// rollout's in order. The group writer calls it for each batch before its
// roots are encoded.
func (e *spansExporter) addSplitSpans(b *batch) {
	s := e.split
	if s == nil {
		return
	}
	for i := range b.targets {
		t := &b.targets[i]
		if len(t.facts) > 0 && s.tracker.Add(t.key, t.facts...) && t.facts[0].Start < s.started && s.writtenBefore(t) {
			s.tracker.Withhold(t.key)
		}
	}
	ctx := context.Background()
	c := s.tracker.TakeCounts()
	if c.Late > 0 {
		e.metrics.ExporterGymspansTimeSplitLateSpans.Add(ctx, c.Late)
	}
	if c.Evicted > 0 {
		e.logs.warn("time_split_evicted", "time_split.max_spans reached: the rollouts in flight least recently added to get no time_split_ms; raise time_split.max_spans",
			zap.Int("max_spans", e.cfg.TimeSplit.MaxSpans), zap.Int64("rollouts", c.Evicted))
	}
	s.reportHeld(e.metrics)
}

// reportHeld brings time_split_held_spans up to date.
func (s *rolloutSplits) reportHeld(m *exporterMetrics) {
	if held := s.tracker.Held(); held != s.held {
		m.ExporterGymspansTimeSplitHeldSpans.Add(context.Background(), int64(held-s.held))
		s.held = held
	}
}

// writtenBefore reports whether the file of rollout tgt already holds
// lines: written by an exporter before this one, since this one has not
// written a span of a rollout it has not seen.
func (s *rolloutSplits) writtenBefore(tgt *rolloutTarget) bool {
	if tgt.fb == nil {
		return false
	}
	var st unix.Stat_t
	return unix.Fstatat(s.dirFD, tgt.fb.name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Size > 0
}

// appendSplit appends root's time_split_ms to its rollouts.jsonl line when
// its split is known.
func (e *spansExporter) appendSplit(buf []byte, root rootRef) []byte {
	if e.split == nil || !root.hasFacts {
		return buf
	}
	split, o := e.split.tracker.Finish(rolloutKey(root.run, root.rollout), root.facts)
	e.metrics.ExporterGymspansTimeSplitRollouts.Add(context.Background(), 1, e.split.outcomes[o])
	e.split.reportHeld(e.metrics)
	if o != timesplit.Computed && o != timesplit.Repeated {
		return buf
	}
	buf = append(buf, `,"`+timesplit.Field+`":`...)
	return split.AppendJSON(buf)
}
