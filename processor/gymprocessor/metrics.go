// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import (
	"context"
	"errors"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

const scopeName = "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

// Metric names (design §4.5). documentation.md lists them.
const (
	metricSpansReceived     = "otelcol_processor_gym_spans_received"
	metricSpansEmitted      = "otelcol_processor_gym_spans_emitted"
	metricSpansPassed       = "otelcol_processor_gym_spans_passed_through"
	metricSpansPromoted     = "otelcol_processor_gym_spans_promoted"
	metricReleasedUndecided = "otelcol_processor_gym_spans_released_undecided"
	metricRootsCut          = "otelcol_processor_gym_roots_cut"
	metricSynthesized       = "otelcol_processor_gym_spans_synthesized"
	metricSynthesisMissed   = "otelcol_processor_gym_synthesis_missed"
	metricPeerServiceSet    = "otelcol_processor_gym_peer_service_set"
	metricPendingSpans      = "otelcol_processor_gym_pending_spans"
	metricPendingBytes      = "otelcol_processor_gym_pending_bytes"
	metricIndexEntries      = "otelcol_processor_gym_index_entries"
	metricLateParents       = "otelcol_processor_gym_late_parents"
	metricDuplicateSpans    = "otelcol_processor_gym_duplicate_spans"
	metricResentSpans       = "otelcol_processor_gym_resent_spans"
	metricLinksMissed       = "otelcol_processor_gym_attempt_links_missed"
	metricDownstreamFailed  = "otelcol_processor_gym_downstream_failed_spans"
	metricSetupProblems     = "otelcol_processor_gym_setup_problems"
	metricStorageBytes      = "otelcol_processor_gym_storage_bytes"
	metricStorageCkpts      = "otelcol_processor_gym_storage_checkpoints"
	metricStorageErrors     = "otelcol_processor_gym_storage_errors"
	metricRedelivered       = "otelcol_processor_gym_spans_redelivered"
)

type telemetry struct {
	received, emitted, passed, promoted, released, cut, synthesized metric.Int64Counter
	lateParents, duplicates, resent, downstreamFailed, problems     metric.Int64Counter
	synthMissed, peerSet, linksMissed                               metric.Int64Counter
	pendingSpans, pendingBytes, indexEntries, storageBytes          metric.Int64Gauge
	storageCheckpoints, storageErrors, redelivered                  metric.Int64Counter

	// Option slices built once, so recording allocates nothing.
	promotedBy [3][]metric.AddOption
	reasons    [numReasons][]metric.AddOption
	problemOpt [numProblems][]metric.AddOption
	peerSource [numPeerSources][]metric.AddOption
	cutJob     []metric.AddOption
	cutParent  []metric.AddOption
}

func newTelemetry(set component.TelemetrySettings) (*telemetry, error) {
	m := set.MeterProvider.Meter(scopeName)
	t := &telemetry{}
	var errs []error
	var err error
	counter := func(name, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithDescription(desc), metric.WithUnit("{spans}"))
		errs = append(errs, err)
		return c
	}
	gauge := func(name, desc, unit string) metric.Int64Gauge {
		g, err := m.Int64Gauge(name, metric.WithDescription(desc), metric.WithUnit(unit))
		errs = append(errs, err)
		return g
	}
	t.received = counter(metricSpansReceived, "Spans received by the gym processor.")
	t.emitted = counter(metricSpansEmitted, "Spans the gym processor passed to the next consumer.")
	t.passed = counter(metricSpansPassed, "Spans of runs without rollout evidence passed on without waiting.")
	t.promoted = counter(metricSpansPromoted, "Spans given a rollout, by how (source = direct, downward, upward).")
	t.released = counter(metricReleasedUndecided, "Spans that left in no rollout, by reason (wait: a root waited `wait`; parent_missing: its parent did not arrive within rollout_wait; parent_none: its parent left in no rollout; conflict, bound, shutdown, observability_off).")
	t.cut = counter(metricRootsCut, "Rollout roots cut from their parent, by link type (job, parent).")
	t.synthesized = counter(metricSynthesized, "CLIENT spans synthesized for the service map.")
	t.synthMissed = counter(metricSynthesisMissed, "Parentless SERVER spans with rollout evidence that left without a synthesized CLIENT parent: their rollout's gym.rollout did not come within rollout_wait.")
	t.peerSet = counter(metricPeerServiceSet, "CLIENT spans given peer.service, by source (child, configured, learned, address).")
	t.lateParents = counter(metricLateParents, "Spans that arrived after a child of theirs had to leave without them.")
	t.duplicates = counter(metricDuplicateSpans, "Spans whose (trace id, span id) was already indexed; passed on unindexed.")
	t.linksMissed = counter(metricLinksMissed, "Roots of re-dispatched attempts that left without a link to the previous attempt's root: it was not known when they were decided (it came later, or was forgotten).")
	t.resent = counter(metricResentSpans, "Unchanged copies of a span held undecided (a sender's retry); each leaves with the held span, as it is rewritten.")
	t.downstreamFailed = counter(metricDownstreamFailed, "Spans the next consumer refused.")
	t.problems, err = m.Int64Counter(metricSetupProblems, metric.WithUnit("{problems}"), metric.WithDescription(
		"Setup problems seen, by problem: a run (no_rollout_evidence, only_orchestrator, observability_off) or a span (server_without_parent)."))
	errs = append(errs, err)
	t.pendingSpans = gauge(metricPendingSpans, "Spans held undecided.", "{spans}")
	t.pendingBytes = gauge(metricPendingBytes, "Estimated bytes of the spans held undecided.", "By")
	t.indexEntries = gauge(metricIndexEntries, "Entries of the span index (held, emitted and awaited parents).", "{entries}")
	t.storageBytes = gauge(metricStorageBytes, "Bytes the processor keeps in its storage extension: the last checkpoint and the records after it.", "By")
	t.storageCheckpoints, err = m.Int64Counter(metricStorageCkpts, metric.WithUnit("{checkpoints}"), metric.WithDescription("Checkpoints of the processor's state written to its storage."))
	errs = append(errs, err)
	t.storageErrors, err = m.Int64Counter(metricStorageErrors, metric.WithUnit("{errors}"), metric.WithDescription("Failures to record to or read from the storage, and journals set aside (corrupt, or from another configuration)."))
	errs = append(errs, err)
	t.redelivered = counter(metricRedelivered, "Spans handed on again at start: their round was replayed from the storage without the mark that it had been delivered (the collector stopped in between); gymspans drops those it already wrote.")
	opt := func(k, v string) []metric.AddOption {
		return []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(attribute.String(k, v)))}
	}
	for i, s := range []string{"direct", "downward", "upward"} {
		t.promotedBy[i] = opt("source", s)
	}
	for i, s := range reasonNames {
		t.reasons[i] = opt("reason", s)
	}
	for i, s := range problemNames {
		t.problemOpt[i] = opt("problem", s)
	}
	for i, s := range peerSourceNames {
		t.peerSource[i] = opt("source", s)
	}
	t.cutJob = opt("link_type", linkTypeJob)
	t.cutParent = opt("link_type", linkTypeParent)
	return t, errors.Join(errs...)
}

// record turns a round's counts into metrics; called without the lock.
func (t *telemetry) record(ctx context.Context, r *round, emitted int64, g gauges) {
	add := func(c metric.Int64Counter, v int64, opts []metric.AddOption) {
		if v != 0 {
			c.Add(ctx, v, opts...)
		}
	}
	add(t.received, r.received, nil)
	add(t.emitted, emitted, nil)
	add(t.passed, r.passed, nil)
	for i, v := range r.promoted {
		add(t.promoted, v, t.promotedBy[i])
	}
	for i, v := range r.released {
		add(t.released, v, t.reasons[i])
	}
	add(t.cut, r.cutJob, t.cutJob)
	add(t.cut, r.cutParent, t.cutParent)
	add(t.synthesized, r.synthesized, nil)
	add(t.synthMissed, r.synthMissed, nil)
	for i, v := range r.peerSet {
		add(t.peerSet, v, t.peerSource[i])
	}
	add(t.lateParents, r.lateParents, nil)
	add(t.duplicates, r.duplicates, nil)
	add(t.resent, r.resent, nil)
	add(t.linksMissed, r.linksMissed, nil)
	for i, v := range r.problems {
		add(t.problems, v, t.problemOpt[i])
	}
	t.pendingSpans.Record(ctx, g.spans)
	t.pendingBytes.Record(ctx, g.bytes)
	t.indexEntries.Record(ctx, g.index)
	t.storageBytes.Record(ctx, g.storage)
}

type gauges struct{ spans, bytes, index, storage int64 }
