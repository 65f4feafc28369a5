// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

// Nodes, with whether the index holds them, then their links to each
// other (parent, waiters), which need every node numbered first.

func (s *snapshotter) writeNodes() {
	e, w := s.e, s.w
	inIndex := map[*node]bool{}
	for _, n := range e.idx.m {
		inIndex[n] = true
	}
	for _, n := range e.idx.ovf {
		inIndex[n] = true
	}
	w.U(uint64(len(s.nodeList)))
	for _, n := range s.nodeList {
		w.Trace(n.key.trace)
		w.Span(n.key.span)
		w.Flag(inIndex[n])
		w.Str(n.rollout)
		w.Str(n.below.id)
		w.Flag(n.below.conflict)
		w.U(uint64(n.fifoSeq))
		w.U(uint64(n.state))
		w.U(uint64(n.how))
		w.Flag(n.job)
		w.Flag(n.settled)
		w.Flag(n.waiting)
		w.Flag(n.late)
		w.Flag(n.removed)
		w.Flag(n.root)
		w.I(int64(n.nWait))
		w.Str(n.peerSvc)
		oi, ook := s.origins[n.org]
		w.Ref(oi, ook && n.org != nil)
	}
	s.writeNodeLinks()
}

func (d *restorer) readNodes() error {
	r := d.r
	d.nodes = make([]*node, r.Count())
	for i := range d.nodes {
		n := &node{key: spanKey{trace: r.Trace(), span: r.Span()}}
		in := r.Flag()
		n.rollout, n.below.id, n.below.conflict = r.Str(), r.Str(), r.Flag()
		n.fifoSeq, n.state, n.how = uint32(r.U()), nodeState(r.U()), how(r.U())
		n.job, n.settled, n.waiting, n.late, n.removed, n.root = r.Flag(), r.Flag(), r.Flag(), r.Flag(), r.Flag(), r.Flag()
		n.nWait, n.peerSvc = int32(r.I()), r.Str()
		if oi := r.Ref(len(d.origins)); oi >= 0 {
			n.org = d.origins[oi]
		}
		d.nodes[i] = n
		if in {
			d.indexed = append(d.indexed, n)
		}
		if r.Err() != nil {
			return r.Err()
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
	w := s.w
	for _, n := range s.nodeList {
		pi, pok := s.nodes[n.parent]
		w.Ref(pi, pok && n.parent != nil)
		w.U(uint64(len(n.waiters)))
		w.Flag(n.waiters != nil)
		for _, c := range n.waiters {
			w.U(uint64(s.nodes[c]))
		}
	}
}

func (d *restorer) readNodeLinks() error {
	r := d.r
	for _, n := range d.nodes {
		if pi := r.Ref(len(d.nodes)); pi >= 0 {
			n.parent = d.nodes[pi]
		}
		k, notNil := r.Count(), r.Flag()
		if notNil {
			n.waiters = make([]*node, k)
			for j := range n.waiters {
				n.waiters[j] = d.nodes[r.Index(len(d.nodes))]
			}
		}
		if r.Err() != nil {
			return r.Err()
		}
	}
	return nil
}

// writeNodeRefs writes a list of nodes as their numbers.
func (s *snapshotter) writeNodeRefs(ns []*node) {
	s.w.U(uint64(len(ns)))
	for _, n := range ns {
		s.w.U(uint64(s.nodes[n]))
	}
}

// readNodeRefs reads a list writeNodeRefs wrote: never nil.
func (d *restorer) readNodeRefs() []*node {
	ns := make([]*node, d.r.Count())
	for j := range ns {
		ns[j] = d.nodes[d.r.Index(len(d.nodes))]
	}
	return ns
}
