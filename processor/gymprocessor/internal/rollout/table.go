// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package rollout // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/rollout"

// table maps the index's 64-bit key hashes to nodes: open addressing with
// linear probing and backward-shift deletion. The index churns in FIFO
// order (every span enters once and is dropped wait after it left), which
// fills a general map with tombstones to probe past and rehash; here a
// deletion leaves none, and a lookup that misses ends at the empty slot an
// insertion then takes, so a span's entry costs one probe sequence.
type table struct {
	slots []tslot // a power of two
	n     int
}

type tslot struct {
	h uint64
	n *Node // nil: empty
}

const (
	minTableSlots = 1 << 10
	// A table is grown at 3/4 full: linear probing's sequences stay short.
	tableLoadNum, tableLoadDen = 3, 4
)

func newTable() table { return table{slots: make([]tslot, minTableSlots)} }

func (t *table) mask() uint64 { return uint64(len(t.slots) - 1) }

// find returns the slot of h, or the empty slot that ends its probe
// sequence (where h would go), and whether h is there.
func (t *table) find(h uint64) (int, bool) {
	m := t.mask()
	for i := h & m; ; i = (i + 1) & m {
		s := &t.slots[i]
		if s.n == nil {
			return int(i), false
		}
		if s.h == h {
			return int(i), true
		}
	}
}

// get returns the node of h, or nil.
func (t *table) get(h uint64) *Node {
	if i, ok := t.find(h); ok {
		return t.slots[i].n
	}
	return nil
}

// putAt puts n under h into slot i, which find returned for h (not there).
func (t *table) putAt(i int, h uint64, n *Node) {
	t.slots[i] = tslot{h: h, n: n}
	t.n++
	if t.n*tableLoadDen > len(t.slots)*tableLoadNum {
		t.resize(2 * len(t.slots))
	}
}

// put puts n under h, which is not there.
func (t *table) put(h uint64, n *Node) {
	i, _ := t.find(h)
	t.putAt(i, h, n)
}

// del removes h, if there, shifting back the entries of its probe
// sequence that follow it so that no lookup ever meets a gap too early.
func (t *table) del(h uint64) {
	i, ok := t.find(h)
	if !ok {
		return
	}
	m := t.mask()
	for j := (uint64(i) + 1) & m; ; j = (j + 1) & m {
		s := t.slots[j]
		if s.n == nil {
			break
		}
		// s may move back to i unless its home slot lies cyclically in (i, j].
		home := s.h & m
		if (j > uint64(i) && (home <= uint64(i) || home > j)) || (j < uint64(i) && home <= uint64(i) && home > j) {
			t.slots[i] = s
			i = int(j)
		}
	}
	t.slots[i] = tslot{}
	t.n--
}

func (t *table) resize(size int) {
	old := t.slots
	t.slots = make([]tslot, size)
	for _, s := range old {
		if s.n != nil {
			i, _ := t.find(s.h)
			t.slots[i] = s
		}
	}
}

// each calls f on every node, in slot order.
func (t *table) each(f func(*Node)) {
	for _, s := range t.slots {
		if s.n != nil {
			f(s.n)
		}
	}
}
