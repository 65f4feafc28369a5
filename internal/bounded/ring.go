// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package bounded // import "github.com/otelcol-gym/otelcol-gym/internal/bounded"

// Ring maps K to V and forgets its oldest keys, in the order they were first
// put, beyond a capacity. It is Table without Touch, Pin or Range, for large
// sets of small keys: the keys are kept in a ring of slots and the map holds
// each key's value and its slot, so a slot whose key was deleted (or deleted
// and put again, in a newer slot) is recognized when the ring comes round to
// it. Without pointers in K and V neither the map nor the ring is scanned by
// the garbage collector. It is not safe for concurrent use.
type Ring[K comparable, V any] struct {
	capacity int
	m        map[K]ringEntry[V]
	order    []K // ring of insertion order
	next     int // the oldest slot, once the ring is full
}

type ringEntry[V any] struct {
	v    V
	slot int32
}

// NewRing returns a ring of the given capacity (at least 1, at most 1<<31-1).
func NewRing[K comparable, V any](capacity int) *Ring[K, V] {
	return &Ring[K, V]{capacity: min(max(1, capacity), 1<<31-1), m: make(map[K]ringEntry[V])}
}

// Get returns the value of k.
func (r *Ring[K, V]) Get(k K) (V, bool) {
	e, ok := r.m[k]
	return e.v, ok
}

// Len is the number of keys.
func (r *Ring[K, V]) Len() int { return len(r.m) }

// Put sets the value of k. A key already present keeps its slot; a new one
// takes the oldest slot once the ring is full, and that slot's key, unless it
// was deleted since, is forgotten.
func (r *Ring[K, V]) Put(k K, v V) {
	if e, ok := r.m[k]; ok {
		r.m[k] = ringEntry[V]{v: v, slot: e.slot}
		return
	}
	r.PutNew(k, v)
}

// PutNew puts k, which the caller knows is not present (one map lookup
// fewer than Put). Were it present, it would take a new slot, and its old
// one age out without effect.
func (r *Ring[K, V]) PutNew(k K, v V) {
	slot := len(r.order)
	if slot < r.capacity {
		r.order = append(r.order, k)
	} else {
		slot = r.next
		old := r.order[slot]
		if e, ok := r.m[old]; ok && int(e.slot) == slot {
			delete(r.m, old)
		}
		r.order[slot] = k
		r.next = (r.next + 1) % r.capacity
	}
	r.m[k] = ringEntry[V]{v: v, slot: int32(slot)}
}

// Delete forgets k; its slot ages out without effect.
func (r *Ring[K, V]) Delete(k K) { delete(r.m, k) }
