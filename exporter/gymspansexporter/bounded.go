// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter"

// boundedTable is a map that forgets its oldest keys beyond a capacity.
type boundedTable[K comparable, V any] struct {
	cap   int
	m     map[K]boundedEntry[V]
	order []boundedSlot[K] // ring of insertion order
	next  int
	gen   uint64
}

type boundedEntry[V any] struct {
	v   V
	gen uint64
}

type boundedSlot[K comparable] struct {
	k   K
	gen uint64
}

func newBoundedTable[K comparable, V any](capacity int) *boundedTable[K, V] {
	return &boundedTable[K, V]{cap: capacity, m: make(map[K]boundedEntry[V])}
}

func (t *boundedTable[K, V]) get(k K) (V, bool) {
	e, ok := t.m[k]
	return e.v, ok
}

func (t *boundedTable[K, V]) len() int { return len(t.m) }

func (t *boundedTable[K, V]) put(k K, v V) {
	if e, ok := t.m[k]; ok {
		t.m[k] = boundedEntry[V]{v: v, gen: e.gen}
		return
	}
	t.gen++
	slot := boundedSlot[K]{k: k, gen: t.gen}
	if len(t.order) < t.cap {
		t.order = append(t.order, slot)
	} else {
		old := t.order[t.next]
		if e, ok := t.m[old.k]; ok && e.gen == old.gen {
			delete(t.m, old.k)
		}
		t.order[t.next] = slot
		t.next = (t.next + 1) % t.cap
	}
	t.m[k] = boundedEntry[V]{v: v, gen: t.gen}
}

// delete forgets k; its ring slot ages out without effect.
func (t *boundedTable[K, V]) delete(k K) { delete(t.m, k) }
