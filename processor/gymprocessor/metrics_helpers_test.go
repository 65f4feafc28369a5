// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

func sumPoints(data metricdata.Aggregation, attrs []string) int64 {
	match := func(set attribute.Set) bool {
		for i := 0; i+1 < len(attrs); i += 2 {
			v, ok := set.Value(attribute.Key(attrs[i]))
			if !ok || v.AsString() != attrs[i+1] {
				return false
			}
		}
		return true
	}
	var total int64
	switch d := data.(type) {
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			if match(p.Attributes) {
				total += p.Value
			}
		}
	case metricdata.Gauge[int64]:
		for _, p := range d.DataPoints {
			if match(p.Attributes) {
				total += p.Value
			}
		}
	}
	return total
}

// Metric names as the collector exports them (metadata.yaml declares them).
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
	metricLeakedContexts    = "otelcol_processor_gym_leaked_contexts"
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
