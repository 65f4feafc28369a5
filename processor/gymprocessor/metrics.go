// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import (
	"context"
	"fmt"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/metadata"
	"github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/repair"
	"github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/rollout"
)

// telemetry records the processor's metrics, declared in metadata.yaml
// (documentation.md lists them) and built by mdatagen.
type telemetry struct {
	*metadata.TelemetryBuilder

	// Attribute options built once, so recording allocates nothing.
	promotedBy [3][]metric.AddOption
	reasons    [rollout.NumReasons][]metric.AddOption
	problemOpt [numProblems][]metric.AddOption
	peerSource [repair.NumPeerSources][]metric.AddOption
	cutJob     []metric.AddOption
	cutParent  []metric.AddOption
}

// Attribute names of metadata.yaml.
const (
	metricAttrSource   = "source"
	metricAttrReason   = "reason"
	metricAttrProblem  = "problem"
	metricAttrLinkType = "link_type"
)

func newTelemetry(set component.TelemetrySettings) (*telemetry, error) {
	b, err := metadata.NewTelemetryBuilder(set)
	if err != nil {
		return nil, fmt.Errorf("gym processor metrics: %w", err)
	}
	t := &telemetry{TelemetryBuilder: b}
	opt := func(k, v string) []metric.AddOption {
		return []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(attribute.String(k, v)))}
	}
	for i, s := range []string{"direct", "downward", "upward"} {
		t.promotedBy[i] = opt(metricAttrSource, s)
	}
	for i, s := range rollout.ReasonNames {
		t.reasons[i] = opt(metricAttrReason, s)
	}
	for i, s := range problemNames {
		t.problemOpt[i] = opt(metricAttrProblem, s)
	}
	for i, s := range repair.PeerSourceNames {
		t.peerSource[i] = opt(metricAttrSource, s)
	}
	t.cutJob = opt(metricAttrLinkType, linkTypeJob)
	t.cutParent = opt(metricAttrLinkType, linkTypeParent)
	return t, nil
}

// record turns a round's counts into metrics; called without the lock.
func (t *telemetry) record(ctx context.Context, r *round, emitted int64, g gauges) {
	add := func(c metric.Int64Counter, v int64, opts []metric.AddOption) {
		if v != 0 {
			c.Add(ctx, v, opts...)
		}
	}
	c, rc := &r.core, &r.repair
	add(t.ProcessorGymSpansReceived, c.Received, nil)
	add(t.ProcessorGymSpansEmitted, emitted, nil)
	add(t.ProcessorGymSpansPassedThrough, c.Passed, nil)
	for i, v := range c.Promoted {
		add(t.ProcessorGymSpansPromoted, v, t.promotedBy[i])
	}
	for i, v := range c.Released {
		add(t.ProcessorGymSpansReleasedUndecided, v, t.reasons[i])
	}
	add(t.ProcessorGymRootsCut, c.CutJob, t.cutJob)
	add(t.ProcessorGymRootsCut, c.CutParent, t.cutParent)
	add(t.ProcessorGymSpansSynthesized, rc.Synthesized, nil)
	add(t.ProcessorGymSynthesisMissed, rc.SynthMissed, nil)
	for i, v := range rc.PeerSet {
		add(t.ProcessorGymPeerServiceSet, v, t.peerSource[i])
	}
	add(t.ProcessorGymLateParents, c.LateParents, nil)
	add(t.ProcessorGymLeakedContexts, c.LeakedContexts, nil)
	add(t.ProcessorGymDuplicateSpans, c.Duplicates, nil)
	add(t.ProcessorGymResentSpans, c.Resent, nil)
	add(t.ProcessorGymAttemptLinksMissed, r.split.LinksMissed, nil)
	for i, v := range c.Problems {
		add(t.ProcessorGymSetupProblems, v, t.problemOpt[i])
	}
	t.ProcessorGymPendingSpans.Record(ctx, g.spans)
	t.ProcessorGymPendingBytes.Record(ctx, g.bytes)
	t.ProcessorGymIndexEntries.Record(ctx, g.index)
	t.ProcessorGymStorageBytes.Record(ctx, g.storage)
	t.ProcessorGymRedeliverySpans.Record(ctx, g.refused)
}

type gauges struct{ spans, bytes, index, storage, refused int64 }
