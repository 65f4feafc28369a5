// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package main

import (
	"math"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// recordedAhead is how far ahead of the harness's start the replay and
// short loads are moved (liveTimes): past any run's end.
const recordedAhead = 24 * time.Hour

// liveTimes moves every span of batches by one offset so that the earliest
// starts ahead from now: to a collector started before then, the recorded
// run is live, as Gym's spans are to a collector that started before Gym.
// Spans older than the gymspans exporter take the restart rule's path
// (design §4.8: a stat of the rollout's file, the events kept), which a
// live collector takes only for the rollouts in flight at its start.
func liveTimes(batches []ptrace.Traces, ahead time.Duration) {
	earliest := pcommon.Timestamp(math.MaxUint64)
	noRes := func(pcommon.Map) {}
	eachResource(batches, noRes, func(s ptrace.Span) {
		if s.StartTimestamp() != 0 {
			earliest = min(earliest, s.StartTimestamp())
		}
	})
	if earliest == math.MaxUint64 {
		earliest = 0
	}
	shift := pcommon.NewTimestampFromTime(time.Now().Add(ahead)) - earliest
	eachResource(batches, noRes, func(s ptrace.Span) {
		s.SetStartTimestamp(s.StartTimestamp() + shift)
		s.SetEndTimestamp(s.EndTimestamp() + shift)
	})
}

// eachResource calls res with every resource of batches, then span with
// each of its spans.
func eachResource(batches []ptrace.Traces, res func(pcommon.Map), span func(ptrace.Span)) {
	for _, td := range batches {
		for i := 0; i < td.ResourceSpans().Len(); i++ {
			rs := td.ResourceSpans().At(i)
			res(rs.Resource().Attributes())
			for j := 0; j < rs.ScopeSpans().Len(); j++ {
				spans := rs.ScopeSpans().At(j).Spans()
				for k := 0; k < spans.Len(); k++ {
					span(spans.At(k))
				}
			}
		}
	}
}
