// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymcaptureprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymcaptureprocessor"

import (
	"context"
	"time"
)

// Holding (design §4.7, §4.5): a model-call span waits for its capture line
// in its own batch, and the batch waits in its caller. ConsumeTraces returns
// only once every span of the batch is joined or let go and the batch is
// handed on, with the next consumer's error:
//
//	ConsumeTraces -> hold: the span stays in the batch, registered as waiting (waitingBatch)
//	              -> await: the caller waits until its batch's spans have left the queue
//	poll / a later batch -> release (joined: annotated in place) or let (capture_wait,
//	                     max_waiting_spans, shutdown) -> leave: the batch's count drops; at 0
//	                     the caller goes on -> next -> the error, if any, back to the caller
//
// So the processor never holds a span it has acknowledged: until the batch
// is handed on, the caller still owns it. Behind the gym processor, the
// round is not marked delivered while its batch waits here, so its journal
// covers a kill -9; what the next consumer refuses goes back to the gym
// processor as an error carrying the refused spans, and it keeps them for
// redelivery. A caller waits at most capture_wait (a span whose line comes
// waits about poll_interval), and only for a batch with a model-call span
// whose rollout has a capture file without the span's line. A span that
// ended more than capture_wait before it arrived does not wait at all: Gym
// writes the line right after the call, or never will (a span handed on
// again after an outage, or released by the gym processor after settle).

// waitingBatch is a ConsumeTraces call waiting for its spans' lines (or
// for better spans of their calls, callspan.go).
type waitingBatch struct {
	n     int            // its spans still waiting
	spans []*waitingSpan // all it registered
	done  chan struct{}  // closed when n drops to 0 once sealed
	// sealed: ConsumeTraces went through the batch. Before that a span of
	// it may leave (a better span later in the batch stood for its call)
	// and another be held.
	sealed bool
}

// seal ends b's registration: from now on the last of its spans to leave
// lets the caller go; with none waiting, the caller does not wait.
func (b *waitingBatch) seal() {
	b.sealed = true
	if b.n == 0 {
		b.done = nil
	}
}

// hold registers a model-call span (what wants and the join made of it, in
// span), in its batch b, to wait until capture_wait after now: for its line
// (the caller puts it in its rollout's waiting spans) or for a better span
// of its call (waitForCall). A span that ended more than capture_wait
// before now is not held (consumeCall).
func (p *captureProcessor) hold(span *waitingSpan, now time.Time, b *waitingBatch) *waitingSpan {
	w := &waitingSpan{span: span.span, scope: span.scope, call: call(span.span), kind: span.kind, rollout: span.rollout, run: span.run,
		provider: span.provider, deadline: now.Add(p.cfg.CaptureWait), batch: b}
	w.queued = p.queue.PushBack(w)
	if b.done == nil {
		b.done = make(chan struct{})
	}
	b.n++
	b.spans = append(b.spans, w)
	return w
}

// await blocks the caller of b until its spans have left (joined or let
// go). When ctx ends first, they are let go now, and the caller goes on.
func (p *captureProcessor) await(ctx context.Context, b *waitingBatch) {
	if b.done == nil {
		return
	}
	if p.onWait != nil {
		p.onWait()
	}
	select {
	case <-b.done:
	case <-ctx.Done():
		var c counts
		p.mu.Lock()
		for _, w := range b.spans {
			if w.queued != nil {
				p.let(w, &c, missedWait)
			}
		}
		c.waiting = int64(p.queue.Len())
		p.mu.Unlock()
		p.tel.record(ctx, &c)
	}
}

// leave takes w out of the queue and, when it was the last of its batch
// still waiting, lets the batch's caller go on.
func (p *captureProcessor) leave(w *waitingSpan) {
	p.queue.Remove(w.queued)
	w.queued = nil
	if b := w.batch; b != nil {
		if b.n--; b.n == 0 && b.sealed {
			close(b.done)
		}
	}
}

// release places the waiting spans that found their line, where they
// wait: each leaves, or waits on for a better span of its call
// (callspan.go).
func (p *captureProcessor) release(out []joined, c *counts) {
	for _, j := range out {
		c.countJoined(j.how)
		w := j.w
		if p.place(w, j.l, false) {
			p.leave(w)
		} else {
			p.waitForCall(w, j.l)
		}
	}
}

// expire lets the waiting spans go, in deadline order, while due says so.
func (p *captureProcessor) expire(c *counts, due func(*waitingSpan) bool, reason int) {
	for e := p.queue.Front(); e != nil && due(e.Value.(*waitingSpan)); e = p.queue.Front() {
		p.let(e.Value.(*waitingSpan), c, reason)
	}
}

// let lets a waiting span go: one joined to its line stands for its call
// unless a better span of it waits too (leaveCall); one without its line
// leaves without it (leaveLineless), counted by reason.
func (p *captureProcessor) let(w *waitingSpan, c *counts, reason int) {
	if w.line != nil {
		p.leaveCall(w)
		return
	}
	w.rollout.remove(w)
	w.rollout.noteWaited(w.call) // it does not wait again (linewait.go)
	if reason == missedWait && !w.rollout.tail.exists {
		reason = missedNoFile // it waited for a file that did not come
	}
	p.leaveLineless(w, c, reason) // annotates: before leave lets the caller hand the batch on
	p.leave(w)
}

// leaveLineless counts a model-call span that leaves without its line by
// reason; it stands for its call when it is of the best kind its run has
// (the call's other spans are not).
func (p *captureProcessor) leaveLineless(w *waitingSpan, c *counts, reason int) {
	c.missed[reason]++
	if w.kind >= w.run.best {
		// On the span itself, not a chat span: a span handed on again
		// (ended long ago) comes here again, and only the call's id, which
		// a call without its line lacks, would tell that its chat span
		// exists already (chatspan.go).
		annotateLineless(w.span.Attributes(), w.rollout.id, w.provider)
	}
}

// dueBy says whether a waiting span's deadline is at or before now.
func dueBy(now time.Time) func(*waitingSpan) bool {
	return func(w *waitingSpan) bool { return !w.deadline.After(now) }
}
