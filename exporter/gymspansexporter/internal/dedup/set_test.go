// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package dedup

import (
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// fifoModel is what a keySet must behave as: the last capacity distinct
// keys added, by a slice and a map.
type fifoModel struct {
	capacity int
	order    []Key
	in       map[Key]bool
}

func (m *fifoModel) add(k Key) {
	if unset(k) || m.in[k] {
		return
	}
	m.order, m.in[k] = append(m.order, k), true
	if len(m.order) > m.capacity {
		delete(m.in, m.order[0])
		m.order = m.order[1:]
	}
}

// checkSet compares s with m over every key of universe, and checks the
// table's own invariants: as many keys as the model, at most half full,
// each reachable from its home without an empty slot between.
func checkSet(t *testing.T, s *keySet, m *fifoModel, universe []Key) {
	t.Helper()
	for _, k := range universe {
		require.Equal(t, m.in[k], s.has(k), "key %x", k)
	}
	require.Equal(t, len(m.in), s.n)
	require.LessOrEqual(t, 2*s.n, len(s.slots))
	for i, k := range s.slots {
		if unset(k) {
			continue
		}
		for j := s.home(k); j != uint64(i); j = (j + 1) & s.mask {
			require.False(t, unset(s.slots[j]), "an empty slot between key %x's home and its slot", k)
		}
	}
}

func key(span, trace uint64) Key {
	var k Key
	binary.LittleEndian.PutUint64(k[:8], span)
	binary.LittleEndian.PutUint64(k[8:], trace)
	return k
}

// TestKeySetIsTheLastKeysAdded: random adds from a small universe (keys
// added again, keys without a span id), small capacities so that the
// oldest are forgotten often, the table wraps round and removals shift
// runs back: the set holds exactly the last capacity distinct keys added.
func TestKeySetIsTheLastKeysAdded(t *testing.T) {
	for _, capacity := range []int{1, 2, 3, 5, 8, 13, 100, 700} {
		rng := rand.New(rand.NewPCG(uint64(capacity), 7))
		universe := []Key{key(0, 1), {}}
		for len(universe) < 3*capacity+10 {
			universe = append(universe, key(rng.Uint64()|1, rng.Uint64()))
		}
		s, m := newKeySet(capacity), &fifoModel{capacity: capacity, in: map[Key]bool{}}
		for op := range 20 * len(universe) {
			k := universe[rng.IntN(len(universe))]
			s.add(k)
			m.add(k)
			if op%max(1, capacity/4) == 0 {
				checkSet(t, s, m, universe)
			}
		}
		checkSet(t, s, m, universe)
	}
}

// TestKeySetGrowsToTwiceItsCapacity: the table ends at the power of two at
// or above twice the capacity, whatever was added.
func TestKeySetGrowsToTwiceItsCapacity(t *testing.T) {
	s := newKeySet(3000)
	for i := range uint64(10000) {
		s.add(key(i+1, i))
	}
	require.Len(t, s.slots, 8192)
	require.Equal(t, 3000, s.n)
	require.True(t, s.has(key(10000, 9999)))
	require.False(t, s.has(key(7000, 6999)), "the oldest forgotten")
	require.True(t, s.has(key(7001, 7000)))
}

// FuzzKeySet: any sequence of adds (two bytes a key: span id, trace) into a
// set of capacity 1–16 behaves as the model.
func FuzzKeySet(f *testing.F) {
	f.Add(uint8(3), []byte{1, 1, 2, 1, 3, 1, 1, 1, 4, 2, 0, 5})
	f.Add(uint8(1), []byte{1, 0, 1, 0, 2, 0})
	f.Fuzz(func(t *testing.T, c uint8, ops []byte) {
		capacity := int(c%16) + 1
		s, m := newKeySet(capacity), &fifoModel{capacity: capacity, in: map[Key]bool{}}
		var universe []Key
		for i := 0; i+1 < len(ops); i += 2 {
			k := key(uint64(ops[i]), uint64(ops[i+1]))
			if !slices.Contains(universe, k) {
				universe = append(universe, k)
			}
			s.add(k)
			m.add(k)
		}
		checkSet(t, s, m, universe)
	})
}
