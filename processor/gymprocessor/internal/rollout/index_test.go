// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package rollout

import (
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// TestSpanIndexMatchesMap drives spanIndex and a plain map with the same
// random puts, gets and deletes, with the hash either real or degenerate
// (every key the same hash, so every second key goes to the overflow map).
func TestSpanIndexMatchesMap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		x := newIndex()
		if rapid.Bool().Draw(t, "collide") {
			x.seed[3] = 0 // fold(_, 0) == 0: all keys collide
		}
		model := map[Key]*Node{}
		key := func(label string) Key {
			var k Key
			k.Trace[0] = byte(rapid.IntRange(0, 2).Draw(t, label+"T"))
			k.Span[0] = byte(rapid.IntRange(0, 5).Draw(t, label+"S"))
			return k
		}
		for i, n := 0, rapid.IntRange(1, 200).Draw(t, "ops"); i < n; i++ {
			k := key("k")
			switch rapid.IntRange(0, 2).Draw(t, "op") {
			case 0:
				if model[k] == nil {
					nd := &Node{key: k}
					got, taken := x.get(x.Hash(k), k)
					require.Nil(t, got)
					x.put(x.Hash(k), nd, taken)
					model[k] = nd
				}
			case 1:
				if nd := model[k]; nd != nil {
					x.del(nd)
					delete(model, k)
				}
			}
			got, _ := x.get(x.Hash(k), k)
			require.Same(t, model[k], got, "get %v", k)
			require.Equal(t, len(model), x.len())
		}
		for k, nd := range model {
			got, _ := x.get(x.Hash(k), k)
			require.Same(t, nd, got)
		}
	})
}

func TestSpanIndexHashIsKeyed(t *testing.T) {
	a, b := newIndex(), newIndex()
	k := Key{Span: [8]byte{1}}
	require.Equal(t, a.Hash(k), a.Hash(k))
	require.NotEqual(t, a.Hash(k), b.Hash(k), "two processes share no seed")
	k2 := k
	k2.Trace[15] = 1
	require.NotEqual(t, a.Hash(k), a.Hash(k2))
}

// The table against a map: random puts, gets and deletes over few slots
// (hashes that collide in their home slot and wrap around the end), so
// that backward-shift deletion meets every case.
func TestTableMatchesMap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		tb := table{slots: make([]tslot, 8)}
		model := map[uint64]*Node{}
		for i, n := 0, rapid.IntRange(1, 300).Draw(t, "ops"); i < n; i++ {
			h := uint64(rapid.IntRange(0, 40).Draw(t, "h"))
			if rapid.Bool().Draw(t, "home") {
				h = h<<3 | 7 // home slot 7: sequences that wrap
			}
			switch rapid.IntRange(0, 2).Draw(t, "op") {
			case 0:
				if model[h] == nil {
					nd := &Node{hash: h}
					tb.put(h, nd)
					model[h] = nd
				}
			case 1:
				tb.del(h)
				delete(model, h)
			}
			require.Same(t, model[h], tb.get(h), "get %d", h)
			require.Equal(t, len(model), tb.n)
		}
		for h, nd := range model {
			require.Same(t, nd, tb.get(h))
		}
		seen := 0
		tb.each(func(*Node) { seen++ })
		require.Equal(t, len(model), seen)
	})
}
