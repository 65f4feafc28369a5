// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import (
	"maps"
	"slices"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// The split's tables, oldest first, and the service-map repair's state:
// learned and untaught host:ports in key order, the synthesis table oldest
// first, the peer waiters in key order.

func (s *snapshotter) writeSplitTables() {
	e, w := s.e, &s.w
	w.u(uint64(e.jobs.t.Len()))
	e.jobs.t.Range(func(t pcommon.TraceID, je *jobEntry) bool {
		w.trace(t)
		w.i(je.created)
		w.u(uint64(je.count))
		w.u(uint64(len(je.roots)))
		for _, r := range je.roots {
			w.trace(r.trace)
			w.spanID(r.span)
		}
		return true
	})
	w.u(uint64(e.roots.t.Len()))
	e.roots.t.Range(func(k tidKey, r rootRef) bool {
		w.str(k.k)
		w.str(k.rollout)
		w.trace(r.trace)
		w.spanID(r.span)
		return true
	})
}

func (d *restorer) readSplitTables() error {
	r, e := d.r, d.e
	for range r.count() {
		t := pcommon.TraceID(r.trace())
		je := &jobEntry{created: r.i(), count: int(r.u())}
		je.roots = make([]rootRef, r.count())
		for j := range je.roots {
			je.roots[j] = rootRef{trace: r.trace(), span: r.spanID()}
		}
		e.jobs.t.Append(t, je)
	}
	for range r.count() {
		k := tidKey{k: r.str(), rollout: r.str()}
		e.roots.t.Append(k, rootRef{trace: r.trace(), span: r.spanID()})
	}
	return nil
}

func (s *snapshotter) writeServiceMap() {
	e, w := s.e, &s.w
	hps := slices.Sorted(maps.Keys(e.sm.learned))
	w.u(uint64(len(hps)))
	for _, hp := range hps {
		w.str(hp)
		w.str(e.sm.learned[hp])
	}
	w.u(uint64(e.sm.table.t.Len()))
	e.sm.table.t.Range(func(t pcommon.TraceID, ent *synthEntry) bool {
		w.trace(t)
		ri, rok := s.refs[ent.ref]
		w.ref(ri, rok && ent.ref != nil)
		s.writeNodeRefs(ent.waiters)
		return true
	})
	hps = slices.Sorted(maps.Keys(e.sm.untaught))
	w.u(uint64(len(hps)))
	for _, hp := range hps {
		w.str(hp)
	}
	hps = slices.Sorted(maps.Keys(e.sm.peerWaiters))
	w.u(uint64(len(hps)))
	for _, hp := range hps {
		w.str(hp)
		s.writeNodeRefs(e.sm.peerWaiters[hp])
	}
}

func (d *restorer) readServiceMap() error {
	r, e := d.r, d.e
	for range r.count() {
		hp := r.str()
		e.sm.learned[hp] = e.sm.intern(r.str())
	}
	for range r.count() {
		t := pcommon.TraceID(r.trace())
		ent := &synthEntry{}
		if ri := r.ref(len(d.refs)); ri >= 0 {
			ent.ref = d.refs[ri]
		}
		ent.waiters = d.readNodeRefs()
		if len(ent.waiters) == 0 {
			ent.waiters = nil
		}
		e.sm.table.t.Append(t, ent)
	}
	for range r.count() {
		e.sm.untaught[r.str()] = struct{}{}
	}
	for range r.count() {
		hp := r.str()
		e.sm.peerWaiters[hp] = d.readNodeRefs()
	}
	return nil
}
