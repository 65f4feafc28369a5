// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor

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
		x := newSpanIndex()
		if rapid.Bool().Draw(t, "collide") {
			x.seed[3] = 0 // fold(_, 0) == 0: all keys collide
		}
		model := map[spanKey]*node{}
		key := func(label string) spanKey {
			var k spanKey
			k.trace[0] = byte(rapid.IntRange(0, 2).Draw(t, label+"T"))
			k.span[0] = byte(rapid.IntRange(0, 5).Draw(t, label+"S"))
			return k
		}
		for i, n := 0, rapid.IntRange(1, 200).Draw(t, "ops"); i < n; i++ {
			k := key("k")
			switch rapid.IntRange(0, 2).Draw(t, "op") {
			case 0:
				if model[k] == nil {
					nd := &node{key: k}
					got, taken := x.get(x.hash(k), k)
					require.Nil(t, got)
					x.put(x.hash(k), nd, taken)
					model[k] = nd
				}
			case 1:
				if nd := model[k]; nd != nil {
					x.del(nd)
					delete(model, k)
				}
			}
			got, _ := x.get(x.hash(k), k)
			require.Same(t, model[k], got, "get %v", k)
			require.Equal(t, len(model), x.len())
		}
		for k, nd := range model {
			got, _ := x.get(x.hash(k), k)
			require.Same(t, nd, got)
		}
	})
}

func TestSpanIndexHashIsKeyed(t *testing.T) {
	a, b := newSpanIndex(), newSpanIndex()
	k := spanKey{span: [8]byte{1}}
	require.Equal(t, a.hash(k), a.hash(k))
	require.NotEqual(t, a.hash(k), b.hash(k), "two processes share no seed")
	k2 := k
	k2.trace[15] = 1
	require.NotEqual(t, a.hash(k), a.hash(k2))
}
