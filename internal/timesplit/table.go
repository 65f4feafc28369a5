// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package timesplit

import (
	"cmp"
	"hash/maphash"
	"slices"
)

// table is what a Tracker knows of rollouts: those in flight, each in a
// slot of its own, and the last maxDone finished, in a ring. One map finds
// either by id, so a span of a rollout is one lookup whatever the rollout's
// state, and the slot it leads to holds all the rollout's state: an Add
// reads the map's group, the slot and the end of the slot's facts, where a
// map of pointers to list entries to rollouts read twice as many lines, each
// a miss by a rollout's next batch (the exporter's writes went through the
// cache between).
//
// The rollouts in flight least recently added to are let go first (evict):
// each slot has the sequence number of the last Add to it, and evict walks
// the slots in that order as it was when it last sorted them, skipping a
// slot added to, or reused, since (it is newer than every slot not); once
// through, it sorts them again. A sort of n slots follows at least n Adds,
// Finishes or evictions, so a Tracker at its bound pays O(log n) for each.
type table struct {
	seed maphash.Seed // of rolloutIDs
	// ids: a rollout in flight is slots[i] (i >= 0), a finished one
	// done[-i-1].
	ids   map[rolloutID]int32
	slots []slot
	free  []int32 // slots not in use
	seq   uint64  // Adds so far
	done  []doneRollout
	next  int // the oldest of done, once it is full
	order []ordered
	at    int // the next of order to let go
}

// rolloutID is what a Tracker knows a rollout by: a 64-bit keyed hash of
// its Key. Its map then holds and compares 8 bytes (the map's 64-bit fast
// path), and never reads the ids' strings (held apart from the map, and out
// of the cache by the time a rollout's next batch comes: reading them was a
// third of Add). A new rollout shares its id with one of the at most 2^18
// a Tracker knows with a probability below 2^-46 (a run of a billion
// rollouts: below 2^-16); the rollout that does gets a wrong time split or
// none, and no span is touched.
type rolloutID uint64

type slot struct {
	spans    []Span
	id       rolloutID
	used     uint64 // seq of its last Add; 0: the slot is free
	withheld bool
}

type doneRollout struct {
	id rolloutID
	finished
}

type ordered struct {
	slot int32
	used uint64
}

func newTable() table {
	return table{seed: maphash.MakeSeed(), ids: map[rolloutID]int32{}}
}

func (t *table) idOf(k Key) rolloutID {
	return rolloutID(maphash.Comparable(t.seed, k))
}

// find returns the slot of rollout id in flight (i >= 0), or its finished
// record (f), or neither (known is false).
func (t *table) find(id rolloutID) (i int32, f *finished, known bool) {
	i, known = t.ids[id]
	if known && i < 0 {
		return i, &t.done[-i-1].finished, true
	}
	return i, nil, known
}

// open puts rollout id, which is not known, in a slot of its own, the most
// recently added to.
func (t *table) open(id rolloutID) int32 {
	var i int32
	if n := len(t.free); n > 0 {
		i, t.free = t.free[n-1], t.free[:n-1]
	} else {
		i = int32(len(t.slots))
		t.slots = append(t.slots, slot{})
	}
	t.slots[i] = slot{id: id}
	t.ids[id] = i
	t.touch(i)
	return i
}

// touch makes slot i the most recently added to.
func (t *table) touch(i int32) {
	t.seq++
	t.slots[i].used = t.seq
}

// inFlight is the number of rollouts in flight.
func (t *table) inFlight() int { return len(t.slots) - len(t.free) }

// close frees slot i and records its rollout as finished with f; the slot's
// facts are the caller's to let go first.
func (t *table) close(i int32, f finished) {
	id := t.slots[i].id
	t.slots[i] = slot{}
	t.free = append(t.free, i)
	t.finish(id, f)
}

// finish records rollout id, not in flight, as finished with f, forgetting
// the oldest finished one past maxDone.
func (t *table) finish(id rolloutID, f finished) {
	d := len(t.done)
	if d < maxDone {
		t.done = append(t.done, doneRollout{id, f})
	} else {
		d, t.next = t.next, (t.next+1)%maxDone
		// A finished rollout is in done once, where ids says: neither
		// Add nor Finish changes the record of a finished rollout.
		delete(t.ids, t.done[d].id)
		t.done[d] = doneRollout{id, f}
	}
	t.ids[id] = int32(-d - 1)
}

// oldest returns the slot in flight least recently added to; false when
// none is.
func (t *table) oldest() (int32, bool) {
	for {
		if t.at == len(t.order) {
			if t.inFlight() == 0 {
				return 0, false
			}
			t.sortOrder()
		}
		o := t.order[t.at]
		t.at++
		if t.slots[o.slot].used == o.used {
			return o.slot, true
		}
	}
}

// sortOrder lists the slots in flight, least recently added to first.
func (t *table) sortOrder() {
	t.order, t.at = t.order[:0], 0
	for i := range t.slots {
		if u := t.slots[i].used; u != 0 {
			t.order = append(t.order, ordered{int32(i), u})
		}
	}
	slices.SortFunc(t.order, func(a, b ordered) int { return cmp.Compare(a.used, b.used) })
}
