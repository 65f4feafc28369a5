// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

// Package bounded provides Table, a map that forgets its oldest entries
// beyond a capacity. The gym processor keeps its per-process, per-run, job
// and root tables in it, and the gymspans exporter its retry and rollout
// tables: state that must not grow with the length of a run.
package bounded // import "github.com/otelcol-gym/otelcol-gym/internal/bounded"

// maxPinnedSkips bounds how many pinned entries one eviction steps over
// before it lets the table grow past its capacity instead: a table whose
// entries are all pinned must not cost a walk of the whole table per Put.
const maxPinnedSkips = 64

// Table maps K to V and holds at most its capacity of unpinned entries.
// Entries are kept in order, oldest first: the order they were first put,
// unless Touch moves one to the newest end (least recently used order).
// When a new key would take the table past its capacity, the oldest entry
// that is not pinned is forgotten. It is not safe for concurrent use.
type Table[K comparable, V any] struct {
	capacity int
	m        map[K]*entry[K, V]
	oldest   *entry[K, V]
	newest   *entry[K, V]
	pinned   func(V) bool
	free     *entry[K, V] // one recycled entry
}

type entry[K comparable, V any] struct {
	k          K
	v          V
	prev, next *entry[K, V] // prev is older, next newer
}

// New returns a table of the given capacity (at least 1).
func New[K comparable, V any](capacity int) *Table[K, V] {
	return &Table[K, V]{capacity: max(1, capacity), m: make(map[K]*entry[K, V])}
}

// Pin sets the rule of entries that are never forgotten (an entry something
// still points at); nil pins none.
func (t *Table[K, V]) Pin(pinned func(V) bool) { t.pinned = pinned }

// Len is the number of entries.
func (t *Table[K, V]) Len() int { return len(t.m) }

// Get returns the value of k.
func (t *Table[K, V]) Get(k K) (V, bool) {
	if e := t.m[k]; e != nil {
		return e.v, true
	}
	var zero V
	return zero, false
}

// Put sets the value of k. A key already present keeps its place in the
// order; a new one becomes the newest, and the oldest unpinned entries are
// forgotten while the table is over its capacity.
func (t *Table[K, V]) Put(k K, v V) {
	if e := t.m[k]; e != nil {
		e.v = v
		return
	}
	e := t.free
	if e != nil {
		t.free = nil
	} else {
		e = new(entry[K, V])
	}
	e.k, e.v = k, v
	t.m[k] = e
	t.link(e)
	t.evict()
}

// Append puts a key not present as the newest entry without forgetting any:
// it rebuilds a table in the order it had (a checkpoint's restore).
func (t *Table[K, V]) Append(k K, v V) {
	if e := t.m[k]; e != nil {
		e.v = v
		return
	}
	e := &entry[K, V]{k: k, v: v}
	t.m[k] = e
	t.link(e)
}

// GetTouch returns the value of k and makes it the newest entry: Get and
// Touch in one lookup.
func (t *Table[K, V]) GetTouch(k K) (V, bool) {
	e := t.m[k]
	if e == nil {
		var zero V
		return zero, false
	}
	if e != t.newest {
		t.unlink(e)
		t.link(e)
	}
	return e.v, true
}

// Touch makes k the newest entry.
func (t *Table[K, V]) Touch(k K) {
	e := t.m[k]
	if e == nil || e == t.newest {
		return
	}
	t.unlink(e)
	t.link(e)
}

// Delete forgets k.
func (t *Table[K, V]) Delete(k K) {
	e := t.m[k]
	if e == nil {
		return
	}
	delete(t.m, k)
	t.unlink(e)
	t.recycle(e)
}

// Oldest returns the oldest entry.
func (t *Table[K, V]) Oldest() (K, V, bool) {
	if t.oldest == nil {
		var k K
		var v V
		return k, v, false
	}
	return t.oldest.k, t.oldest.v, true
}

// Range calls f for every entry, oldest first, until f returns false. f
// must not change the table.
func (t *Table[K, V]) Range(f func(K, V) bool) {
	for e := t.oldest; e != nil; e = e.next {
		if !f(e.k, e.v) {
			return
		}
	}
}

func (t *Table[K, V]) evict() {
	for len(t.m) > t.capacity {
		e, skipped := t.oldest, 0
		for e != nil && t.pinned != nil && t.pinned(e.v) {
			if skipped++; skipped > maxPinnedSkips {
				return
			}
			e = e.next
		}
		if e == nil {
			return
		}
		delete(t.m, e.k)
		t.unlink(e)
		t.recycle(e)
	}
}

func (t *Table[K, V]) link(e *entry[K, V]) {
	e.prev, e.next = t.newest, nil
	if t.newest != nil {
		t.newest.next = e
	} else {
		t.oldest = e
	}
	t.newest = e
}

func (t *Table[K, V]) unlink(e *entry[K, V]) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		t.oldest = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		t.newest = e.prev
	}
	e.prev, e.next = nil, nil
}

func (t *Table[K, V]) recycle(e *entry[K, V]) {
	*e = entry[K, V]{}
	t.free = e
}
