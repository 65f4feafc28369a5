// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import (
	"errors"
	"fmt"
	"math"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/repair"
	"github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/state"
)

// A checkpoint is the engine's whole state, written so that restoring it
// gives an engine that decides and emits exactly as the one it was taken
// from (journal.go). Each part writes and reads its own state; this file
// orders them:
//
//	the rollout core   its runs, nodes (with the repair's notes), held entries, queues (internal/rollout)
//	the repair         its host:port maps, synthesis table, peer waiters (internal/repair)
//	the split          its job and root tables (internal/split)
//	the held spans     each slot's span, origin and copies; the processes' origins (this file)
//
// Origins (a resource and a scope) are written where they are first named
// and referred to by number after (originCodec). What the parts only cache
// (trace-id and hex memos, interned names) is left out.

// stateFormat changes whenever the checkpoint encoding does. Format 1 was
// the single engine's of earlier builds (one package, its state in one
// order); a journal written by another build is set aside anyway
// (journal.go, fingerprint), so no checkpoint crosses builds.
const stateFormat = 2

// snapshot encodes the engine's state. The engine is between rounds.
func (e *engine) snapshot() []byte {
	w := state.NewWriter(64 * (e.core.Indexed() + e.core.Pending()))
	w.U(stateFormat)
	oc := newOriginCodec()
	snap := e.core.Snapshot()
	e.repair.AddNodes(snap)
	snap.Encode(w, e.repair.Notes(oc))
	e.repair.Encode(w, snap, oc)
	e.split.Encode(w)
	e.encodeHeld(w, oc)
	return w.Bytes()
}

// restore rebuilds into e, a new engine of the same configuration, the
// state a snapshot encoded. On error e must not be used. A damaged
// checkpoint is an error, never a crash.
func (e *engine) restore(data []byte) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("damaged checkpoint: %v", p)
		}
	}()
	r := state.NewReader(data)
	if f := r.U(); f != stateFormat {
		return fmt.Errorf("checkpoint format %d, this build reads %d", f, stateFormat)
	}
	oc := newOriginCodec()
	nodes, err := e.core.Restore(r, e.repair.Notes(oc))
	if err != nil {
		return err
	}
	e.repair.Restore(r, nodes, oc)
	e.split.Restore(r)
	if err := e.restoreHeld(r, oc); err != nil {
		return err
	}
	if r.Err() != nil {
		return r.Err()
	}
	if r.Left() != 0 {
		return fmt.Errorf("%d bytes after the checkpoint's end", r.Left())
	}
	return nil
}

// encodeHeld writes the held slots in slot order, then the process table,
// oldest first.
func (e *engine) encodeHeld(w *state.Writer, oc *originCodec) {
	n := 0
	for _, hs := range e.held {
		if hs.origin != nil {
			n++
		}
	}
	w.U(uint64(len(e.held)))
	w.U(uint64(n))
	for i, hs := range e.held {
		if hs.origin == nil {
			continue
		}
		w.U(uint64(i))
		w.Raw(marshalSpan(hs.span))
		oc.EncodeOrigin(w, hs.origin)
		w.U(uint64(hs.copies))
	}
	w.U(uint64(e.procs.Len()))
	e.procs.Range(func(k string, p *procState) bool {
		w.Str(k)
		oc.EncodeOrigin(w, p.org)
		w.Str(p.orgScope)
		return true
	})
}

func (e *engine) restoreHeld(r *state.Reader, oc *originCodec) error {
	e.held = make(heldSpans, r.Count())
	for range r.Count() {
		i := r.Index(len(e.held))
		sp, err := unmarshalSpan(r.Raw())
		if err != nil && r.Err() == nil {
			return fmt.Errorf("held span %d: %w", i, err)
		}
		hs := heldSpan{span: sp, origin: oc.decode(r), copies: int32(min(r.U(), math.MaxInt32))}
		if r.Err() != nil {
			return r.Err()
		}
		if hs.origin == nil {
			return errors.New("a held span without its origin")
		}
		// What prepare read from the span when it arrived, read again.
		var s repair.Span
		e.repairFacts(sp, sp.Kind(), &s)
		hs.facts = keepFacts(&s)
		_, hs.edit.rolloutInAttr = e.ev.Find(sp.Attributes())
		_, hs.edit.hasOrig = spanOriginalTrace(sp)
		e.held[i] = hs
	}
	for range r.Count() {
		k := r.Str()
		p := &procState{org: oc.decode(r), orgScope: r.Str()}
		e.procs.Append(k, p)
	}
	return r.Err()
}

// originCodec numbers origins as a checkpoint names them: the first time
// in full (its resource and scope, and its service), then by number.
type originCodec struct {
	ids  map[*origin]int
	list []*origin
}

func newOriginCodec() *originCodec { return &originCodec{ids: map[*origin]int{}} }

func (c *originCodec) EncodeOrigin(w *state.Writer, o repair.Origin) {
	org, _ := o.(*origin)
	if org == nil {
		w.U(0)
		return
	}
	if id, ok := c.ids[org]; ok {
		w.U(uint64(id) + 2)
		return
	}
	c.ids[org] = len(c.list)
	c.list = append(c.list, org)
	w.U(1)
	w.Raw(marshalOrigin(org))
	w.Str(org.service)
}

func (c *originCodec) DecodeOrigin(r *state.Reader) repair.Origin {
	if o := c.decode(r); o != nil {
		return o
	}
	return nil
}

func (c *originCodec) decode(r *state.Reader) *origin {
	switch v := r.U(); {
	case v == 0:
		return nil
	case v == 1:
		rs, err := unmarshalOrigin(r.Raw())
		if err != nil {
			r.Fail(fmt.Errorf("origin %d: %w", len(c.list), err))
			return nil
		}
		o := &origin{rs: rs, service: r.Str()}
		c.list = append(c.list, o)
		return o
	case v-2 < uint64(len(c.list)):
		return c.list[v-2]
	default:
		r.Fail(errors.New("an origin number out of range"))
		return nil
	}
}

var _ repair.OriginCodec = (*originCodec)(nil)

var (
	spanMarshaler   ptrace.ProtoMarshaler
	spanUnmarshaler ptrace.ProtoUnmarshaler
)

// marshalOrigin encodes an origin's resource and scope as a Traces with one
// empty ScopeSpans.
func marshalOrigin(o *origin) []byte {
	td := ptrace.NewTraces()
	o.rs.CopyTo(td.ResourceSpans().AppendEmpty())
	b, _ := spanMarshaler.MarshalTraces(td)
	return b
}

func unmarshalOrigin(b []byte) (ptrace.ResourceSpans, error) {
	td, err := spanUnmarshaler.UnmarshalTraces(b)
	if err != nil {
		return ptrace.ResourceSpans{}, err
	}
	if td.ResourceSpans().Len() != 1 || td.ResourceSpans().At(0).ScopeSpans().Len() != 1 {
		return ptrace.ResourceSpans{}, errors.New("an origin is not one resource with one scope")
	}
	rs := ptrace.NewResourceSpans()
	td.ResourceSpans().At(0).MoveTo(rs)
	return rs, nil
}

func marshalSpan(sp ptrace.Span) []byte {
	td := ptrace.NewTraces()
	sp.CopyTo(td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty())
	b, _ := spanMarshaler.MarshalTraces(td)
	return b
}

func unmarshalSpan(b []byte) (ptrace.Span, error) {
	td, err := spanUnmarshaler.UnmarshalTraces(b)
	if err != nil {
		return ptrace.Span{}, err
	}
	if td.SpanCount() != 1 {
		return ptrace.Span{}, errors.New("a held span is not one span")
	}
	sp := ptrace.NewSpan()
	td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).MoveTo(sp)
	return sp, nil
}
