// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import (
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/repair"
	"github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/rollout"
)

// The rollout core's events (rollout.Owner), handed on to the parts in
// order, and turned into what a leaving span is rewritten with:
//
//	Hold, TakeCopy  the span arriving now moves into a slot (held.go), or is a copy of a held one (resent.go)
//	Arrived         the service-map repair learns from it
//	Decided         the repair may hold it (its rollout's gym.rollout, its peer)
//	Rooted          the split records a root, and may hold it (its previous attempt)
//	Left            the split's ids and links, then the repair's peer.service or
//	                synthesized parent, planned into the round (edit.go)

var _ rollout.Owner = (*engine)(nil)

// Hold moves the span arriving now into slot s.
func (e *engine) Hold(s rollout.Slot) int64 {
	c := &e.cur
	if c.org == nil {
		c.org = newOrigin(c.rs, c.ss, c.info.service)
	}
	hs := heldSpan{span: ptrace.NewSpan(), origin: c.org, facts: keepFacts(&c.facts.repair), edit: c.facts.edit}
	c.span.MoveTo(hs.span)
	e.held.put(s, hs)
	return estimateSpanBytes(hs.span)
}

// Arrived hands an indexed span arriving now to the repair.
func (e *engine) Arrived(n *rollout.Node) {
	s := &e.cur.facts.repair
	s.Origin = nil
	if s.Kind == repair.KindInternal && e.cfg.ServiceMap.SynthesizeClientSpans {
		s.Origin = e.procOrigin()
	}
	e.repair.Arrived(n, s)
	s.Origin = nil
}

// Decided lets the repair hold a span decided directly or downward.
func (e *engine) Decided(n *rollout.Node, run *rollout.Run) bool {
	if slot := n.Slot(); slot != rollout.Current {
		s := e.held[slot].repairSpan()
		return e.repair.Decided(n, &s, run.ID())
	}
	return e.repair.Decided(n, &e.cur.facts.repair, run.ID())
}

// Rooted records a rollout root in the split, and holds it while its
// previous attempt's root is not known.
func (e *engine) Rooted(n *rollout.Node, run *rollout.Run, cut bool) bool {
	k := n.Key()
	if e.split.Root(run.ID(), k.Trace, k.Span, n.Rollout(), cut, e.now) {
		return false
	}
	return e.core.Hold(n, rollout.HoldPreviousAttempt)
}

// Left plans the rewrite of a leaving span: its data leaves its slot for
// the round's output (a span arriving now stays where it is in its batch),
// and the split and the repair say what it gets.
func (e *engine) Left(d rollout.Departure) {
	var sp ptrace.Span
	var s *repair.Span
	var ef editFacts
	if d.Slot == rollout.Current {
		sp, s, ef = e.cur.span, &e.cur.facts.repair, e.cur.facts.edit
	} else {
		hs := e.held.take(d.Slot)
		rs := hs.repairSpan()
		sp, s, ef = hs.span, &rs, hs.edit
		e.r.leave(hs.origin, sp, hs.copies)
	}
	ed := spanEdit{sp: sp}
	switch {
	case d.Rollout != "":
		e.planRollout(&ed, &d, s, ef)
	case d.Job && e.cfg.Split.Enabled:
		ed.jobCount, ed.jobLinks = e.split.JobLinks(d.Key.Trace)
	}
	var pl repair.Plan
	if d.Unindexed || d.PassedThrough {
		pl = e.repair.Unindexed(s)
	} else {
		pl = e.repair.Left(&d, s, ed.traceID())
	}
	ed.peer, ed.hasPeer = pl.PeerService, pl.HasPeer
	if pl.HasSynth {
		e.synthesize(&ed, &pl.Synthesized)
	}
	if !ed.empty() {
		e.r.edits = append(e.r.edits, ed)
	}
}

// planRollout plans the rollout rewrite of a span leaving in rollout
// d.Rollout (design §4.2, §4.3): the attribute, the root mark, and with the
// split T', the original trace id, the cut's and the previous attempt's
// links. The span's attributes are not read: its original trace id is what
// prepare read when it arrived.
func (e *engine) planRollout(ed *spanEdit, d *rollout.Departure, s *repair.Span, ef editFacts) {
	ed.rollout = d.Rollout
	ed.putRollout = !ef.rolloutInAttr
	ed.putOrig = e.cfg.Split.Enabled && !ef.hasOrig
	ed.extra = b2i(ed.putRollout) + b2i(ed.putOrig)
	if e.cfg.ServiceMap.Enabled && s.Kind == repair.KindClient {
		ed.extra++ // peer.service follows: one growth instead of two
	}
	if d.Node != nil {
		// The top span decided upward, or, where nothing above it joined the
		// rollout, Gym's own gym.rollout without a parent (Gym with its
		// server span group off). A parentless SERVER span with direct
		// evidence is not: it hangs below gym.rollout, synthesized parent or
		// not.
		if ed.root = d.Root || (d.How == rollout.HowDirect && d.Node.Parent() == nil && s.RolloutSpan); ed.root {
			ed.extra++
		}
	}
	if !e.cfg.Split.Enabled {
		return
	}
	run := d.Run.ID()
	ed.split = true
	ed.orig = d.Key.Trace
	ed.origHex = e.split.Hex(d.Key.Trace)
	ed.tid = e.split.TraceID(run, d.Key.Trace, d.Rollout)
	if d.Cut {
		ed.cut = true
		ed.cutType = linkTypeParent
		if d.CutLink == rollout.LinkJob {
			ed.cutType = linkTypeJob
		}
	}
	if d.Root {
		waited := d.GaveUp && d.Phase == rollout.HoldPreviousAttempt
		ed.prev, ed.hasPrev = e.split.PreviousRoot(run, d.Key.Trace, d.Rollout, waited)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// synthesize appends to the round, in the origin the repair chose, a
// CLIENT span between the span of ed and the parent the repair chose; both
// are written after the lock is released (clientEdit).
func (e *engine) synthesize(ed *spanEdit, sy *repair.Synthesized) {
	c := ptrace.NewSpan()
	e.r.leave(sy.Origin.(*origin), c, 0)
	origHex := sy.OrigHex
	if sy.ServerOrigHex {
		origHex = ed.originalTraceHex()
	}
	e.r.clients = append(e.r.clients, clientEdit{
		client: c, server: ed.sp, tid: sy.Trace, id: sy.ID, parent: sy.Parent,
		serverService: sy.ServerService, origHex: origHex, rollout: sy.Rollout,
	})
}
