// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// A checkpoint is the engine's whole state, written so that restoring it
// gives an engine that decides and emits exactly as the one it was taken
// from (journal.go). Every piece of state the engine reads is in it, in the
// order the engine keeps it (the pending heap's slice, the FIFO of index
// entries, waiter lists, the tables' ages); pointers become indexes into
// lists of nodes, origins, runs, processes and synthesis refs. What the
// engine only caches (trace-id and hex memos, interned names) is left out.

// stateWriter appends the checkpoint encoding: varints, length-prefixed
// strings from a table of distinct strings, raw ids.
type stateWriter struct {
	b       []byte
	strings map[string]uint64
}

func (w *stateWriter) u(v uint64)       { w.b = binary.AppendUvarint(w.b, v) }
func (w *stateWriter) i(v int64)        { w.b = binary.AppendVarint(w.b, v) }
func (w *stateWriter) flag(v bool)      { w.b = append(w.b, boolByte(v)) }
func (w *stateWriter) trace(t [16]byte) { w.b = append(w.b, t[:]...) }
func (w *stateWriter) spanID(s [8]byte) { w.b = append(w.b, s[:]...) }
func (w *stateWriter) raw(p []byte)     { w.u(uint64(len(p))); w.b = append(w.b, p...) }
func (w *stateWriter) ref(i int, ok bool) { // an optional index: 0 for none
	if !ok {
		w.u(0)
		return
	}
	w.u(uint64(i) + 1)
}

// str writes s as its index in the string table, adding it the first time
// (index then string).
func (w *stateWriter) str(s string) {
	if id, ok := w.strings[s]; ok {
		w.u(id)
		return
	}
	id := uint64(len(w.strings)) + 1
	w.strings[s] = id
	w.u(0)
	w.raw([]byte(s))
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

var errTruncatedState = errors.New("checkpoint ends early")

// stateReader reads what stateWriter wrote; the first problem sticks in err.
type stateReader struct {
	b       []byte
	err     error
	strings []string
}

func (r *stateReader) u() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *stateReader) i() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *stateReader) fail() {
	if r.err == nil {
		r.err = errTruncatedState
	}
	r.b = nil
}

func (r *stateReader) take(n int) []byte {
	if n < 0 || len(r.b) < n {
		r.fail()
		return make([]byte, n&0xffff)
	}
	p := r.b[:n]
	r.b = r.b[n:]
	return p
}

func (r *stateReader) flag() bool { return r.take(1)[0] == 1 }

func (r *stateReader) trace() (t [16]byte) { copy(t[:], r.take(16)); return t }

func (r *stateReader) spanID() (s [8]byte) { copy(s[:], r.take(8)); return s }

func (r *stateReader) raw() []byte {
	n := r.u()
	if n > uint64(len(r.b)) {
		r.fail()
		return nil
	}
	return r.take(int(n))
}

func (r *stateReader) str() string {
	id := r.u()
	if id == 0 {
		s := string(r.raw())
		r.strings = append(r.strings, s)
		return s
	}
	if id > uint64(len(r.strings)) {
		r.fail()
		return ""
	}
	return r.strings[id-1]
}

// ref reads an optional index below n: -1 for none.
func (r *stateReader) ref(n int) int {
	v := r.u()
	if v == 0 {
		return -1
	}
	if v > uint64(n) {
		r.fail()
		return -1
	}
	return int(v - 1)
}

// count reads a list length, bounded by what is left to read.
func (r *stateReader) count() int {
	n := r.u()
	if n > uint64(len(r.b))+1 {
		r.fail()
		return 0
	}
	return int(n)
}

// stateFormat changes whenever the checkpoint encoding does.
const stateFormat = 1

// snapshot encodes the engine's state. The engine is between rounds.
func (e *engine) snapshot() []byte {
	// Sized for what the state holds, so the maps do not grow step by step.
	n := e.idx.len() + len(e.heap)
	s := &snapshotter{e: e, w: stateWriter{b: make([]byte, 0, 64*n), strings: make(map[string]uint64, n/8)},
		nodes: make(map[*node]int, n), nodeList: make([]*node, 0, n),
		origins: map[*origin]int{}, infos: map[*resInfo]int{},
		runs: map[*runState]int{}, procs: map[*procState]int{}, refs: map[*rolloutSpanRef]int{}}
	s.collect()
	s.write()
	return s.w.b
}

type snapshotter struct {
	e *engine
	w stateWriter

	nodes     map[*node]int
	nodeList  []*node
	origins   map[*origin]int
	originLst []*origin
	infos     map[*resInfo]int
	infoList  []*resInfo
	runs      map[*runState]int
	runList   []*runState
	procs     map[*procState]int
	procList  []*procState
	refs      map[*rolloutSpanRef]int
	refList   []*rolloutSpanRef
}

// number gives v the next index of list the first time it is seen, and
// reports whether it was new.
func number[T comparable](ids map[T]int, list *[]T, v T) bool {
	if _, ok := ids[v]; ok {
		return false
	}
	ids[v] = len(*list)
	*list = append(*list, v)
	return true
}

func (s *snapshotter) node(n *node) {
	for ; n != nil && number(s.nodes, &s.nodeList, n); n = n.parent {
		for _, w := range n.waiters {
			s.node(w)
		}
		if n.org != nil {
			s.origin(n.org)
		}
	}
}

func (s *snapshotter) origin(o *origin) {
	if number(s.origins, &s.originLst, o) {
		s.info(o.info)
	}
}

func (s *snapshotter) info(in *resInfo) {
	if number(s.infos, &s.infoList, in) {
		s.run(in.run)
		s.proc(in.proc)
	}
}

func (s *snapshotter) run(r *runState) { number(s.runs, &s.runList, r) }

func (s *snapshotter) proc(p *procState) {
	if number(s.procs, &s.procList, p) && p.org != nil {
		s.origin(p.org)
	}
}

func (s *snapshotter) synthRef(ref *rolloutSpanRef) {
	if number(s.refs, &s.refList, ref) {
		s.origin(ref.org)
	}
}

// collect numbers everything the state points at: tables first, so that
// their entries keep their order, then what the index, the heap, the FIFO
// and the repair tables reach.
func (s *snapshotter) collect() {
	e := s.e
	e.runs.Range(func(_ string, r *runState) bool { s.run(r); return true })
	e.procs.Range(func(_ string, p *procState) bool { s.proc(p); return true })
	for _, n := range e.idx.m {
		s.node(n)
	}
	for _, n := range e.idx.ovf {
		s.node(n)
	}
	for _, hs := range e.heap {
		s.node(hs.n)
		s.origin(hs.origin)
		if hs.synth != nil {
			s.synthRef(hs.synth)
		}
	}
	for _, f := range e.fifo.buf[e.fifo.head:] {
		s.node(f.n)
	}
	e.sm.table.t.Range(func(_ pcommon.TraceID, ent *synthEntry) bool {
		if ent.ref != nil {
			s.synthRef(ent.ref)
		}
		for _, w := range ent.waiters {
			s.node(w)
		}
		return true
	})
	for _, ws := range e.sm.peerWaiters {
		for _, w := range ws {
			s.node(w)
		}
	}
	for _, js := range e.jobWait {
		for _, j := range js {
			s.node(j)
		}
	}
}

func (s *snapshotter) write() {
	e, w := s.e, &s.w
	w.u(stateFormat)
	w.u(e.seq)
	w.i(e.pendingBytes)

	// Runs and processes, with whether and where their table holds them.
	inRuns := map[*runState]string{}
	e.runs.Range(func(k string, r *runState) bool { inRuns[r] = k; return true })
	w.u(uint64(len(s.runList)))
	for _, r := range s.runList {
		k, in := inRuns[r]
		w.flag(in)
		w.str(k)
		w.str(r.id)
		w.i(r.firstSeen)
		w.i(int64(r.held))
		w.flag(r.evidence)
		w.flag(false) // unused: keeps the format
		w.flag(r.observabilityOff)
		w.flag(r.checked)
		w.flag(r.passThrough)
		w.str(r.service)
		w.flag(r.serviceOrch)
		w.flag(r.manyService)
	}
	inProcs := map[*procState]string{}
	e.procs.Range(func(k string, p *procState) bool { inProcs[p] = k; return true })
	w.u(uint64(len(s.procList)))
	for _, p := range s.procList {
		k, in := inProcs[p]
		w.flag(in)
		w.str(k)
		w.flag(false) // unused (two flags): keeps the format
		w.flag(false)
		w.i(int64(p.held))
		w.str(p.orgScope)
	}
	// Origins (a resource and a scope) and the resource facts they carry.
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
	// Synthesis refs.
	w.u(uint64(len(s.refList)))
	for _, ref := range s.refList {
		w.trace(ref.orig)
		w.spanID(ref.span)
		w.str(ref.origHex)
		w.u(uint64(s.origins[ref.org]))
	}
	// Nodes, then their links to each other.
	inIndex := map[*node]bool{}
	for _, n := range e.idx.m {
		inIndex[n] = true
	}
	for _, n := range e.idx.ovf {
		inIndex[n] = true
	}
	w.u(uint64(len(s.nodeList)))
	for _, n := range s.nodeList {
		w.trace(n.key.trace)
		w.spanID(n.key.span)
		w.flag(inIndex[n])
		w.str(n.rollout)
		w.str(n.below.id)
		w.flag(n.below.conflict)
		w.u(uint64(n.fifoSeq))
		w.u(uint64(n.state))
		w.u(uint64(n.how))
		w.flag(n.job)
		w.flag(n.settled)
		w.flag(n.waiting)
		w.flag(n.late)
		w.flag(n.removed)
		w.flag(n.root)
		w.i(int64(n.nWait))
		w.str(n.peerSvc)
		oi, ook := s.origins[n.org]
		w.ref(oi, ook && n.org != nil)
	}
	for _, n := range s.nodeList {
		pi, pok := s.nodes[n.parent]
		w.ref(pi, pok && n.parent != nil)
		w.u(uint64(len(n.waiters)))
		w.flag(n.waiters != nil)
		for _, c := range n.waiters {
			w.u(uint64(s.nodes[c]))
		}
	}
	// The pending heap, slot by slot.
	w.u(uint64(len(e.heap)))
	for _, hs := range e.heap {
		w.u(uint64(s.nodes[hs.n]))
		w.raw(marshalSpan(hs.span))
		w.u(uint64(s.origins[hs.origin]))
		w.i(hs.arrival)
		w.i(hs.deadline)
		w.u(hs.seq)
		w.i(hs.bytes)
		w.u(uint64(hs.phase))
		w.flag(hs.cut)
		w.str(hs.cutType)
		w.trace(hs.prev.trace)
		w.spanID(hs.prev.span)
		w.flag(hs.hasPrev)
		ri, rok := s.refs[hs.synth]
		w.ref(ri, rok && hs.synth != nil)
		w.u(uint64(hs.copies))
	}
	// The FIFO of index entries that may leave, head first.
	live := e.fifo.buf[e.fifo.head:]
	w.u(uint64(len(live)))
	for _, f := range live {
		w.u(uint64(s.nodes[f.n]))
		w.i(f.at)
		w.u(uint64(f.seq))
	}
	// Pending counts and job spans per trace, in trace order.
	traces := sortedTraceKeys(e.tracePending)
	w.u(uint64(len(traces)))
	for _, t := range traces {
		w.trace(t)
		w.i(int64(e.tracePending[t]))
	}
	traces = sortedTraceKeys(e.jobWait)
	w.u(uint64(len(traces)))
	for _, t := range traces {
		w.trace(t)
		js := e.jobWait[t]
		w.u(uint64(len(js)))
		for _, j := range js {
			w.u(uint64(s.nodes[j]))
		}
	}
	// The split's tables, oldest first.
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
	// The service-map repair's state.
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
		w.u(uint64(len(ent.waiters)))
		for _, n := range ent.waiters {
			w.u(uint64(s.nodes[n]))
		}
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
		ws := e.sm.peerWaiters[hp]
		w.u(uint64(len(ws)))
		for _, n := range ws {
			w.u(uint64(s.nodes[n]))
		}
	}
}

func sortedTraceKeys[V any](m map[pcommon.TraceID]V) []pcommon.TraceID {
	keys := make([]pcommon.TraceID, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b pcommon.TraceID) int { return bytes.Compare(a[:], b[:]) })
	return keys
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

func marshalSpan(sp ptrace.Span) []byte {
	td := ptrace.NewTraces()
	sp.CopyTo(td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty())
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

// index reads a plain index below n.
func (r *stateReader) index(n int) int {
	v := r.u()
	if v >= uint64(n) {
		r.fail()
		return 0
	}
	return int(v)
}

// restore rebuilds into e, a new engine of the same configuration, the
// state a snapshot encoded. On error e must not be used.
func (e *engine) restore(data []byte) error {
	r := &stateReader{b: data}
	if f := r.u(); f != stateFormat {
		return fmt.Errorf("checkpoint format %d, this build reads %d", f, stateFormat)
	}
	e.seq = r.u()
	e.pendingBytes = r.i()

	type keyed[T any] struct {
		key string
		v   T
	}
	runs := make([]*runState, r.count())
	var runTable []keyed[*runState]
	for i := range runs {
		in, key := r.flag(), r.str()
		rs := &runState{id: r.str(), firstSeen: r.i(), held: int32(r.i())}
		rs.evidence, _, rs.observabilityOff, rs.checked, rs.passThrough = r.flag(), r.flag(), r.flag(), r.flag(), r.flag()
		rs.service, rs.serviceOrch, rs.manyService = r.str(), r.flag(), r.flag()
		runs[i] = rs
		if in {
			runTable = append(runTable, keyed[*runState]{key, rs})
		}
	}
	procs := make([]*procState, r.count())
	var procTable []keyed[*procState]
	for i := range procs {
		in, key := r.flag(), r.str()
		_, _ = r.flag(), r.flag() // unused
		p := &procState{held: int32(r.i()), orgScope: r.str()}
		procs[i] = p
		if in {
			procTable = append(procTable, keyed[*procState]{key, p})
		}
	}
	if r.err != nil {
		return r.err
	}
	infos := make([]*resInfo, r.count())
	for i := range infos {
		in := &resInfo{}
		in.run, in.proc = runs[r.index(len(runs))], procs[r.index(len(procs))]
		in.service = e.sm.intern(r.str())
		infos[i] = in
		if r.err != nil {
			return r.err
		}
	}
	origins := make([]*origin, r.count())
	for i := range origins {
		rs, err := unmarshalOrigin(r.raw())
		if err != nil && r.err == nil {
			return fmt.Errorf("origin %d: %w", i, err)
		}
		origins[i] = &origin{rs: rs, info: infos[r.index(len(infos))]}
		if r.err != nil {
			return r.err
		}
	}
	for _, p := range procs {
		if oi := r.ref(len(origins)); oi >= 0 {
			p.org = origins[oi]
		}
	}
	refs := make([]*rolloutSpanRef, r.count())
	for i := range refs {
		ref := &rolloutSpanRef{orig: r.trace(), span: r.spanID(), origHex: r.str()}
		ref.org = origins[r.index(len(origins))]
		refs[i] = ref
		if r.err != nil {
			return r.err
		}
	}
	nodes := make([]*node, r.count())
	var indexed []*node
	for i := range nodes {
		n := &node{key: spanKey{trace: r.trace(), span: r.spanID()}}
		in := r.flag()
		n.rollout, n.below.id, n.below.conflict = r.str(), r.str(), r.flag()
		n.fifoSeq, n.state, n.how = uint32(r.u()), nodeState(r.u()), how(r.u())
		n.job, n.settled, n.waiting, n.late, n.removed, n.root = r.flag(), r.flag(), r.flag(), r.flag(), r.flag(), r.flag()
		n.nWait, n.peerSvc = int32(r.i()), r.str()
		if oi := r.ref(len(origins)); oi >= 0 {
			n.org = origins[oi]
		}
		nodes[i] = n
		if in {
			indexed = append(indexed, n)
		}
		if r.err != nil {
			return r.err
		}
	}
	for _, n := range nodes {
		if pi := r.ref(len(nodes)); pi >= 0 {
			n.parent = nodes[pi]
		}
		k, notNil := r.count(), r.flag()
		if notNil {
			n.waiters = make([]*node, k)
			for j := range n.waiters {
				n.waiters[j] = nodes[r.index(len(nodes))]
			}
		}
		if r.err != nil {
			return r.err
		}
	}
	for _, n := range indexed {
		h := e.idx.hash(n.key)
		_, taken := e.idx.get(h, n.key)
		e.idx.put(h, n, taken)
	}
	e.heap = make(pendingHeap, r.count())
	for i := range e.heap {
		hs := &heldSpan{n: nodes[r.index(len(nodes))], heapIdx: i}
		sp, err := unmarshalSpan(r.raw())
		if err != nil && r.err == nil {
			return fmt.Errorf("held span %d: %w", i, err)
		}
		hs.span = sp
		hs.origin = origins[r.index(len(origins))]
		hs.arrival, hs.deadline, hs.seq, hs.bytes = r.i(), r.i(), r.u(), r.i()
		hs.phase, hs.cut, hs.cutType = uint8(r.u()), r.flag(), r.str()
		hs.prev = rootRef{trace: r.trace(), span: r.spanID()}
		hs.hasPrev = r.flag()
		if ri := r.ref(len(refs)); ri >= 0 {
			hs.synth = refs[ri]
		}
		hs.copies = int32(min(r.u(), math.MaxInt32))
		hs.n.held = hs
		e.heap[i] = hs
		if r.err != nil {
			return r.err
		}
	}
	e.fifo = nodeQueue{buf: make([]fifoEntry, r.count())}
	for i := range e.fifo.buf {
		e.fifo.buf[i] = fifoEntry{n: nodes[r.index(len(nodes))], at: r.i(), seq: uint32(r.u())}
	}
	for range r.count() {
		t := r.trace()
		e.tracePending[t] = int32(r.i())
	}
	for range r.count() {
		t := r.trace()
		js := make([]*node, r.count())
		for j := range js {
			js[j] = nodes[r.index(len(nodes))]
		}
		e.jobWait[t] = js
	}
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
	for range r.count() {
		hp := r.str()
		e.sm.learned[hp] = e.sm.intern(r.str())
	}
	for range r.count() {
		t := pcommon.TraceID(r.trace())
		ent := &synthEntry{}
		if ri := r.ref(len(refs)); ri >= 0 {
			ent.ref = refs[ri]
		}
		ent.waiters = make([]*node, r.count())
		for j := range ent.waiters {
			ent.waiters[j] = nodes[r.index(len(nodes))]
		}
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
		ws := make([]*node, r.count())
		for j := range ws {
			ws[j] = nodes[r.index(len(nodes))]
		}
		e.sm.peerWaiters[hp] = ws
	}
	if r.err != nil {
		return r.err
	}
	if len(r.b) != 0 {
		return fmt.Errorf("%d bytes after the checkpoint's end", len(r.b))
	}
	for _, kv := range runTable {
		e.runs.Append(kv.key, kv.v)
	}
	for _, kv := range procTable {
		e.procs.Append(kv.key, kv.v)
	}
	if !heapValid(e.heap) {
		return errors.New("the pending heap is out of order")
	}
	return nil
}

// heapValid reports whether h is a heap (a corrupt checkpoint must not leave
// the engine with one that pops out of order).
func heapValid(h pendingHeap) bool {
	for i := 1; i < len(h); i++ {
		if h.Less(i, (i-1)/2) {
			return false
		}
	}
	return true
}
