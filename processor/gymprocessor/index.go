// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import (
	"encoding/binary"
	"math/bits"
	"math/rand/v2"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// spanKey identifies a span by its original trace id and span id.
type spanKey struct {
	trace pcommon.TraceID
	span  pcommon.SpanID
}

type nodeState uint8

const (
	stAbsent  nodeState = iota // placeholder: a child named it as parent; it has not arrived
	stPending                  // arrived, held
	stEmitted                  // arrived, left
)

// How a span got its rollout.
type how uint8

const (
	howUndecided how = iota
	howDirect
	howDownward
	howUpward
	howNone // decided to be in no rollout (job span, ambiguous, released as it stood)
)

// summary is the lattice empty < one rollout < conflict of the rollouts found
// below a span (an upward decision).
type summary struct {
	id       string
	conflict bool
}

func (s summary) empty() bool { return s.id == "" && !s.conflict }

// merge folds c into s and reports whether s changed.
func (s *summary) merge(c summary) bool {
	switch {
	case c.empty() || s.conflict:
		return false
	case c.conflict:
		*s = summary{conflict: true}
		return true
	case s.id == "":
		s.id = c.id
		return true
	case s.id == c.id:
		return false
	default:
		*s = summary{conflict: true}
		return true
	}
}

// node is one index entry: a span that arrived (pending or emitted) or a
// placeholder for a parent named by a child. An emitted node keeps only ids,
// its rollout and links, so late children can still be resolved downward.
type node struct {
	key      spanKey
	parent   *node // the parent's node (placeholder if it has not arrived); nil if none
	held     *heldSpan
	rollout  string  // "" when in no rollout (yet)
	below    summary // rollouts of the spans below, nearest decided ones
	waiters  []*node // children held while this node is undecided
	fifoSeq  uint32
	state    nodeState
	how      how
	job      bool
	settled  bool // its settle deadline has passed
	waiting  bool // registered in parent.waiters
	late     bool // a child left while this node was absent
	removed  bool // dropped from the index
	root     bool // decided to be its rollout's root (finalizeRoot)
	nWait    int32
	peerSvc  string  // service of the first SERVER child seen
	org      *origin // resource and scope of an arrived INTERNAL span (a possible embedder parent)
	end      int64   // the span's end, once it arrived (unix ns)
	reqStart int64   // a request waiting for its local parent's verdict: its start (leak.go); else 0
}

// contribution is what this node tells its parent about the rollouts below:
// its own rollout when it has one, else what is below it.
func (n *node) contribution() summary {
	if n.rollout != "" {
		return summary{id: n.rollout}
	}
	return n.below
}

// fifoEntry queues nodes that may leave the index (emitted or placeholder).
type fifoEntry struct {
	n   *node
	at  int64
	seq uint32
}

// nodeQueue is a FIFO of index nodes in the order they became removable.
type nodeQueue struct {
	buf  []fifoEntry
	head int
}

func (q *nodeQueue) push(n *node, at int64) {
	n.fifoSeq++
	q.buf = append(q.buf, fifoEntry{n: n, at: at, seq: n.fifoSeq})
}

func (q *nodeQueue) len() int { return len(q.buf) - q.head }

func (q *nodeQueue) peek() fifoEntry { return q.buf[q.head] }

func (q *nodeQueue) pop() {
	q.buf[q.head] = fifoEntry{}
	q.head++
	if q.head > 1024 && q.head*2 > len(q.buf) {
		n := copy(q.buf, q.buf[q.head:])
		clear(q.buf[n:])
		q.buf = q.buf[:n]
		q.head = 0
	}
}

// spanIndex maps span keys to index nodes. A key is hashed with a secret
// per-process seed (so a sender cannot aim collisions) by prepare, before
// the lock; the map under the lock holds only the 64-bit hashes, which it
// hashes and compares far more cheaply than 24-byte keys. A key whose hash
// another key already holds (about never) lives in an overflow map.
type spanIndex struct {
	seed [4]uint64
	m    map[uint64]*node
	ovf  map[spanKey]*node
}

func newSpanIndex() spanIndex {
	return spanIndex{
		seed: [4]uint64{rand.Uint64(), rand.Uint64(), rand.Uint64(), rand.Uint64() | 1},
		m:    make(map[uint64]*node),
		ovf:  make(map[spanKey]*node),
	}
}

// hash is a keyed mix of the key's three words (the multiply-fold of
// wyhash). It reads only the seed, set at creation: safe without the lock.
func (x *spanIndex) hash(k spanKey) uint64 {
	a := binary.LittleEndian.Uint64(k.trace[:8]) ^ x.seed[0]
	b := binary.LittleEndian.Uint64(k.trace[8:]) ^ x.seed[1]
	c := binary.LittleEndian.Uint64(k.span[:]) ^ x.seed[2]
	return fold(fold(a, b)^c, x.seed[3])
}

func fold(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

// get returns the node of k, whose hash is h, or nil; and whether another
// key holds h (for put).
func (x *spanIndex) get(h uint64, k spanKey) (*node, bool) {
	n := x.m[h]
	if n != nil && n.key == k {
		return n, true
	}
	if len(x.ovf) > 0 {
		if o := x.ovf[k]; o != nil {
			return o, true
		}
	}
	return nil, n != nil
}

// put indexes n under its key, whose hash is h; the key is not indexed, and
// taken is what get said about h.
func (x *spanIndex) put(h uint64, n *node, taken bool) {
	if taken {
		x.ovf[n.key] = n
		return
	}
	x.m[h] = n
}

// del removes n, which is indexed.
func (x *spanIndex) del(n *node) {
	h := x.hash(n.key)
	if len(x.ovf) == 0 || x.m[h] == n {
		delete(x.m, h)
		return
	}
	delete(x.ovf, n.key)
}

func (x *spanIndex) len() int { return len(x.m) + len(x.ovf) }

// enforceIndexBounds drops index entries of spans that left (and parents
// that never arrived) once they are older than wait, or while the index holds
// more than max_pending_spans such entries.
func (e *engine) enforceIndexBounds() {
	ttlStart := e.dl.indexKeptAfter(e.now)
	for budget := e.fifo.len(); budget > 0 && e.fifo.len() > 0; budget-- {
		f := e.fifo.peek()
		over := e.idx.len()-len(e.heap) > e.indexCap
		if f.at > ttlStart && !over {
			return
		}
		e.fifo.pop()
		n := f.n
		if f.seq != n.fifoSeq || n.state == stPending || n.removed {
			continue
		}
		if n.nWait > 0 {
			e.fifo.push(n, e.now)
			continue
		}
		// A node not removed is the one its key maps to: a key gets a new
		// node only after its old one was removed.
		n.removed = true
		delete(e.leakPending, n)
		e.idx.del(n)
	}
}
