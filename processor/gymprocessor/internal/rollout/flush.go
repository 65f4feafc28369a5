// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package rollout // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/rollout"

import (
	"cmp"
	"container/heap"
	"math"
	"slices"
)

// Flush takes every decision whose deadline has come (the round's now, or,
// at shutdown, every one: design §4.5) and lets go what they release: the
// timer's entry. Spans falling due together are taken phase by phase, and
// within a phase earlier attempts first (Config.AttemptOrder), so a retry
// finds its previous attempt's root.
func (c *Core) Flush(shutdown bool) {
	limit := c.now
	relReason := ReasonWait
	if shutdown {
		limit = math.MaxInt64
		relReason = ReasonShutdown
	}
	c.checkRuns(shutdown)
	for {
		batch := c.due[:0]
		minPhase := Phase(math.MaxUint8)
		for len(c.heap) > 0 && c.heap[0].deadline <= limit {
			e := heap.Pop(&c.heap).(*entry)
			batch = append(batch, e)
			minPhase = min(minPhase, e.phase)
		}
		if len(batch) == 0 {
			break
		}
		keyed := c.dueOrder[:0]
		for _, e := range batch {
			if e.phase == minPhase {
				keyed = append(keyed, attemptOrder{attempt: c.cfg.AttemptOrder(e.n.candidate()), e: e})
			} else {
				heap.Push(&c.heap, e)
			}
		}
		clear(batch)
		c.due = batch[:0]
		slices.SortFunc(keyed, func(a, b attemptOrder) int {
			if a.attempt != b.attempt {
				return cmp.Compare(a.attempt, b.attempt)
			}
			return cmp.Compare(a.e.seq, b.e.seq)
		})
		for _, k := range keyed {
			e := k.e
			if e.n.held != e || e.heapIdx >= 0 {
				continue // left, or re-armed by an earlier decision of this pass
			}
			c.expire(e, relReason)
		}
		clear(keyed)
		c.dueOrder = keyed[:0]
	}
	if cap(c.due) > maxKeptDue {
		c.due, c.dueOrder = nil, nil // after a huge flush (shutdown, a bound)
	}
}

// maxKeptDue bounds the flush buffers kept between ticks.
const maxKeptDue = 1 << 14

type attemptOrder struct {
	attempt int
	e       *entry
}
