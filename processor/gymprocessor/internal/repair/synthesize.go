// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package repair // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/repair"

import (
	"github.com/otelcol-gym/otelcol-gym/internal/bounded"
	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
	"github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/rollout"
	"github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/split"
)

// Synthesized CLIENT parents (design §4.4): a SERVER span whose caller sent
// no CLIENT span gets one, below its rollout's gym.rollout (Gym with its
// http_client span group off) or an embedder's INTERNAL span of another
// service.

// Names the repairs write (design §4.4).
const (
	AttrSynthetic       = gymconv.SyntheticAttribute
	syntheticSpanDomain = "otelcol-gym/synthetic/v1"
)

// SyntheticSpanID is the span id of the CLIENT span synthesized above the
// SERVER span serverID in trace t: the first 8 bytes of
// SHA-256("otelcol-gym/synthetic/v1" ‖ 0x00 ‖ t (16 raw bytes) ‖ serverID
// (8 raw bytes)), never all zero.
func SyntheticSpanID(t [16]byte, serverID [8]byte) [8]byte {
	var id [8]byte
	split.DeriveID(id[:], syntheticSpanDomain, t[:], serverID[:])
	return id
}

// Synthesized is a CLIENT span to synthesize between a SERVER span and
// Parent, in Origin's resource and scope: trace id Trace, span id ID, the
// SERVER span's start, end and method (written by the processor), and the
// attributes named here.
type Synthesized struct {
	Trace         [16]byte
	ID, Parent    [8]byte
	ServerService string // its peer.service
	// OrigHex is its nemo.gym.original_trace_id, "" for none; with
	// ServerOrigHex, the one the SERVER span leaves with instead (read from
	// the span by the processor).
	OrigHex       string
	ServerOrigHex bool
	Rollout       string
	Origin        Origin
}

// rolloutRef is R's gym.rollout span as it left: where a synthesized CLIENT
// span of R hangs (parent, resource and scope).
type rolloutRef struct {
	orig    [16]byte // its original trace id
	span    [8]byte
	origHex string // its original trace id, carried by the synthesized span
	org     Origin
}

// synthEntry is, per rollout trace T', R's gym.rollout once it left, and the
// SERVER spans held until it does.
type synthEntry struct {
	ref     *rolloutRef
	waiters []*rollout.Node
}

// synthTable is bounded by split.max_tracked_roots entries, oldest first
// out, but never one that SERVER spans still wait on.
type synthTable struct {
	t *bounded.Table[[16]byte, *synthEntry]
}

func newSynthTable(capacity int) synthTable {
	t := bounded.New[[16]byte, *synthEntry](capacity)
	t.Pin(func(e *synthEntry) bool {
		for _, w := range e.waiters {
			if ph, held := w.Held(); held && ph == rollout.HoldRolloutParent {
				return true
			}
		}
		return false
	})
	return synthTable{t: t}
}

func (t *synthTable) entry(tid [16]byte) *synthEntry {
	if e, ok := t.t.Get(tid); ok {
		return e
	}
	e := &synthEntry{}
	t.t.Put(tid, e)
	return e
}

// holdForRolloutParent holds the parentless SERVER span n, with evidence for
// its rollout, until the rollout's gym.rollout has left (at most
// rollout_wait), or lets it go at once, repaired, when it already has. A
// SERVER span in gym.rollout's own original trace is the root of that
// trace, not a call made without traceparent: it is never put below
// gym.rollout (which may hang below it; that would be a cycle).
func (r *Repair) holdForRolloutParent(n *rollout.Node, run string) {
	tid := r.ids.TraceID(run, n.Key().Trace, n.Rollout())
	r.core.Hold(n, rollout.HoldRolloutParent)
	ent := r.table.entry(tid)
	if ent.ref != nil {
		if ent.ref.orig != n.Key().Trace {
			setSynth(n, ent.ref)
		}
		r.core.Release(n)
		return
	}
	ent.waiters = append(ent.waiters, n)
}

// rolloutSpanLeft records R's gym.rollout as it leaves (tid is its final
// trace id, T') and lets the SERVER spans that waited for it go.
func (r *Repair) rolloutSpanLeft(d *rollout.Departure, s *Span, tid [16]byte) {
	if !r.synth || !r.split || d.Rollout == "" || !s.RolloutSpan || d.Node == nil {
		return
	}
	ent := r.table.entry(tid)
	if ent.ref != nil {
		return // the first gym.rollout of a trace is the one
	}
	org := s.Origin
	if org == nil {
		org = originOf(d.Node) // its process's resource and scope (Arrived)
	}
	if org == nil {
		return
	}
	ent.ref = &rolloutRef{orig: d.Key.Trace, span: d.Key.Span, origHex: r.ids.Hex(d.Key.Trace), org: org}
	ws := ent.waiters
	ent.waiters = nil
	for _, w := range ws {
		if ph, held := w.Held(); held && ph == rollout.HoldRolloutParent {
			if ent.ref.orig != w.Key().Trace {
				setSynth(w, ent.ref)
			}
			r.core.Release(w)
		}
	}
}

// planSynthesized plans the CLIENT parent of a leaving SERVER span: below
// its rollout's gym.rollout when it waited for it, else below an embedder's
// INTERNAL parent of another service (its parent arrived, it was not cut
// from it, and it is not synthesized itself).
func (r *Repair) planSynthesized(pl *Plan, d *rollout.Departure, s *Span, tid [16]byte) {
	if d.Phase == rollout.HoldRolloutParent && d.GaveUp {
		r.counts.SynthMissed++
	}
	if d.Node == nil {
		return
	}
	if ref := synthOf(d.Node); ref != nil && d.Phase == rollout.HoldRolloutParent {
		r.synthesize(pl, s, tid, d.Key.Span, ref.span, ref.org, d.Rollout)
		pl.Synthesized.OrigHex = ref.origHex
		return
	}
	p := d.Node.Parent()
	if !r.synth || p == nil || !p.Arrived() || d.Cut || s.Synthetic {
		return
	}
	org := originOf(p)
	if org == nil || org.Service() == s.Service {
		return
	}
	// An embedder's INTERNAL span of another service called this server
	// without a CLIENT span of its own.
	r.synthesize(pl, s, tid, d.Key.Span, p.Key().Span, org, d.Rollout)
	pl.Synthesized.ServerOrigHex = true
}

func (r *Repair) synthesize(pl *Plan, s *Span, tid [16]byte, server, parent [8]byte, org Origin, rollout string) {
	pl.Synthesized = Synthesized{
		Trace: tid, ID: SyntheticSpanID(tid, server), Parent: parent,
		ServerService: s.Service, Rollout: rollout, Origin: org,
	}
	pl.HasSynth = true
	r.counts.Synthesized++
}
