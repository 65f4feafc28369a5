// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import (
	"bytes"
	"slices"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// The FIFO of index entries that may leave, head first, and the per-trace
// pending counts and job spans, in trace order.

func (s *snapshotter) writeFIFO() {
	w := s.w
	live := s.e.fifo.buf[s.e.fifo.head:]
	w.U(uint64(len(live)))
	for _, f := range live {
		w.U(uint64(s.nodes[f.n]))
		w.I(f.at)
		w.U(uint64(f.seq))
	}
}

func (d *restorer) readFIFO() error {
	r, e := d.r, d.e
	e.fifo = nodeQueue{buf: make([]fifoEntry, r.Count())}
	for i := range e.fifo.buf {
		e.fifo.buf[i] = fifoEntry{n: d.nodes[r.Index(len(d.nodes))], at: r.I(), seq: uint32(r.U())}
	}
	return nil
}

func (s *snapshotter) writeTraceTables() {
	e, w := s.e, s.w
	traces := sortedTraceKeys(e.tracePending)
	w.U(uint64(len(traces)))
	for _, t := range traces {
		w.Trace(t)
		w.I(int64(e.tracePending[t]))
	}
	traces = sortedTraceKeys(e.jobWait)
	w.U(uint64(len(traces)))
	for _, t := range traces {
		w.Trace(t)
		s.writeNodeRefs(e.jobWait[t])
	}
}

func (d *restorer) readTraceTables() error {
	r, e := d.r, d.e
	for range r.Count() {
		t := r.Trace()
		e.tracePending[t] = int32(r.I())
	}
	for range r.Count() {
		t := r.Trace()
		e.jobWait[t] = d.readNodeRefs()
	}
	return nil
}

func sortedTraceKeys[V any](m map[pcommon.TraceID]V) []pcommon.TraceID {
	keys := make([]pcommon.TraceID, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b pcommon.TraceID) int { return bytes.Compare(a[:], b[:]) })
	return keys
}
