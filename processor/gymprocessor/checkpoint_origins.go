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
	w := s.w
	w.U(uint64(len(s.infoList)))
	for _, in := range s.infoList {
		w.U(uint64(s.runs[in.run]))
		w.U(uint64(s.procs[in.proc]))
		w.Str(in.service)
	}
	w.U(uint64(len(s.originLst)))
	for _, o := range s.originLst {
		w.Raw(marshalOrigin(o))
		w.U(uint64(s.infos[o.info]))
	}
	for _, p := range s.procList { // process origins, now that origins are numbered
		i, ok := s.origins[p.org]
		w.Ref(i, ok)
	}
}

func (d *restorer) readOrigins() error {
	r := d.r
	d.infos = make([]*resInfo, r.Count())
	for i := range d.infos {
		in := &resInfo{}
		in.run, in.proc = d.runs[r.Index(len(d.runs))], d.procs[r.Index(len(d.procs))]
		in.service = d.e.sm.intern(r.Str())
		d.infos[i] = in
		if r.Err() != nil {
			return r.Err()
		}
	}
	d.origins = make([]*origin, r.Count())
	for i := range d.origins {
		rs, err := unmarshalOrigin(r.Raw())
		if err != nil && r.Err() == nil {
			return fmt.Errorf("origin %d: %w", i, err)
		}
		d.origins[i] = &origin{rs: rs, info: d.infos[r.Index(len(d.infos))]}
		if r.Err() != nil {
			return r.Err()
		}
	}
	for _, p := range d.procs {
		if oi := r.Ref(len(d.origins)); oi >= 0 {
			p.org = d.origins[oi]
		}
	}
	return nil
}

func (s *snapshotter) writeSynthRefs() {
	w := s.w
	w.U(uint64(len(s.refList)))
	for _, ref := range s.refList {
		w.Trace(ref.orig)
		w.Span(ref.span)
		w.Str(ref.origHex)
		w.U(uint64(s.origins[ref.org]))
	}
}

func (d *restorer) readSynthRefs() error {
	r := d.r
	d.refs = make([]*rolloutSpanRef, r.Count())
	for i := range d.refs {
		ref := &rolloutSpanRef{orig: r.Trace(), span: r.Span(), origHex: r.Str()}
		ref.org = d.origins[r.Index(len(d.origins))]
		d.refs[i] = ref
		if r.Err() != nil {
			return r.Err()
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
