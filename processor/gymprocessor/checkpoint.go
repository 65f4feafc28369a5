// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import (
	"errors"
	"fmt"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/state"
)

// A checkpoint is the engine's whole state, written so that restoring it
// gives an engine that decides and emits exactly as the one it was taken
// from (journal.go). Every piece of state the engine reads is in it, in the
// order the engine keeps it (the pending heap's slice, the FIFO of index
// entries, waiter lists, the tables' ages); pointers become indexes into
// lists of nodes, origins, runs, processes and synthesis refs. What the
// engine only caches (trace-id and hex memos, interned names) is left out.
// Each part of the state has its writer and its reader side by side, in a
// file of its own (checkpoint_*.go); write and restore call them in the
// order the encoding holds the parts.

// stateFormat changes whenever the checkpoint encoding does.
const stateFormat = 1

// snapshot encodes the engine's state. The engine is between rounds.
func (e *engine) snapshot() []byte {
	// Sized for what the state holds, so the maps do not grow step by step.
	n := e.idx.len() + len(e.heap)
	s := &snapshotter{e: e, w: state.NewWriter(64 * n),
		nodes: make(map[*node]int, n), nodeList: make([]*node, 0, n),
		origins: map[*origin]int{}, infos: map[*resInfo]int{},
		runs: map[*runState]int{}, procs: map[*procState]int{}, refs: map[*rolloutSpanRef]int{}}
	s.collect()
	s.write()
	return s.w.Bytes()
}

type snapshotter struct {
	e *engine
	w *state.Writer

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
	e.compactPeerWaiters() // a waiter that left is no state
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
	s.w.U(stateFormat)
	s.w.U(s.e.seq)
	s.w.I(s.e.pendingBytes)
	s.writeRuns()
	s.writeProcs()
	s.writeOrigins()
	s.writeSynthRefs()
	s.writeNodes()
	s.writeHeap()
	s.writeFIFO()
	s.writeTraceTables()
	s.writeSplitTables()
	s.writeServiceMap()
}

// restorer rebuilds an engine from a checkpoint: the lists the encoding
// refers to by index, and the table entries kept back until the whole
// checkpoint has read well.
type restorer struct {
	e *engine
	r *state.Reader

	runs      []*runState
	runTable  []tableEntry[*runState]
	procs     []*procState
	procTable []tableEntry[*procState]
	infos     []*resInfo
	origins   []*origin
	refs      []*rolloutSpanRef
	nodes     []*node
	indexed   []*node
}

// tableEntry is a table entry: its key and its value.
type tableEntry[T any] struct {
	key string
	v   T
}

// restore rebuilds into e, a new engine of the same configuration, the
// state a snapshot encoded. On error e must not be used. A checkpoint whose
// indexes point into lists it left empty (a damaged one) is an error, not a
// crash: the decoder's index into such a list is recovered from.
func (e *engine) restore(data []byte) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("damaged checkpoint: %v", p)
		}
	}()
	d := &restorer{e: e, r: state.NewReader(data)}
	r := d.r
	if f := r.U(); f != stateFormat {
		return fmt.Errorf("checkpoint format %d, this build reads %d", f, stateFormat)
	}
	e.seq = r.U()
	e.pendingBytes = r.I()
	for _, part := range []func() error{
		d.readRuns, d.readProcs, d.readOrigins, d.readSynthRefs, d.readNodes, d.readHeap,
		d.readFIFO, d.readTraceTables, d.readSplitTables, d.readServiceMap,
	} {
		if err := part(); err != nil {
			return err
		}
	}
	if r.Err() != nil {
		return r.Err()
	}
	if r.Left() != 0 {
		return fmt.Errorf("%d bytes after the checkpoint's end", r.Left())
	}
	for _, kv := range d.runTable {
		e.runs.Append(kv.key, kv.v)
	}
	for _, kv := range d.procTable {
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
