// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package repair // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/repair"

import (
	"maps"
	"slices"

	"github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/rollout"
	"github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/state"
)

// The repair's part of the processor's checkpoint: the learned and untaught
// host:ports in key order, the synthesis table oldest first, the peer
// waiters in key order, and its notes in the core's nodes. A rolloutRef is
// written by value wherever it is named (it never changes); origins are
// the processor's (OriginCodec).

// OriginCodec writes and reads references to origins, which the processor
// keeps and numbers.
type OriginCodec interface {
	EncodeOrigin(w *state.Writer, o Origin)
	DecodeOrigin(r *state.Reader) Origin
}

// AddNodes numbers, in the core's snapshot, the nodes the repair refers to.
func (r *Repair) AddNodes(s *rollout.Snapshot) {
	r.compactPeerWaiters() // a waiter that left is no state
	r.table.t.Range(func(_ [16]byte, ent *synthEntry) bool {
		for _, w := range ent.waiters {
			s.Add(w)
		}
		return true
	})
	for _, ws := range r.peerWaiters {
		for _, w := range ws {
			s.Add(w)
		}
	}
}

// Notes is the codec of the repair's notes in the core's checkpoint.
func (r *Repair) Notes(oc OriginCodec) rollout.NoteCodec { return noteCodec{r, oc} }

type noteCodec struct {
	r  *Repair
	oc OriginCodec
}

func (c noteCodec) EncodeNote(w *state.Writer, v any) {
	if v == nil {
		w.Flag(false)
		return
	}
	w.Flag(true)
	var nt note
	switch x := v.(type) {
	case *note:
		nt = *x
	case *string:
		nt.peerService = x
	case Origin:
		nt.origin = x
	}
	ps := ""
	if nt.peerService != nil {
		ps = *nt.peerService
	}
	w.Str(ps)
	c.oc.EncodeOrigin(w, nt.origin)
	encodeRef(w, c.oc, nt.synth)
}

func (c noteCodec) DecodeNote(r *state.Reader) any {
	if !r.Flag() {
		return nil
	}
	var nt note
	if ps := r.Str(); ps != "" {
		nt.peerService = c.r.internPtr(ps)
	}
	nt.origin = c.oc.DecodeOrigin(r)
	nt.synth = decodeRef(r, c.oc)
	var n rollout.Node
	setNote(&n, nt)
	return n.Note()
}

func encodeRef(w *state.Writer, oc OriginCodec, ref *rolloutRef) {
	w.Flag(ref != nil)
	if ref == nil {
		return
	}
	w.Trace(ref.orig)
	w.Span(ref.span)
	w.Str(ref.origHex)
	oc.EncodeOrigin(w, ref.org)
}

func decodeRef(r *state.Reader, oc OriginCodec) *rolloutRef {
	if !r.Flag() {
		return nil
	}
	ref := &rolloutRef{orig: r.Trace(), span: r.Span(), origHex: r.Str()}
	ref.org = oc.DecodeOrigin(r)
	return ref
}

// Encode writes the repair's tables; s numbered their nodes (AddNodes).
func (r *Repair) Encode(w *state.Writer, s *rollout.Snapshot, oc OriginCodec) {
	encodeSet(w, slices.Sorted(maps.Keys(r.learned)), func(hp string) { w.Str(r.learned[hp]) })
	encodeSet(w, slices.Sorted(maps.Keys(r.untaught)), func(string) {})
	w.U(uint64(r.table.t.Len()))
	r.table.t.Range(func(t [16]byte, ent *synthEntry) bool {
		w.Trace(t)
		encodeRef(w, oc, ent.ref)
		encodeNodes(w, s, ent.waiters)
		return true
	})
	encodeSet(w, slices.Sorted(maps.Keys(r.peerWaiters)), func(hp string) { encodeNodes(w, s, r.peerWaiters[hp]) })
}

func encodeSet(w *state.Writer, keys []string, value func(string)) {
	w.U(uint64(len(keys)))
	for _, k := range keys {
		w.Str(k)
		value(k)
	}
}

func encodeNodes(w *state.Writer, s *rollout.Snapshot, ns []*rollout.Node) {
	w.U(uint64(len(ns)))
	for _, n := range ns {
		w.U(uint64(s.ID(n)))
	}
}

func decodeNodes(r *state.Reader, nodes rollout.Nodes) []*rollout.Node {
	ns := make([]*rollout.Node, r.Count())
	for i := range ns {
		ns[i] = nodes.At(r, r.Index(nodes.Len()))
	}
	return ns
}

// Restore reads what Encode wrote into a new repair; nodes are the core's.
func (r *Repair) Restore(rd *state.Reader, nodes rollout.Nodes, oc OriginCodec) {
	for range rd.Count() {
		hp := rd.Str()
		r.learned[hp] = r.Intern(rd.Str())
	}
	for range rd.Count() {
		r.untaught[rd.Str()] = struct{}{}
	}
	for range rd.Count() {
		t := rd.Trace()
		ent := &synthEntry{ref: decodeRef(rd, oc)}
		if ent.waiters = decodeNodes(rd, nodes); len(ent.waiters) == 0 {
			ent.waiters = nil
		}
		r.table.t.Append(t, ent)
	}
	for range rd.Count() {
		hp := rd.Str()
		r.peerWaiters[hp] = decodeNodes(rd, nodes)
	}
}
