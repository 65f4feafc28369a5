// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"
)

// Redelivery (design §4.5): once the receiver acknowledged a span, the
// collector owns it, so what the next consumer refuses (a full capture disk,
// a read-only capture dir, a journal that cannot be written) is kept here and
// handed on again until it is taken:
//
//	deliver -> handOn -> next refuses -> refusedPart (the data of a consumererror.Traces, the
//	           exporter's unwritten spans; after any other error the whole batch) -> keep: queued
//	           (with storage, in the journal's held range first: journal_held.go)
//	tick    -> retryRefused: the oldest batch first, at backoff; once next takes one, the
//	           batches queued before the pass, as fast as next takes them -> settle
//	ConsumeTraces -> atBound: with spans queued here and max_pending_spans or max_pending_bytes
//	           reached (held undecided + queued), the batch is refused with a retryable error
//	           (the sender keeps it)
//
// While anything is queued, new output joins the queue behind it instead of
// going to next: spans leave in the order they were decided, and a refusing
// consumer is asked once per backoff, not once per batch (each refusal is
// an error line of the exporter helper). A permanent error (the consumer
// will never take the data: malformed for it, too large) is not retried:
// those spans are dropped, logged and counted.
//
// With storage, a round is marked delivered once all of its output was
// taken by next or written to the held range, the mark in the same
// transaction as the held batches. When the storage cannot write them (the
// journal is on the full disk too), they stay queued in memory as a debt of
// their round: the round stays unmarked, so a kill -9 replays it, no
// checkpoint is taken while a debt is open, and each pass first tries to
// write them to the held range again.

// Backoff between attempts while next refuses.
const (
	redeliverFirstBackoff = time.Second
	redeliverMaxBackoff   = 15 * time.Second
)

// redelivery is the queue of refused batches. Its state has its own mutex,
// never taken with the processor's: the bound check reads two atomics.
type redelivery struct {
	mu      sync.Mutex
	queue   []*heldBatch
	busy    bool          // a pass is handing batches on
	backoff time.Duration // the wait after the last refusal
	nextTry time.Time
	since   time.Time // when next began refusing; zero while the queue is empty
	cause   error     // next's last refusal
	debts   int       // open roundDebts
	// stale are held-range keys of batches delivered whose deletion failed.
	stale []uint64

	spans, bytes atomic.Int64 // what the queue holds
}

// heldBatch is one refused batch.
type heldBatch struct {
	td           ptrace.Traces
	spans, bytes int64
	key          uint64     // its key in the journal's held range; 0: not there
	debt         *roundDebt // set while it is not in the held range and its round is unmarked
}

// roundDebt is a journalled round whose delivered mark waits for batches
// that are neither taken nor in the held range.
type roundDebt struct {
	seq  uint64
	open int
}

func newHeldBatch(td ptrace.Traces) *heldBatch {
	b := &heldBatch{td: td}
	b.count()
	return b
}

// count sets spans and bytes from td (bytes as the pending store estimates
// a held span's).
func (b *heldBatch) count() {
	b.spans, b.bytes = 0, 0
	for _, rs := range b.td.ResourceSpans().All() {
		b.bytes += estimateMapBytes(rs.Resource().Attributes())
		for _, ss := range rs.ScopeSpans().All() {
			for _, sp := range ss.Spans().All() {
				b.spans++
				b.bytes += estimateSpanBytes(sp)
			}
		}
	}
}

// refusedPart is what of sent the next consumer did not take, read from its
// error: the data of a consumererror.Traces, else all of sent. ok is false
// for a permanent error: retrying cannot help. The part returned may be
// changed (a read-only one, marked so by a fan-out, is copied).
func refusedPart(err error, sent ptrace.Traces) (part ptrace.Traces, ok bool) {
	var te consumererror.Traces
	switch {
	case errors.As(err, &te):
		part = te.Data()
	case consumererror.IsPermanent(err):
		return ptrace.Traces{}, false
	default:
		part = sent
	}
	if part.IsReadOnly() {
		c := ptrace.NewTraces()
		part.CopyTo(c)
		part = c
	}
	return part, true
}

// handOn sends a round's output to next in bounded batches, and keeps what
// next refuses. It reports whether the round is settled: all of it taken or
// in the journal's held range (always, without storage).
func (p *gymProcessor) handOn(ctx context.Context, out ptrace.Traces, seq uint64) bool {
	batches := splitTraces(out, maxEmitSpans)
	if p.red.spans.Load() > 0 {
		return p.keep(ctx, seq, batches, nil) // behind what waits
	}
	for i, b := range batches {
		err := p.next.ConsumeTraces(ctx, b)
		if err == nil {
			continue
		}
		part, ok := p.refused(ctx, err, b)
		if !ok {
			continue
		}
		rest := append([]ptrace.Traces{part}, batches[i+1:]...) // the rest queues behind it, not offered
		return p.keep(ctx, seq, rest, err)
	}
	return true
}

// refused counts and logs a refusal of b and returns the part to keep; ok is
// false when nothing is to be kept (a permanent error, or next took all).
func (p *gymProcessor) refused(ctx context.Context, err error, b ptrace.Traces) (ptrace.Traces, bool) {
	part, retry := refusedPart(err, b)
	if !retry {
		n := int64(b.SpanCount())
		p.tel.ProcessorGymDownstreamFailedSpans.Add(ctx, n)
		p.tel.ProcessorGymSpansDropped.Add(ctx, n)
		p.diag.droppedPermanently(n, err)
		return ptrace.Traces{}, false
	}
	n := int64(part.SpanCount())
	p.tel.ProcessorGymDownstreamFailedSpans.Add(ctx, n)
	return part, n > 0
}

// keep queues batches next refused (cause; nil when they were not offered)
// and, with storage, writes them to the held range with round seq's
// delivered mark. It reports whether the round is settled.
func (p *gymProcessor) keep(ctx context.Context, seq uint64, tds []ptrace.Traces, cause error) bool {
	bs := make([]*heldBatch, 0, len(tds))
	for _, td := range tds {
		if td.SpanCount() > 0 {
			bs = append(bs, newHeldBatch(td))
		}
	}
	if len(bs) == 0 {
		return true
	}
	settled := true
	if p.jr != nil {
		// seq 0 is the shutdown's own round, not journalled: its batches
		// go to the held range without a mark.
		if err := p.jr.hold(ctx, seq, bs); err != nil {
			p.storageFailed(ctx, err)
			settled = false
		}
	}
	rd := p.red
	now := p.clock.Now()
	rd.mu.Lock()
	if !settled && seq != 0 {
		d := &roundDebt{seq: seq, open: len(bs)}
		for _, b := range bs {
			b.debt = d
		}
		rd.debts++
	}
	for _, b := range bs {
		rd.queue = append(rd.queue, b)
		rd.spans.Add(b.spans)
		rd.bytes.Add(b.bytes)
	}
	if cause != nil {
		rd.refusedLocked(cause, now)
	}
	n, next := rd.spans.Load(), rd.nextTry.Sub(now)
	cause = rd.cause
	rd.mu.Unlock()
	p.tel.ProcessorGymRedeliverySpans.Record(ctx, n)
	if cause != nil {
		p.diag.heldForRedelivery(n, max(next, 0), cause)
	}
	return settled
}

// refusedLocked notes a refusal at now: the first of an outage starts the
// backoff, a later one doubles it.
func (rd *redelivery) refusedLocked(cause error, now time.Time) {
	if rd.since.IsZero() {
		rd.since = now
	}
	if rd.backoff == 0 {
		rd.backoff = redeliverFirstBackoff
	} else {
		rd.backoff = min(2*rd.backoff, redeliverMaxBackoff)
	}
	rd.cause = cause
	rd.nextTry = now.Add(rd.backoff)
}

// retryRefused is one pass over the queue (see the top of this file); force
// ignores the backoff (shutdown).
func (p *gymProcessor) retryRefused(ctx context.Context, force bool) {
	rd := p.red
	now := p.clock.Now()
	rd.mu.Lock()
	if rd.busy || len(rd.queue) == 0 || (!force && now.Before(rd.nextTry)) {
		rd.mu.Unlock()
		return
	}
	rd.busy = true
	n := len(rd.queue) // this pass offers what was queued when it began
	rd.mu.Unlock()
	p.holdDebts(ctx)
	var done []*heldBatch
	for range n {
		rd.mu.Lock()
		b := rd.queue[0]
		rd.mu.Unlock()
		err := p.next.ConsumeTraces(ctx, b.td)
		if err != nil {
			if part, ok := p.refused(ctx, err, b.td); ok {
				p.refusedAgain(ctx, b, part, err)
				break
			}
		}
		rd.mu.Lock()
		rd.queue[0] = nil
		rd.queue = rd.queue[1:]
		rd.spans.Add(-b.spans)
		rd.bytes.Add(-b.bytes)
		rd.mu.Unlock()
		done = append(done, b)
	}
	p.settle(ctx, done)
	rd.mu.Lock()
	rd.busy = false
	held, since := rd.spans.Load(), rd.since
	if held == 0 && !since.IsZero() {
		rd.since, rd.backoff, rd.cause, rd.nextTry = time.Time{}, 0, nil, time.Time{}
	}
	rd.mu.Unlock()
	p.tel.ProcessorGymRedeliverySpans.Record(ctx, held)
	if held == 0 && !since.IsZero() {
		p.diag.redelivered(p.clock.Now().Sub(since))
	}
}

// refusedAgain replaces b's data by the part next refused again (in the
// held range too), and backs off.
func (p *gymProcessor) refusedAgain(ctx context.Context, b *heldBatch, part ptrace.Traces, cause error) {
	rd := p.red
	rd.mu.Lock()
	spans, bytes := b.spans, b.bytes
	b.td = part
	b.count()
	rd.spans.Add(b.spans - spans)
	rd.bytes.Add(b.bytes - bytes)
	rd.refusedLocked(cause, p.clock.Now())
	n, next := rd.spans.Load(), rd.nextTry.Sub(p.clock.Now())
	rd.mu.Unlock()
	if b.key != 0 && b.spans != spans {
		if err := p.jr.rewriteHeld(ctx, b); err != nil {
			// The larger part stays in the store: after a kill the spans
			// next took meanwhile are handed on again, and gymspans drops
			// them (design §4.6).
			p.storageFailed(ctx, err)
		}
	}
	p.tel.ProcessorGymRedeliverySpans.Record(ctx, n)
	p.diag.heldForRedelivery(n, next, cause)
}

// settle forgets batches next took: their held-range keys are deleted (a
// deletion that fails is retried with the next), and the rounds whose debts
// they paid are marked delivered.
func (p *gymProcessor) settle(ctx context.Context, done []*heldBatch) {
	rd := p.red
	rd.mu.Lock()
	keys := rd.stale
	rd.stale = nil
	for _, b := range done {
		if b.key != 0 {
			keys = append(keys, b.key)
		}
		if d := b.debt; d != nil {
			b.debt = nil
			if d.open--; d.open == 0 {
				rd.debts--
				p.jr.mark(d.seq)
			}
		}
	}
	first := rd.firstKeyLocked()
	rd.mu.Unlock()
	if len(keys) == 0 {
		return
	}
	if err := p.jr.release(ctx, keys, first); err != nil {
		p.storageFailed(ctx, err)
		rd.mu.Lock()
		rd.stale = append(rd.stale, keys...)
		rd.mu.Unlock()
	}
}

// firstKeyLocked is the smallest held-range key still queued (0: none).
func (rd *redelivery) firstKeyLocked() uint64 {
	var first uint64
	for _, b := range rd.queue {
		if b.key != 0 && (first == 0 || b.key < first) {
			first = b.key
		}
	}
	return first
}

// holdDebts writes to the held range the queued batches of rounds whose
// marks wait for them, each round's batches with its mark, while the
// storage takes them.
func (p *gymProcessor) holdDebts(ctx context.Context) {
	rd := p.red
	rd.mu.Lock()
	if rd.debts == 0 {
		rd.mu.Unlock()
		return
	}
	var order []*roundDebt
	byDebt := map[*roundDebt][]*heldBatch{}
	for _, b := range rd.queue {
		if b.debt != nil {
			if byDebt[b.debt] == nil {
				order = append(order, b.debt)
			}
			byDebt[b.debt] = append(byDebt[b.debt], b)
		}
	}
	rd.mu.Unlock()
	for _, d := range order {
		if err := p.jr.hold(ctx, d.seq, byDebt[d]); err != nil {
			p.storageFailed(ctx, err)
			return
		}
		rd.mu.Lock()
		for _, b := range byDebt[d] {
			b.debt = nil
		}
		rd.debts--
		rd.mu.Unlock()
	}
}

// hasDebts reports whether a round's mark waits for batches not in the
// held range: no checkpoint may be taken then.
func (rd *redelivery) hasDebts() bool {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	return rd.debts > 0
}

// atBound refuses a batch, with a retryable error, while spans wait for
// redelivery and they and the spans held undecided reach a pending bound.
func (p *gymProcessor) atBound(ctx context.Context) error {
	held := p.red.spans.Load()
	if held == 0 {
		return nil
	}
	spans, bytes := held+p.pendingSpans.Load(), p.red.bytes.Load()+p.pendingBytes.Load()
	if spans < int64(p.cfg.MaxPendingSpans) && bytes < p.cfg.MaxPendingBytes {
		return nil
	}
	p.tel.ProcessorGymBatchesRefused.Add(ctx, 1)
	p.red.mu.Lock()
	cause := p.red.cause
	p.red.mu.Unlock()
	err := errAtBound(held, spans, bytes, p.cfg, cause)
	p.diag.refusingUpstream(err)
	return err
}

// refusedAtShutdown reports what the next consumer still refuses after the
// shutdown's last attempt. With storage it is in the held range and the
// next start hands it on (journalDone: the journal's records are no longer
// needed), or its rounds are unmarked and the next start replays them;
// without storage it is lost, and the error says how much.
func (p *gymProcessor) refusedAtShutdown() (journalDone bool, err error) {
	rd := p.red
	rd.mu.Lock()
	defer rd.mu.Unlock()
	n := rd.spans.Load()
	if n == 0 {
		return true, nil
	}
	if p.jr == nil {
		return false, fmt.Errorf("gym processor: the next consumer still refuses %d spans at shutdown, and without storage they are lost: %v", n, rd.cause)
	}
	journalDone = rd.debts == 0
	for _, b := range rd.queue {
		journalDone = journalDone && b.key != 0
	}
	p.logger.Error("gym processor: the next consumer still refuses spans at shutdown; they stay in the storage, and the next start hands them on",
		zap.Int64("spans", n), zap.Error(rd.cause))
	return journalDone, nil
}
