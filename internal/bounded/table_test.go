// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package bounded

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

func keys[K comparable, V any](t *Table[K, V]) []K {
	var out []K
	t.Range(func(k K, _ V) bool { out = append(out, k); return true })
	return out
}

func TestForgetsOldestFirst(t *testing.T) {
	tb := New[string, int](3)
	for i, k := range []string{"a", "b", "c", "d"} {
		tb.Put(k, i)
	}
	if got := keys(tb); !slices.Equal(got, []string{"b", "c", "d"}) {
		t.Fatalf("keys %v, want [b c d]", got)
	}
	tb.Put("b", 9) // present: keeps its place
	tb.Put("e", 4)
	if got := keys(tb); !slices.Equal(got, []string{"c", "d", "e"}) {
		t.Fatalf("keys %v, want [c d e]", got)
	}
	tb.Touch("c") // least recently used order
	tb.Put("f", 5)
	if got := keys(tb); !slices.Equal(got, []string{"e", "c", "f"}) {
		t.Fatalf("keys %v, want [e c f]", got)
	}
	k, v, ok := tb.Oldest()
	if !ok || k != "e" || v != 4 {
		t.Fatalf("Oldest = %q %d %v", k, v, ok)
	}
	tb.Delete("c")
	if _, ok := tb.Get("c"); ok || tb.Len() != 2 {
		t.Fatalf("c still there after Delete, len %d", tb.Len())
	}
}

func TestPinnedEntriesStay(t *testing.T) {
	tb := New[int, bool](2)
	tb.Pin(func(held bool) bool { return held })
	tb.Put(1, true)
	tb.Put(2, false)
	tb.Put(3, false)
	if got := keys(tb); !slices.Equal(got, []int{1, 3}) {
		t.Fatalf("keys %v, want [1 3]: the pinned oldest stays, the next is forgotten", got)
	}
	// All pinned: the table grows past its capacity rather than forget one.
	tb.Put(3, true)
	tb.Put(4, true)
	if tb.Len() != 3 {
		t.Fatalf("len %d, want 3", tb.Len())
	}
	// Once unpinned, the next Put takes it back to its capacity.
	tb.Put(1, false)
	tb.Put(5, false)
	if got := keys(tb); !slices.Equal(got, []int{3, 4}) {
		t.Fatalf("keys %v, want [3 4]", got)
	}
}

// The table behaves like a model: a slice in order with the same rules.
func TestPropertyMatchesModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		capacity := rapid.IntRange(1, 6).Draw(rt, "cap")
		tb := New[int, int](capacity)
		pin := map[int]bool{}
		tb.Pin(func(v int) bool { return pin[v] })
		type kv struct{ k, v int }
		var model []kv
		find := func(k int) int {
			return slices.IndexFunc(model, func(e kv) bool { return e.k == k })
		}
		for i := range rapid.IntRange(0, 60).Draw(rt, "ops") {
			k := rapid.IntRange(0, 9).Draw(rt, "k")
			switch rapid.IntRange(0, 3).Draw(rt, "op") {
			case 0:
				v := i
				pin[v] = rapid.Bool().Draw(rt, "pinned")
				tb.Put(k, v)
				if j := find(k); j >= 0 {
					model[j].v = v
					break
				}
				model = append(model, kv{k, v})
				for len(model) > capacity {
					j, skipped := 0, 0
					for j < len(model) && pin[model[j].v] && skipped <= maxPinnedSkips {
						j++
						skipped++
					}
					if j == len(model) || skipped > maxPinnedSkips {
						break
					}
					model = slices.Delete(model, j, j+1)
				}
			case 1:
				tb.Delete(k)
				if j := find(k); j >= 0 {
					model = slices.Delete(model, j, j+1)
				}
			case 2:
				tb.Touch(k)
				if j := find(k); j >= 0 {
					e := model[j]
					model = append(slices.Delete(model, j, j+1), e)
				}
			case 3:
				v, ok := tb.Get(k)
				j := find(k)
				if ok != (j >= 0) || (ok && v != model[j].v) {
					rt.Fatalf("Get(%d) = %d %v, model %v", k, v, ok, model)
				}
			}
			var got []kv
			tb.Range(func(k, v int) bool { got = append(got, kv{k, v}); return true })
			if !slices.Equal(got, model) {
				rt.Fatalf("table %v, model %v", got, model)
			}
		}
	})
}

// TestGetTouch: GetTouch gives the value and moves the entry to the newest
// end, as Get then Touch do; a missing key changes nothing.
func TestGetTouch(t *testing.T) {
	tb := New[string, int](2)
	tb.Put("a", 1)
	tb.Put("b", 2)
	v, ok := tb.GetTouch("a")
	if !ok || v != 1 {
		t.Fatalf("GetTouch(a) = %d, %v", v, ok)
	}
	if _, ok := tb.GetTouch("x"); ok {
		t.Fatal("GetTouch(x) found a missing key")
	}
	tb.Put("c", 3) // forgets the oldest: b, since a was touched
	if _, ok := tb.Get("b"); ok {
		t.Fatal("b should have been forgotten")
	}
	if k, _, _ := tb.Oldest(); k != "a" {
		t.Fatalf("oldest = %q, want a", k)
	}
}
