// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package rollout // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/rollout"

import (
	"encoding/binary"
	"math/bits"
	"math/rand/v2"
)

// Hasher hashes span keys for the index with a secret per-process seed (so
// a sender cannot aim collisions). It reads only its seed, set at creation,
// so the processor hashes a batch's keys before its lock.
type Hasher struct{ seed [4]uint64 }

func newHasher() Hasher {
	return Hasher{seed: [4]uint64{rand.Uint64(), rand.Uint64(), rand.Uint64(), rand.Uint64() | 1}}
}

// Hash is a keyed mix of the key's three words (the multiply-fold of
// wyhash).
func (x Hasher) Hash(k Key) uint64 {
	a := binary.LittleEndian.Uint64(k.Trace[:8]) ^ x.seed[0]
	b := binary.LittleEndian.Uint64(k.Trace[8:]) ^ x.seed[1]
	c := binary.LittleEndian.Uint64(k.Span[:]) ^ x.seed[2]
	return fold(fold(a, b)^c, x.seed[3])
}

func fold(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

// index maps span keys to nodes. Its table holds only the 64-bit hashes,
// which it compares far more cheaply than 24-byte keys. A key whose hash
// another key already holds (about never) lives in an overflow map.
type index struct {
	Hasher
	m   table
	ovf map[Key]*Node
	// last is where the last lookup that missed ended, for the put that
	// follows it (lastHash): a span's entry costs one probe sequence.
	last     int
	lastHash uint64
	lastOK   bool
}

func newIndex() index {
	return index{Hasher: newHasher(), m: newTable(), ovf: make(map[Key]*Node)}
}

// get returns the node of k, whose hash is h, or nil; and whether another
// key holds h (for put).
func (x *index) get(h uint64, k Key) (*Node, bool) {
	i, found := x.m.find(h)
	if found {
		if n := x.m.slots[i].n; n.key == k {
			return n, true
		}
	} else {
		x.last, x.lastHash, x.lastOK = i, h, true
	}
	if len(x.ovf) > 0 {
		if o := x.ovf[k]; o != nil {
			return o, true
		}
	}
	return nil, found
}

// put indexes n under its key, whose hash is h; the key is not indexed, and
// taken is what get said about h.
func (x *index) put(h uint64, n *Node, taken bool) {
	n.hash = h
	if taken {
		x.ovf[n.key] = n
		return
	}
	if x.lastOK && x.lastHash == h {
		x.lastOK = false
		x.m.putAt(x.last, h, n)
		return
	}
	x.lastOK = false // another hash's slot may be the one remembered
	x.m.put(h, n)
}

// del removes n, which is indexed.
func (x *index) del(n *Node) {
	x.lastOK = false
	h := n.hash
	if len(x.ovf) == 0 || x.m.get(h) == n {
		x.m.del(h)
		return
	}
	delete(x.ovf, n.key)
}

func (x *index) len() int { return x.m.n + len(x.ovf) }

// fifoEntry queues nodes that may leave the index (left, or placeholders).
type fifoEntry struct {
	n   *Node
	at  int64
	seq uint32
}

// nodeQueue is a FIFO of index nodes in the order they became removable.
type nodeQueue struct {
	buf  []fifoEntry
	head int
}

func (q *nodeQueue) push(n *Node, at int64) {
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

// trimIndex drops index entries of spans that left (and parents that never
// arrived) once they are older than wait, or while the index holds more
// than max_pending_spans such entries.
func (c *Core) trimIndex() {
	ttlStart := c.dl.indexKeptAfter(c.now)
	for budget := c.fifo.len(); budget > 0 && c.fifo.len() > 0; budget-- {
		f := c.fifo.peek()
		over := c.idx.len()-len(c.heap) > c.cfg.MaxPendingSpans
		if f.at > ttlStart && !over {
			return
		}
		c.fifo.pop()
		n := f.n
		if f.seq != n.fifoSeq || n.state == stPending || n.removed {
			continue
		}
		if n.wait != nil && n.wait.nWait > 0 {
			c.fifo.push(n, c.now)
			continue
		}
		// A node not removed is the one its key maps to: a key gets a new
		// node only after its old one was removed.
		n.removed = true
		delete(c.leakPending, n)
		c.idx.del(n)
	}
}
