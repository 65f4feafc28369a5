// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package dedup // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/dedup"

import "hash/maphash"

// keySet is the window's set of written keys: the last capacity keys
// added, the oldest forgotten first. The keys sit in an open-addressing
// table (linear probing, at most half full, a key without a span id as the
// empty slot) and, in the order they were added, in a ring. At the
// window's default size the table is far larger than the caches, so each
// access is a cache miss: touch lets a push's misses overlap, and a
// removal shifts the keys after it back instead of leaving a tombstone.
// Against the Go map it replaced: 31% less time per span in
// BenchmarkWindow, 24.7 MiB instead of 33.3 at the default size
// (bench/RESULTS.md, 2026-12-03). It is not safe for concurrent use.
type keySet struct {
	seed     maphash.Seed // random per set: span ids are the client's
	slots    []Key        // a power of two long
	mask     uint64
	n        int
	capacity int
	order    []Key // ring of the keys in the order they were added
	next     int   // the oldest in order, once it is full
	touched  byte  // touch's loads land here, so that they are made
}

// minSlots is the table's first length: growing it costs a pass over it.
const minSlots = 1 << 10

func newKeySet(capacity int) *keySet {
	return &keySet{seed: maphash.MakeSeed(), capacity: max(1, capacity)}
}

// unset reports whether k is the empty slot: a span without a span id,
// which is never deduplicated and so never added.
func unset(k Key) bool { return [8]byte(k[:8]) == [8]byte{} }

func (s *keySet) home(k Key) uint64 { return maphash.Comparable(s.seed, k) & s.mask }

// has reports whether k was added and not forgotten since.
func (s *keySet) has(k Key) bool {
	_, ok := s.find(k)
	return ok
}

// find is k's slot.
func (s *keySet) find(k Key) (uint64, bool) {
	if s.n == 0 || unset(k) {
		return 0, false
	}
	for i := s.home(k); ; i = (i + 1) & s.mask {
		switch {
		case s.slots[i] == k:
			return i, true
		case unset(s.slots[i]):
			return 0, false
		}
	}
}

// touch reads the home slot of each of keys, and of the next n keys to
// be forgotten, one after the other: loads that do not wait for each
// other, so that the cache misses of a push's lookups and adds overlap
// instead of coming one at a time (the table is far larger than the
// caches).
func (s *keySet) touch(keys []Key, n int) {
	if s.n == 0 {
		return
	}
	var acc byte
	for _, k := range keys {
		acc ^= s.slots[s.home(k)][0]
	}
	if len(s.order) == s.capacity {
		for i, j := 0, s.next; i < n; i, j = i+1, j+1 {
			if j == s.capacity {
				j = 0
			}
			acc ^= s.slots[s.home(s.order[j])][0]
		}
	}
	s.touched = acc
}

// add adds k, the newest key, unless it is present (then nothing
// changes); once the set holds capacity keys the oldest is forgotten. A key
// without a span id is not added.
func (s *keySet) add(k Key) {
	if unset(k) || s.has(k) {
		return
	}
	if len(s.order) < s.capacity {
		s.order = append(s.order, k)
	} else {
		s.remove(s.order[s.next])
		s.order[s.next] = k
		s.next = (s.next + 1) % s.capacity
	}
	s.insert(k)
}

// insert puts k, which is not in the table, in its first free slot.
func (s *keySet) insert(k Key) {
	if 2*(s.n+1) > len(s.slots) {
		s.grow()
	}
	i := s.home(k)
	for !unset(s.slots[i]) {
		i = (i + 1) & s.mask
	}
	s.slots[i] = k
	s.n++
}

// remove takes k out of the table, if it is there, and moves back each key
// after it in its run that may take its slot (Knuth's algorithm R), so that
// no lookup ends early at the hole.
func (s *keySet) remove(k Key) {
	i, ok := s.find(k)
	if !ok {
		return
	}
	for j := (i + 1) & s.mask; !unset(s.slots[j]); j = (j + 1) & s.mask {
		// The key at j may fill the hole at i when i is on its way from its
		// home to j: no farther from j than its home is.
		if (j-s.home(s.slots[j]))&s.mask >= (j-i)&s.mask {
			s.slots[i] = s.slots[j]
			i = j
		}
	}
	s.slots[i] = Key{}
	s.n--
}

// grow doubles the table, which insert keeps at most half full; the first
// is minSlots long, or shorter for a small capacity.
func (s *keySet) grow() {
	old := s.slots
	n := 2 * len(old)
	if n == 0 {
		for n = 8; n < minSlots && n < 2*s.capacity; n *= 2 {
		}
	}
	s.slots, s.mask, s.n = make([]Key, n), uint64(n-1), 0
	for _, k := range old {
		if !unset(k) {
			s.insert(k)
		}
	}
}
