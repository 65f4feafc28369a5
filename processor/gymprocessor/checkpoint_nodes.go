// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

// Nodes, with whether the index holds them, then their links to each
// other (parent, waiters), which need every node numbered first.

func (s *snapshotter) writeNodes() {
	e, w := s.e, &s.w
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
	s.writeNodeLinks()
}

func (d *restorer) readNodes() error {
	r := d.r
	d.nodes = make([]*node, r.count())
	for i := range d.nodes {
		n := &node{key: spanKey{trace: r.trace(), span: r.spanID()}}
		in := r.flag()
		n.rollout, n.below.id, n.below.conflict = r.str(), r.str(), r.flag()
		n.fifoSeq, n.state, n.how = uint32(r.u()), nodeState(r.u()), how(r.u())
		n.job, n.settled, n.waiting, n.late, n.removed, n.root = r.flag(), r.flag(), r.flag(), r.flag(), r.flag(), r.flag()
		n.nWait, n.peerSvc = int32(r.i()), r.str()
		if oi := r.ref(len(d.origins)); oi >= 0 {
			n.org = d.origins[oi]
		}
		d.nodes[i] = n
		if in {
			d.indexed = append(d.indexed, n)
		}
		if r.err != nil {
			return r.err
		}
	}
	if err := d.readNodeLinks(); err != nil {
		return err
	}
	e := d.e
	for _, n := range d.indexed {
		h := e.idx.hash(n.key)
		_, taken := e.idx.get(h, n.key)
		e.idx.put(h, n, taken)
	}
	return nil
}

func (s *snapshotter) writeNodeLinks() {
	w := &s.w
	for _, n := range s.nodeList {
		pi, pok := s.nodes[n.parent]
		w.ref(pi, pok && n.parent != nil)
		w.u(uint64(len(n.waiters)))
		w.flag(n.waiters != nil)
		for _, c := range n.waiters {
			w.u(uint64(s.nodes[c]))
		}
	}
}

func (d *restorer) readNodeLinks() error {
	r := d.r
	for _, n := range d.nodes {
		if pi := r.ref(len(d.nodes)); pi >= 0 {
			n.parent = d.nodes[pi]
		}
		k, notNil := r.count(), r.flag()
		if notNil {
			n.waiters = make([]*node, k)
			for j := range n.waiters {
				n.waiters[j] = d.nodes[r.index(len(d.nodes))]
			}
		}
		if r.err != nil {
			return r.err
		}
	}
	return nil
}

// writeNodeRefs writes a list of nodes as their numbers.
func (s *snapshotter) writeNodeRefs(ns []*node) {
	s.w.u(uint64(len(ns)))
	for _, n := range ns {
		s.w.u(uint64(s.nodes[n]))
	}
}

// readNodeRefs reads a list writeNodeRefs wrote: never nil.
func (d *restorer) readNodeRefs() []*node {
	ns := make([]*node, d.r.count())
	for j := range ns {
		ns[j] = d.nodes[d.r.index(len(d.nodes))]
	}
	return ns
}
