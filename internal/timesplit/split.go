// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package timesplit

import "slices"

// Of splits root's duration along the critical path of the spans below it
// (design §4.8). From root, the child that finished last, then backwards
// through the children that finished before it started; a child is first
// clipped to its parent, so one that outlives its parent ends with it. The
// time of a span on the path that no child on the path covers is the span's
// own, and goes to the category of the outermost call above it or it
// (Role: model, tool, verify); else inside the agent's /run to agent; else
// before the agent's /run started to queue, after it to other. A span whose
// parent is missing is not reached: its time is its nearest present
// ancestor's. Event spans are left out.
//
// The parts sum to root.End - root.Start exactly; ok is false when root ends
// before it starts. spans may hold root itself and spans of no concern (they
// are not reached); Of reorders spans.
func Of(root Span, spans []Span) (split Split, ok bool) {
	return new(walk).of(root, spans)
}

// noCall: a frame's time is not (yet) any call's.
const noCall = Categories

// walk is one Of: the spans sorted by parent, then by end (latest first),
// and what the walk found. A Tracker reuses one, its slices' capacity with
// it.
type walk struct {
	root    Span
	spans   []Span
	visited []bool
	agent   int   // index of the agent's /run (or gym.rollout), -1: none; len(spans): root
	agentAt int64 // its start, clipped to root
	split   Split
	// Scratch: sortSpans's buffer, findAgent's marks and queue, run's
	// stack.
	sorted []Span
	seen   []bool
	queue  []queued
	stack  []frame
}

type queued struct{ i, depth int }

func (w *walk) of(root Span, spans []Span) (Split, bool) {
	if root.End < root.Start {
		return Split{}, false
	}
	w.sorted = sortSpans(spans, w.sorted)
	w.root, w.spans, w.agent, w.agentAt, w.split = root, spans, -1, 0, Split{}
	w.visited = slices.Grow(w.visited[:0], len(spans))[:len(spans)]
	for i, s := range spans {
		// Left out: the root (it may be among them), events, and a span
		// that claims to be its own parent.
		w.visited[i] = s.ID == root.ID || s.Role == Event || s.ID == s.Parent
	}
	w.agent = w.findAgent()
	w.run()
	w.spans = nil
	return w.split, true
}

// children is the range of w.spans whose parent is id, latest end first.
func (w *walk) children(id uint64) (lo, hi int) {
	if id == 0 {
		return 0, 0
	}
	// The first span whose parent is not below id (a binary search by
	// hand: the generic one's comparison call was a quarter of a walk).
	lo, hi = 0, len(w.spans)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if w.spans[m].Parent < id {
			lo = m + 1
		} else {
			hi = m
		}
	}
	hi = lo
	for hi < len(w.spans) && w.spans[hi].Parent == id {
		hi++
	}
	return lo, hi
}

// role is the role of index i (len(w.spans): the root).
func (w *walk) role(i int) Role {
	if i == len(w.spans) {
		return w.root.Role
	}
	return w.spans[i].Role
}

func (w *walk) span(i int) Span {
	if i == len(w.spans) {
		return w.root
	}
	return w.spans[i]
}

// findAgent picks the agent's /run among the spans below root (root
// included): the shallowest AgentRun, else the deepest Run (a wrapper's /run
// above the agent's, in generic instrumentation), else the shallowest
// gym.rollout; the earliest first among equals.
func (w *walk) findAgent() int {
	type found struct{ i, depth int }
	best := [3]found{{-1, 0}, {-1, 0}, {-1, 0}} // AgentRun, Run, Rollout
	better := func(k, i, depth int, deeper bool) {
		b := best[k]
		switch {
		case b.i < 0, deeper && depth > b.depth, !deeper && depth < b.depth,
			depth == b.depth && w.span(i).Start < w.span(b.i).Start:
			best[k] = found{i, depth}
		}
	}
	seen := append(w.seen[:0], w.visited...)
	queue := append(w.queue[:0], queued{len(w.spans), 0})
	for next := 0; next < len(queue); next++ {
		it := queue[next]
		switch w.role(it.i) {
		case AgentRun:
			better(0, it.i, it.depth, false)
		case Run:
			better(1, it.i, it.depth, true)
		case Rollout:
			better(2, it.i, it.depth, false)
		}
		lo, hi := w.children(w.span(it.i).ID)
		for c := lo; c < hi; c++ {
			if !seen[c] {
				seen[c] = true
				queue = append(queue, queued{c, it.depth + 1})
			}
		}
	}
	w.seen, w.queue = seen, queue
	for _, b := range best {
		if b.i >= 0 {
			w.agentAt = min(max(w.span(b.i).Start, w.root.Start), w.root.End)
			return b.i
		}
	}
	return -1
}

// frame is a span on the critical path being walked: its interval (clipped),
// how far back its children have been taken, and the category of its time.
type frame struct {
	i               int // index into w.spans, len(w.spans): the root
	lo, hi, cursor  int64
	next, childrenN int      // its children still to look at: w.spans[next:childrenN]
	call            Category // the outermost call's category, or noCall
	inAgent         bool
}

// run walks the critical path from the root, depth first, without recursion.
func (w *walk) run() {
	stack := append(w.stack[:0], w.enter(len(w.spans), w.root.Start, w.root.End, noCall, false))
	defer func() { w.stack = stack[:0] }()
	for len(stack) > 0 {
		f := &stack[len(stack)-1]
		c, cs, ce := w.nextChild(f)
		if c < 0 {
			w.own(f, f.lo, f.cursor)
			stack = stack[:len(stack)-1]
			continue
		}
		w.own(f, ce, f.cursor)
		f.cursor = cs
		w.visited[c] = true
		stack = append(stack, w.enter(c, cs, ce, f.call, f.inAgent))
	}
}

// enter is the frame of span i on the path over [lo, hi].
func (w *walk) enter(i int, lo, hi int64, call Category, inAgent bool) frame {
	if call == noCall {
		switch w.role(i) {
		case ModelCall:
			call = Model
		case ToolCall:
			call = Tools
		case VerifyCall:
			call = Verify
		}
	}
	f := frame{i: i, lo: lo, hi: hi, cursor: hi, call: call, inAgent: inAgent || i == w.agent}
	f.next, f.childrenN = w.children(w.span(i).ID)
	return f
}

// nextChild is f's child that, clipped to f (start cs, end ce), finished
// last by f.cursor, or -1 when none is left. The children are sorted by end,
// latest first, and the cursor only moves back: one that is passed over
// stays passed over.
func (w *walk) nextChild(f *frame) (c int, cs, ce int64) {
	for ; f.next < f.childrenN && f.cursor > f.lo; f.next++ {
		i := f.next
		s := w.spans[i]
		cs, ce = max(s.Start, f.lo), min(s.End, f.hi)
		if w.visited[i] || ce > f.cursor || ce <= cs {
			continue
		}
		f.next++
		return i, cs, ce
	}
	return -1, 0, 0
}

// own adds [a, b), span f's own time, to its category.
func (w *walk) own(f *frame, a, b int64) {
	if b <= a {
		return
	}
	switch {
	case f.call != noCall:
		w.split[f.call] += b - a
	case f.inAgent:
		w.split[Agent] += b - a
	case w.agent < 0:
		w.split[Other] += b - a
	default:
		q := min(max(w.agentAt, a), b)
		w.split[Queue] += q - a
		w.split[Other] += b - q
	}
}
