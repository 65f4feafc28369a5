// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package timesplit

import (
	"math/bits"
	"slices"
)

// pool keeps the facts slices of finished rollouts for the rollouts that
// follow, by capacity class (powers of two, 1 to maxPooledCap), so that a
// Tracker that has reached its rollouts' peak allocates no more: a run's
// facts are recycled, not left to the collector. The Tracker keeps what it
// holds and what its pool keeps within its max_spans together (room).
type pool struct {
	free [poolClasses][][]Span
	kept int // capacity held in free
}

// maxPooledCap is the largest slice pooled; a rollout past it grows as
// append grows, and its slice is let go when it finishes.
const (
	poolClasses  = 13
	maxPooledCap = 1 << (poolClasses - 1)
)

// grow returns s with room for need spans: a pooled slice of the next
// class holding s's spans; s goes back to the pool if room allows.
func (p *pool) grow(s []Span, need, room int) []Span {
	if need <= cap(s) {
		return s
	}
	n := max(need, 2*cap(s))
	if n > maxPooledCap {
		return slices.Grow(s, need-len(s))
	}
	c := bits.Len(uint(n - 1)) // 1<<c >= n
	var ns []Span
	if k := len(p.free[c]); k > 0 {
		ns, p.free[c] = p.free[c][k-1], p.free[c][:k-1]
		p.kept -= cap(ns)
	} else {
		ns = make([]Span, 0, 1<<c)
	}
	ns = append(ns, s...)
	p.put(s, room)
	return ns
}

// put keeps s for reuse when it is of a class and the pool's capacity stays
// within room.
func (p *pool) put(s []Span, room int) {
	c := cap(s)
	if c == 0 || c > maxPooledCap || c&(c-1) != 0 || p.kept+c > room {
		return
	}
	k := bits.Len(uint(c - 1))
	p.free[k] = append(p.free[k], s[:0])
	p.kept += c
}
