// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import "go.opentelemetry.io/collector/pdata/ptrace"

// passThrough emits a span of a run that passes through (Gym's
// observability is off, design §4.2) at once, as it stands but for the
// service-map repair.
func (e *engine) passThrough(sp ptrace.Span, info *resInfo, sf *spanFacts) {
	e.r.passed++
	e.leaveUnindexed(sp, info, sf, &spanEdit{sp: sp})
}

// passUnindexed emits a span that cannot be indexed (zero or duplicate span
// id) at once, with the rollout it shows directly, or that its first copy
// (first, when it is a duplicate) left with, or that its parent has.
func (e *engine) passUnindexed(sp ptrace.Span, info *resInfo, sf *spanFacts, first *node) {
	orig := sf.orig
	rollout, h := sf.ev, howDirect
	if rollout == "" && first != nil && first.state == stEmitted && first.rollout != "" && first.how >= howDirect && first.how <= howUpward {
		rollout, h = first.rollout, first.how
	}
	if rollout == "" {
		if pid := sp.ParentSpanID(); !pid.IsEmpty() {
			if p, _ := e.idx.get(sf.ph, spanKey{trace: orig, span: pid}); p != nil && p.rollout != "" {
				rollout, h = p.rollout, howDownward
			}
		}
	}
	ed := spanEdit{sp: sp}
	if rollout != "" {
		e.r.promoted[h-howDirect]++
		e.planRollout(&ed, sp, info, rollout, orig, nil)
	}
	e.leaveUnindexed(sp, info, sf, &ed)
}

// leaveUnindexed plans the service-map repair of a span that leaves without
// entering the index, and keeps its rewrite if it has one.
func (e *engine) leaveUnindexed(sp ptrace.Span, info *resInfo, sf *spanFacts, ed *spanEdit) {
	e.repairUnindexed(sp, info, sf, ed)
	if !ed.empty() {
		e.r.edits = append(e.r.edits, *ed)
	}
}
