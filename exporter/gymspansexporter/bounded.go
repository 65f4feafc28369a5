// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter"

// boundedTable is a map that forgets its oldest keys beyond a capacity. The
// keys are kept in a ring in insertion order; the map holds each key's value
// and its slot in the ring, so a slot whose key was deleted (or deleted and
// put again, in a newer slot) is recognized when the ring comes round to it.
// Without pointers in K and V, neither the map nor the ring is scanned by
// the garbage collector: the deduplication window keeps half a million keys
// in one.
type boundedTable[K comparable, V any] struct {
	cap   int
	m     map[K]boundedEntry[V]
	order []K // ring of insertion order
	next  int // the oldest slot, once the ring is full
}

type boundedEntry[V any] struct {
	v    V
	slot int32
}

func newBoundedTable[K comparable, V any](capacity int) *boundedTable[K, V] {
	return &boundedTable[K, V]{cap: max(1, capacity), m: make(map[K]boundedEntry[V])}
}

func (t *boundedTable[K, V]) get(k K) (V, bool) {
	e, ok := t.m[k]
	return e.v, ok
}

func (t *boundedTable[K, V]) len() int { return len(t.m) }

func (t *boundedTable[K, V]) put(k K, v V) {
	if e, ok := t.m[k]; ok {
		t.m[k] = boundedEntry[V]{v: v, slot: e.slot}
		return
	}
	slot := len(t.order)
	if slot < t.cap {
		t.order = append(t.order, k)
	} else {
		slot = t.next
		old := t.order[slot]
		if e, ok := t.m[old]; ok && int(e.slot) == slot {
			delete(t.m, old)
		}
		t.order[slot] = k
		t.next = (t.next + 1) % t.cap
	}
	t.m[k] = boundedEntry[V]{v: v, slot: int32(slot)}
}

// delete forgets k; its ring slot ages out without effect.
func (t *boundedTable[K, V]) delete(k K) { delete(t.m, k) }
