// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor

import (
	"container/heap"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// refHeap is container/heap's view of held spans: the reference whose
// layout pendingHeap keeps (the order of spans that leave together, e.g. a
// run found without evidence, follows the layout).
type refHeap []*heldSpan

func (h refHeap) Len() int { return len(h) }
func (h refHeap) Less(i, j int) bool {
	if h[i].deadline != h[j].deadline {
		return h[i].deadline < h[j].deadline
	}
	return h[i].seq < h[j].seq
}
func (h refHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *refHeap) Push(x any)   { *h = append(*h, x.(*heldSpan)) }
func (h *refHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func TestPendingHeapKeepsContainerHeapLayout(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var h pendingHeap
		var ref refHeap
		refIdx := func(hs *heldSpan) int {
			for i, x := range ref {
				if x == hs {
					return i
				}
			}
			return -1
		}
		seq := uint64(0)
		for i, n := 0, rapid.IntRange(1, 120).Draw(t, "ops"); i < n; i++ {
			switch op := rapid.IntRange(0, 4).Draw(t, "op"); {
			case op <= 1 || len(h) == 0:
				hs := &heldSpan{deadline: int64(rapid.IntRange(0, 20).Draw(t, "deadline")), seq: seq, heapIdx: -1}
				seq++
				h.push(hs)
				heap.Push(&ref, hs)
			case op == 2:
				got := h.pop()
				want := heap.Pop(&ref).(*heldSpan)
				require.Same(t, want, got)
				require.Equal(t, -1, got.heapIdx)
			case op == 3:
				hs := h[rapid.IntRange(0, len(h)-1).Draw(t, "removeAt")].hs
				j := refIdx(hs)
				h.remove(hs.heapIdx)
				heap.Remove(&ref, j)
			default:
				hs := h[rapid.IntRange(0, len(h)-1).Draw(t, "fixAt")].hs
				j := refIdx(hs)
				hs.deadline = int64(rapid.IntRange(0, 20).Draw(t, "newDeadline"))
				if rapid.Bool().Draw(t, "viaInit") {
					h.init()
					heap.Init(&ref)
				} else {
					h.fix(hs.heapIdx)
					heap.Fix(&ref, j)
				}
			}
			require.Len(t, h, len(ref))
			for k, slot := range h {
				require.Same(t, ref[k], slot.hs, "layout at %d", k)
				require.Equal(t, k, slot.hs.heapIdx)
				require.Equal(t, slot.hs.deadline, slot.deadline)
			}
		}
	})
}
