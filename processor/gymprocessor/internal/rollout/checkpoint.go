// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package rollout // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/rollout"

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/state"
)

// The core's part of the processor's checkpoint (design §4.6): its whole
// state, so that a restored core decides exactly as the one it was taken
// from. Every piece of state the core reads is in it, in the order the core
// keeps it (the pending heap's slice, the FIFO of index entries, waiter
// lists, the run table's age); pointers become numbers. The parts' notes
// are written by the parts (NoteCodec), and the parts refer to nodes by
// the numbers this checkpoint gives them (Snapshot.ID, Nodes.At).

// NoteCodec writes and reads the parts' notes (Node.Note).
type NoteCodec interface {
	EncodeNote(w *state.Writer, note any)
	DecodeNote(r *state.Reader) any
}

// Snapshot numbers the nodes of a core for its checkpoint: those the core
// reaches, and those the parts add.
type Snapshot struct {
	c     *Core
	ids   map[*Node]int
	nodes []*Node
	runs  map[*Run]int
	rlist []*Run
}

// Snapshot starts a checkpoint of c, which is between rounds.
func (c *Core) Snapshot() *Snapshot {
	n := c.idx.len() + len(c.heap)
	s := &Snapshot{c: c, ids: make(map[*Node]int, n), nodes: make([]*Node, 0, n), runs: map[*Run]int{}}
	c.runs.Range(func(_ string, r *Run) bool { s.run(r); return true })
	c.idx.m.each(s.Add)
	for _, n := range c.idx.ovf {
		s.Add(n)
	}
	for _, e := range c.heap {
		s.Add(e.n)
		s.run(e.run)
	}
	for _, f := range c.fifo.buf[c.fifo.head:] {
		s.Add(f.n)
	}
	for _, js := range c.jobWait {
		for _, j := range js {
			s.Add(j)
		}
	}
	for p, ws := range c.leakPending {
		s.Add(p)
		for _, w := range ws {
			s.Add(w)
		}
	}
	return s
}

func (s *Snapshot) run(r *Run) {
	if _, ok := s.runs[r]; !ok {
		s.runs[r] = len(s.rlist)
		s.rlist = append(s.rlist, r)
	}
}

// Add numbers n, and what it reaches (its parent chain, its waiters).
func (s *Snapshot) Add(n *Node) {
	for ; n != nil; n = n.parent {
		if _, ok := s.ids[n]; ok {
			return
		}
		s.ids[n] = len(s.nodes)
		s.nodes = append(s.nodes, n)
		for _, w := range n.waiters() {
			s.Add(w)
		}
	}
}

// ID is n's number; n must have been numbered (Add).
func (s *Snapshot) ID(n *Node) int { return s.ids[n] }

// checkpointFormat changes whenever the core's encoding does. Format 3
// added the end of the wait after a restart; a format 2 checkpoint (none)
// still restores.
const checkpointFormat = 3

// Encode writes the core's state; nc writes the parts' notes.
func (s *Snapshot) Encode(w *state.Writer, nc NoteCodec) {
	c := s.c
	w.U(checkpointFormat)
	w.U(c.seq)
	w.I(c.pendingBytes)
	w.I(c.dl.restartWait)
	s.encodeRuns(w)
	s.encodeNodes(w, nc)
	s.encodeHeap(w)
	s.encodeQueues(w)
}

func (s *Snapshot) encodeRuns(w *state.Writer) {
	inTable := map[*Run]string{}
	s.c.runs.Range(func(k string, r *Run) bool { inTable[r] = k; return true })
	w.U(uint64(len(s.rlist)))
	for _, r := range s.rlist {
		k, in := inTable[r]
		w.Flag(in)
		w.Str(k)
		w.Str(r.id)
		w.I(r.firstSeen)
		w.I(int64(r.held))
		for _, f := range []bool{r.evidence, r.observabilityOff, r.checked, r.passThrough, r.serviceOrch, r.manyService} {
			w.Flag(f)
		}
		w.Str(r.service)
	}
}

func (s *Snapshot) encodeNodes(w *state.Writer, nc NoteCodec) {
	c := s.c
	w.U(uint64(len(s.nodes)))
	for _, n := range s.nodes {
		w.Trace(n.key.Trace)
		w.Span(n.key.Span)
		in, _ := c.idx.get(c.idx.Hash(n.key), n.key)
		w.Flag(in == n && !n.removed)
		w.Str(n.rollout)
		w.U(uint64(n.fifoSeq))
		w.U(uint64(n.state))
		w.U(uint64(n.how))
		for _, f := range []bool{n.job, n.settled, n.waiting, n.late, n.removed, n.root, n.named} {
			w.Flag(f)
		}
		w.I(n.end)
		w.Flag(n.wait != nil)
		if ws := n.wait; ws != nil {
			w.Str(ws.below.id)
			w.Flag(ws.below.conflict)
			w.I(int64(ws.nWait))
			w.I(ws.reqStart)
		}
		nc.EncodeNote(w, n.note)
	}
	for _, n := range s.nodes {
		pi, ok := s.ids[n.parent]
		w.Ref(pi, ok && n.parent != nil)
		w.Flag(n.waiters() != nil)
		s.encodeRefs(w, n.waiters())
	}
}

func (s *Snapshot) encodeRefs(w *state.Writer, ns []*Node) {
	w.U(uint64(len(ns)))
	for _, n := range ns {
		w.U(uint64(s.ids[n]))
	}
}

func (s *Snapshot) encodeHeap(w *state.Writer) {
	c := s.c
	w.U(uint64(c.slots.next))
	w.U(uint64(len(c.slots.free)))
	for _, v := range c.slots.free {
		w.U(uint64(v))
	}
	w.U(uint64(len(c.heap)))
	for _, e := range c.heap {
		w.U(uint64(s.ids[e.n]))
		w.U(uint64(s.runs[e.run]))
		w.U(uint64(e.slot))
		w.I(e.arrival)
		w.I(e.deadline)
		w.U(e.seq)
		w.I(e.bytes)
		w.U(uint64(e.phase))
		w.Flag(e.cut)
		w.U(uint64(e.cutLink))
	}
}

func (s *Snapshot) encodeQueues(w *state.Writer) {
	c := s.c
	live := c.fifo.buf[c.fifo.head:]
	w.U(uint64(len(live)))
	for _, f := range live {
		w.U(uint64(s.ids[f.n]))
		w.I(f.at)
		w.U(uint64(f.seq))
	}
	traces := sortedTraces(c.tracePending)
	w.U(uint64(len(traces)))
	for _, t := range traces {
		w.Trace(t)
		w.I(int64(c.tracePending[t]))
	}
	traces = sortedTraces(c.jobWait)
	w.U(uint64(len(traces)))
	for _, t := range traces {
		w.Trace(t)
		s.encodeRefs(w, c.jobWait[t])
	}
	parents := make([]*Node, 0, len(c.leakPending))
	for p := range c.leakPending {
		parents = append(parents, p)
	}
	slices.SortFunc(parents, func(a, b *Node) int { return s.ids[a] - s.ids[b] })
	w.U(uint64(len(parents)))
	for _, p := range parents {
		w.U(uint64(s.ids[p]))
		s.encodeRefs(w, c.leakPending[p])
	}
}

func sortedTraces[V any](m map[[16]byte]V) [][16]byte {
	keys := make([][16]byte, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [16]byte) int { return bytes.Compare(a[:], b[:]) })
	return keys
}

// Nodes are a restored checkpoint's nodes, by number, for the parts to
// resolve their references.
type Nodes struct{ list []*Node }

// At is node i; r's error is set when i is out of range.
func (ns Nodes) At(r *state.Reader, i int) *Node {
	if i < 0 || i >= len(ns.list) {
		r.Fail(errors.New("a node number out of range"))
		return nil
	}
	return ns.list[i]
}

// Len is the number of nodes.
func (ns Nodes) Len() int { return len(ns.list) }

// Restore reads into c, a new core of the same configuration, the state
// Encode wrote; nc reads the parts' notes. On error c must not be used.
func (c *Core) Restore(r *state.Reader, nc NoteCodec) (_ Nodes, err error) {
	defer func() {
		// A damaged checkpoint can point into a list it left empty: an
		// error, not a crash.
		if p := recover(); p != nil {
			err = fmt.Errorf("damaged checkpoint: %v", p)
		}
	}()
	f := r.U()
	if f != checkpointFormat && f != 2 {
		return Nodes{}, fmt.Errorf("checkpoint format %d, this build reads 2 and %d", f, checkpointFormat)
	}
	c.seq = r.U()
	c.pendingBytes = r.I()
	if f >= 3 {
		c.dl.restartWait = r.I()
	}
	d := &restorer{c: c, r: r}
	for _, part := range []func(){d.runs, func() { d.nodes(nc) }, d.heap, d.queues} {
		part()
		if r.Err() != nil {
			return Nodes{}, r.Err()
		}
	}
	for _, kv := range d.table {
		c.runs.Append(kv.key, kv.run)
	}
	if !heapValid(c.heap) {
		return Nodes{}, errors.New("the pending heap is out of order")
	}
	return Nodes{list: d.list}, nil
}

type restorer struct {
	c     *Core
	r     *state.Reader
	rlist []*Run
	table []struct {
		key string
		run *Run
	}
	list []*Node
}

func (d *restorer) runs() {
	r := d.r
	d.rlist = make([]*Run, r.Count())
	for i := range d.rlist {
		in, key := r.Flag(), r.Str()
		run := &Run{id: r.Str(), firstSeen: r.I(), held: int32(r.I())}
		for _, f := range []*bool{&run.evidence, &run.observabilityOff, &run.checked, &run.passThrough, &run.serviceOrch, &run.manyService} {
			*f = r.Flag()
		}
		run.service = r.Str()
		d.rlist[i] = run
		if in {
			d.table = append(d.table, struct {
				key string
				run *Run
			}{key, run})
		}
	}
}

func (d *restorer) nodes(nc NoteCodec) {
	r, c := d.r, d.c
	d.list = make([]*Node, r.Count())
	var indexed []*Node
	for i := range d.list {
		n := &Node{key: Key{Trace: r.Trace(), Span: r.Span()}}
		in := r.Flag()
		n.rollout = r.Str()
		n.fifoSeq, n.state, n.how = uint32(r.U()), nodeState(r.U()), How(r.U())
		for _, f := range []*bool{&n.job, &n.settled, &n.waiting, &n.late, &n.removed, &n.root, &n.named} {
			*f = r.Flag()
		}
		n.end = r.I()
		if r.Flag() {
			n.wait = &waitState{below: summary{id: r.Str(), conflict: r.Flag()}, nWait: int32(r.I()), reqStart: r.I()}
		}
		n.note = nc.DecodeNote(r)
		d.list[i] = n
		if in {
			indexed = append(indexed, n)
		}
		if r.Err() != nil {
			return
		}
	}
	for _, n := range d.list {
		if pi := r.Ref(len(d.list)); pi >= 0 {
			n.parent = d.list[pi]
		}
		notNil := r.Flag()
		ws := d.refs()
		if notNil {
			n.ws().waiters = ws
		}
		if r.Err() != nil {
			return
		}
	}
	for _, n := range indexed {
		h := c.idx.Hash(n.key)
		_, taken := c.idx.get(h, n.key)
		c.idx.put(h, n, taken)
	}
}

// refs reads a list of node numbers: never nil.
func (d *restorer) refs() []*Node {
	ns := make([]*Node, d.r.Count())
	for j := range ns {
		ns[j] = d.list[d.r.Index(len(d.list))]
	}
	return ns
}

func (d *restorer) heap() {
	r, c := d.r, d.c
	c.slots.next = Slot(r.U())
	c.slots.free = make([]Slot, r.Count())
	for i := range c.slots.free {
		c.slots.free[i] = Slot(r.U())
	}
	c.heap = make(pendingHeap, r.Count())
	for i := range c.heap {
		e := &entry{n: d.list[r.Index(len(d.list))], run: d.rlist[r.Index(len(d.rlist))], heapIdx: int32(i)}
		e.slot = Slot(r.U())
		e.arrival, e.deadline, e.seq, e.bytes = r.I(), r.I(), r.U(), r.I()
		e.phase, e.cut, e.cutLink = Phase(r.U()), r.Flag(), LinkType(r.U())
		if e.slot < 0 || e.slot >= c.slots.next {
			r.Fail(errors.New("a held span's slot out of range"))
		}
		if r.Err() != nil {
			return
		}
		e.n.held = e
		c.heap[i] = e
	}
}

func (d *restorer) queues() {
	r, c := d.r, d.c
	c.fifo = nodeQueue{buf: make([]fifoEntry, r.Count())}
	for i := range c.fifo.buf {
		c.fifo.buf[i] = fifoEntry{n: d.list[r.Index(len(d.list))], at: r.I(), seq: uint32(r.U())}
	}
	for range r.Count() {
		t := r.Trace()
		c.tracePending[t] = int32(r.I())
	}
	for range r.Count() {
		t := r.Trace()
		c.jobWait[t] = d.refs()
	}
	for range r.Count() {
		p := d.list[r.Index(len(d.list))]
		if c.leakPending == nil {
			c.leakPending = make(map[*Node][]*Node)
		}
		c.leakPending[p] = d.refs()
	}
}

// heapValid reports whether h is a heap (a corrupt checkpoint must not leave
// the core with one that pops out of order).
func heapValid(h pendingHeap) bool {
	for i := 1; i < len(h); i++ {
		if h.Less(i, (i-1)/2) {
			return false
		}
	}
	return true
}
