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

func (s *snapshotter) writeSplitTables() { s.e.sp.Encode(s.w) }

func (d *restorer) readSplitTables() error {
	d.e.sp.Restore(d.r)
	return nil
}

func (s *snapshotter) writeServiceMap() {
	e, w := s.e, s.w
	hps := slices.Sorted(maps.Keys(e.sm.learned))
	w.U(uint64(len(hps)))
	for _, hp := range hps {
		w.Str(hp)
		w.Str(e.sm.learned[hp])
	}
	w.U(uint64(e.sm.table.t.Len()))
	e.sm.table.t.Range(func(t pcommon.TraceID, ent *synthEntry) bool {
		w.Trace(t)
		ri, rok := s.refs[ent.ref]
		w.Ref(ri, rok && ent.ref != nil)
		s.writeNodeRefs(ent.waiters)
		return true
	})
	hps = slices.Sorted(maps.Keys(e.sm.untaught))
	w.U(uint64(len(hps)))
	for _, hp := range hps {
		w.Str(hp)
	}
	hps = slices.Sorted(maps.Keys(e.sm.peerWaiters))
	w.U(uint64(len(hps)))
	for _, hp := range hps {
		w.Str(hp)
		s.writeNodeRefs(e.sm.peerWaiters[hp])
	}
}

func (d *restorer) readServiceMap() error {
	r, e := d.r, d.e
	for range r.Count() {
		hp := r.Str()
		e.sm.learned[hp] = e.sm.intern(r.Str())
	}
	for range r.Count() {
		t := pcommon.TraceID(r.Trace())
		ent := &synthEntry{}
		if ri := r.Ref(len(d.refs)); ri >= 0 {
			ent.ref = d.refs[ri]
		}
		ent.waiters = d.readNodeRefs()
		if len(ent.waiters) == 0 {
			ent.waiters = nil
		}
		e.sm.table.t.Append(t, ent)
	}
	for range r.Count() {
		e.sm.untaught[r.Str()] = struct{}{}
	}
	for range r.Count() {
		hp := r.Str()
		e.sm.peerWaiters[hp] = d.readNodeRefs()
	}
	return nil
}
