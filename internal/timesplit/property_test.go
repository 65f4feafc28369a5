// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package timesplit

import (
	"encoding/binary"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// genTree draws a root and spans below it (and some that are not: missing
// parents, events), with times anywhere around the root's, children that
// outlive their parents or start before them, and every role.
func genTree(t *rapid.T) (Span, []Span) {
	root := Span{ID: 1, Start: rapid.Int64Range(0, 1000).Draw(t, "root.start"), Role: Role(rapid.IntRange(0, int(Rollout)).Draw(t, "root.role"))}
	root.End = root.Start + rapid.Int64Range(-5, 1000).Draw(t, "root.duration")
	n := rapid.IntRange(0, 40).Draw(t, "n")
	spans := make([]Span, n)
	for i := range spans {
		s := &spans[i]
		s.ID = uint64(i + 2)
		// A parent among the spans before it or the root, or a missing one.
		s.Parent = uint64(rapid.IntRange(1, i+2).Draw(t, "parent"))
		if rapid.IntRange(0, 9).Draw(t, "missing") == 0 {
			s.Parent = 1000 + uint64(i)
		}
		s.Start = rapid.Int64Range(-100, 1100).Draw(t, "start")
		s.End = s.Start + rapid.Int64Range(-10, 600).Draw(t, "duration")
		s.Role = Role(rapid.IntRange(0, int(Rollout)).Draw(t, "role"))
	}
	return root, spans
}

// TestOfProperties: whatever the tree, the parts are >= 0 and sum to the
// root's duration exactly; the split does not depend on the order the spans
// came in; spans that are not reached (events, a subtree whose parent is
// missing) change nothing; and the milliseconds of rollouts.jsonl sum to the
// duration within the contract's 0.006 ms.
func TestOfProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		root, spans := genTree(t)
		got, ok := Of(root, slices.Clone(spans))
		if root.End < root.Start {
			if ok {
				t.Fatalf("a root that ends before it starts was split: %v", got)
			}
			return
		}
		if !ok {
			t.Fatal("not split")
		}
		checkSplit(t, root, got)

		shuffled := rapid.Permutation(spans).Draw(t, "order")
		if again, _ := Of(root, shuffled); again != got {
			t.Fatalf("another arrival order, another split: %v, then %v", got, again)
		}
		extra := append(slices.Clone(spans),
			Span{ID: 5000, Parent: 1, Start: root.Start, End: root.End + 50, Role: Event},
			Span{ID: 5001, Parent: 4999, Start: root.Start, End: root.End, Role: ModelCall},
			Span{ID: 5002, Parent: 5001, Start: root.Start, End: root.End, Role: ToolCall})
		if again, _ := Of(root, extra); again != got {
			t.Fatalf("spans that are not reached changed the split: %v, then %v", got, again)
		}
	})
}

func checkSplit(t interface{ Fatalf(string, ...any) }, root Span, got Split) {
	for c, v := range got {
		if v < 0 {
			t.Fatalf("%s = %d < 0 in %v", Category(c), v, got)
		}
	}
	if got.Total() != root.End-root.Start {
		t.Fatalf("parts sum to %d, duration %d: %v", got.Total(), root.End-root.Start, got)
	}
	var us int64
	for _, v := range got.Micros() {
		if v < 0 {
			t.Fatalf("negative microseconds in %v", got.Micros())
		}
		us += v
	}
	if d := us*1000 - (root.End - root.Start); d < -6000 || d > 6000 {
		t.Fatalf("microseconds sum to %d, duration %d ns", us, root.End-root.Start)
	}
}

// FuzzOf: any spans, however malformed (cycles, duplicates, times before
// 1970, parents everywhere), are split without panic, within the walk's
// bounds, into parts that sum to the duration.
func FuzzOf(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 100, 2, 1, 0, 10, 0, 50, 2})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 1, 0, 5, 3, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < 8 {
			return
		}
		root := Span{ID: 1, Start: int64(int32(binary.BigEndian.Uint32(b))), End: int64(int32(binary.BigEndian.Uint32(b[4:])))}
		var spans []Span
		for b = b[8:]; len(b) >= 7 && len(spans) < 2000; b = b[7:] {
			spans = append(spans, Span{
				ID: uint64(b[0] % 16), Parent: uint64(b[1] % 16),
				Start: int64(int16(binary.BigEndian.Uint16(b[2:]))), End: int64(int16(binary.BigEndian.Uint16(b[4:]))),
				Role: Role(b[6] % byte(Rollout+1)),
			})
		}
		got, ok := Of(root, spans)
		if ok != (root.End >= root.Start) {
			t.Fatalf("ok = %v for a root [%d, %d]", ok, root.Start, root.End)
		}
		if ok {
			checkSplit(t, root, got)
		}
	})
}

// TestSortSpans: the walk's sort orders any spans as the generic sort does,
// within one insertion run and over several merged, ties and equal spans
// too.
func TestSortSpans(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		small := rapid.Int64Range(0, 3)
		n := rapid.IntRange(0, 5*sortRun).Draw(t, "n")
		spans := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) Span {
			return Span{ID: uint64(small.Draw(t, "id")), Parent: uint64(small.Draw(t, "parent")),
				Start: small.Draw(t, "start"), End: small.Draw(t, "end")}
		}), n, n).Draw(t, "spans")
		want := slices.Clone(spans)
		slices.SortFunc(want, func(a, b Span) int {
			switch {
			case spanBefore(&a, &b):
				return -1
			case spanBefore(&b, &a):
				return 1
			}
			return 0
		})
		sortSpans(spans, nil)
		if !slices.Equal(spans, want) {
			t.Fatalf("sortSpans: %v\nwant %v", spans, want)
		}
	})
}
