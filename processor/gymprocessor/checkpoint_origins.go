// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import (
	"errors"
	"fmt"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Origins (a resource and a scope), the resource facts they carry, the
// processes' origins and the synthesis refs that point at origins.

func (s *snapshotter) writeOrigins() {
	w := &s.w
	w.u(uint64(len(s.infoList)))
	for _, in := range s.infoList {
		w.u(uint64(s.runs[in.run]))
		w.u(uint64(s.procs[in.proc]))
		w.str(in.service)
	}
	w.u(uint64(len(s.originLst)))
	for _, o := range s.originLst {
		w.raw(marshalOrigin(o))
		w.u(uint64(s.infos[o.info]))
	}
	for _, p := range s.procList { // process origins, now that origins are numbered
		i, ok := s.origins[p.org]
		w.ref(i, ok)
	}
}

func (d *restorer) readOrigins() error {
	r := d.r
	d.infos = make([]*resInfo, r.count())
	for i := range d.infos {
		in := &resInfo{}
		in.run, in.proc = d.runs[r.index(len(d.runs))], d.procs[r.index(len(d.procs))]
		in.service = d.e.sm.intern(r.str())
		d.infos[i] = in
		if r.err != nil {
			return r.err
		}
	}
	d.origins = make([]*origin, r.count())
	for i := range d.origins {
		rs, err := unmarshalOrigin(r.raw())
		if err != nil && r.err == nil {
			return fmt.Errorf("origin %d: %w", i, err)
		}
		d.origins[i] = &origin{rs: rs, info: d.infos[r.index(len(d.infos))]}
		if r.err != nil {
			return r.err
		}
	}
	for _, p := range d.procs {
		if oi := r.ref(len(d.origins)); oi >= 0 {
			p.org = d.origins[oi]
		}
	}
	return nil
}

func (s *snapshotter) writeSynthRefs() {
	w := &s.w
	w.u(uint64(len(s.refList)))
	for _, ref := range s.refList {
		w.trace(ref.orig)
		w.spanID(ref.span)
		w.str(ref.origHex)
		w.u(uint64(s.origins[ref.org]))
	}
}

func (d *restorer) readSynthRefs() error {
	r := d.r
	d.refs = make([]*rolloutSpanRef, r.count())
	for i := range d.refs {
		ref := &rolloutSpanRef{orig: r.trace(), span: r.spanID(), origHex: r.str()}
		ref.org = d.origins[r.index(len(d.origins))]
		d.refs[i] = ref
		if r.err != nil {
			return r.err
		}
	}
	return nil
}

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
