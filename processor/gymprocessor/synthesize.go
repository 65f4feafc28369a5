// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-gym/otelcol-gym/internal/bounded"
	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
	"github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/split"
)

// Synthesized CLIENT parents (design §4.4): a SERVER span whose caller sent
// no CLIENT span gets one, below its rollout's gym.rollout or an embedder's
// INTERNAL span.

// syntheticSpanID is the span id of the CLIENT span synthesized above the
// SERVER span serverID in trace t: the first 8 bytes of
// SHA-256("otelcol-gym/synthetic/v1" ‖ 0x00 ‖ t (16 raw bytes) ‖ serverID
// (8 raw bytes)), never all zero.
func syntheticSpanID(t pcommon.TraceID, serverID pcommon.SpanID) pcommon.SpanID {
	var id pcommon.SpanID
	split.DeriveID(id[:], syntheticSpanDomain, t[:], serverID[:])
	return id
}

// rolloutSpanRef is R's gym.rollout span as it left: where a synthesized
// CLIENT span of R hangs (parent, resource and scope).
type rolloutSpanRef struct {
	orig    pcommon.TraceID // its original trace id
	span    pcommon.SpanID
	origHex string // its original trace id, carried by the synthesized span
	org     *origin
}

// synthEntry is, per rollout trace T', R's gym.rollout once it left, and the
// SERVER spans held until it does.
type synthEntry struct {
	ref     *rolloutSpanRef
	waiters []*node
}

// synthTable is bounded by split.max_tracked_roots entries, oldest first
// out, but never one that SERVER spans still wait on.
type synthTable struct {
	t *bounded.Table[pcommon.TraceID, *synthEntry]
}

func newSynthTable(capacity int) synthTable {
	t := bounded.New[pcommon.TraceID, *synthEntry](capacity)
	t.Pin(func(e *synthEntry) bool {
		for _, w := range e.waiters {
			if w.held != nil && w.held.phase == phaseSynth {
				return true
			}
		}
		return false
	})
	return synthTable{t: t}
}

func (t *synthTable) entry(tid pcommon.TraceID) *synthEntry {
	if e, ok := t.t.Get(tid); ok {
		return e
	}
	e := &synthEntry{}
	t.t.Put(tid, e)
	return e
}

// isSynthetic reports whether a span was synthesized by a gym processor.
func isSynthetic(attrs pcommon.Map) bool {
	v, ok := attrs.Get(attrSynthetic)
	return ok && v.Type() == pcommon.ValueTypeBool && v.Bool()
}

// synthesizeParent appends to the round, in org's resource and scope, a
// CLIENT span between server (whose final trace id is tid) and parent, and
// re-parents server onto it (design §4.4); both are written after the lock is
// released (clientEdit).
func (e *engine) synthesizeParent(server ptrace.Span, tid pcommon.TraceID, serverSvc string, parent pcommon.SpanID, org *origin, origHex, rollout string) {
	c := ptrace.NewSpan()
	e.r.leave(org, c, 0)
	e.r.clients = append(e.r.clients, clientEdit{
		client: c, server: server, tid: tid, id: syntheticSpanID(tid, server.SpanID()), parent: parent,
		serverService: serverSvc, origHex: origHex, rollout: rollout,
	})
	e.r.synthesized++
}

// wantsRolloutParent reports whether the span arriving now is a parentless
// SERVER span with direct evidence, to be re-parented under a synthesized
// CLIENT span below its rollout's gym.rollout (design §4.4).
func (e *engine) wantsRolloutParent(n *node) bool {
	return e.sm.synth && e.split && n == e.cur && n.parent == nil && n.how == howDirect &&
		e.curSpan.Kind() == ptrace.SpanKindServer && e.curSpan.ParentSpanID().IsEmpty() &&
		!isSynthetic(e.curSpan.Attributes())
}

// holdForRolloutParent holds the current SERVER span n until R's gym.rollout
// has left (at most rollout_wait), or emits it at once, repaired, when it
// already has. A SERVER span in gym.rollout's own original trace is the root
// of that trace, not a call made without traceparent: it is never put below
// gym.rollout (which may hang below it; that would be a cycle).
func (e *engine) holdForRolloutParent(n *node) {
	info := e.curInfo
	tid := e.tidOf(info.run.id, n.key.trace, n.rollout)
	e.hold(n, phaseSynth, e.dl.rolloutParent(e.now))
	ent := e.sm.table.entry(tid)
	if ent.ref != nil {
		if ent.ref.orig != n.key.trace {
			n.held.synth = ent.ref
		}
		e.emit(n)
		return
	}
	ent.waiters = append(ent.waiters, n)
}

// rolloutSpanLeft records R's gym.rollout as it leaves (tid is its final
// trace id, T') and releases the SERVER spans that waited for it.
func (e *engine) rolloutSpanLeft(sp ptrace.Span, tid pcommon.TraceID, n *node, org *origin) {
	if !e.sm.synth || !e.split || n.rollout == "" || sp.Name() != gymconv.RolloutSpanName {
		return
	}
	ent := e.sm.table.entry(tid)
	if ent.ref != nil {
		return // the first gym.rollout of a trace is the one
	}
	if org == nil {
		org = n.org // its process's resource and scope (noteArrival)
	}
	if org == nil {
		if e.curOrg == nil {
			e.curOrg = newOrigin(e.curRS, e.curSS, e.curInfo)
		}
		org = e.curOrg
	}
	ent.ref = &rolloutSpanRef{orig: n.key.trace, span: sp.SpanID(), origHex: e.sp.Hex(n.key.trace), org: org}
	ws := ent.waiters
	ent.waiters = nil
	for _, w := range ws {
		if hs := w.held; hs != nil && hs.phase == phaseSynth {
			if ent.ref.orig != w.key.trace {
				hs.synth = ent.ref
			}
			e.emit(w)
		}
	}
}
