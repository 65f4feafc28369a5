// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package bounded

import (
	"testing"

	"pgregory.net/rapid"
)

// TestRingModel checks Ring (Put, PutNew of an absent key, Delete, Get)
// against a map and a ring of insertion order (what it forgets, and when).
func TestRingModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		capacity := rapid.IntRange(1, 8).Draw(t, "capacity")
		tb := NewRing[int, int](capacity)
		type slot struct{ k, gen int }
		model := map[int]int{} // key → value
		gens := map[int]int{}  // key → the generation of its slot
		var ring []slot        // slots, oldest first (those of deleted keys too)
		gen := 0
		for _, op := range rapid.SliceOfN(rapid.IntRange(0, 3), 1, 60).Draw(t, "ops") {
			k := rapid.IntRange(0, 10).Draw(t, "key")
			if _, ok := model[k]; ok && op == 3 {
				op = 2 // PutNew only of a key that is not present
			}
			switch op {
			case 0, 3: // put, put new
				if _, ok := model[k]; !ok {
					if len(ring) == capacity {
						if old := ring[0]; gens[old.k] == old.gen {
							delete(model, old.k)
							delete(gens, old.k)
						}
						ring = ring[1:]
					}
					gen++
					ring = append(ring, slot{k, gen})
					gens[k] = gen
				}
				model[k] = k * 7
				if op == 3 {
					tb.PutNew(k, k*7)
				} else {
					tb.Put(k, k*7)
				}
			case 1: // delete
				delete(model, k)
				delete(gens, k)
				tb.Delete(k)
			case 2: // get
				v, ok := tb.Get(k)
				mv, mok := model[k]
				if ok != mok || v != mv {
					t.Fatalf("get(%d) = %d, %v; model %d, %v", k, v, ok, mv, mok)
				}
			}
			if tb.Len() != len(model) {
				t.Fatalf("len %d, model %d", tb.Len(), len(model))
			}
		}
	})
}
