// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"
)

// Crash safety with a storage extension (design §4.6; the journal's design is
// in journal.go):
//
//	ConsumeTraces -> [lock] record the batch -> engine.consume [unlock] -> deliver -> mark delivered
//	timer tick    -> [lock] record the tick  -> engine.flush   [unlock] -> deliver -> mark delivered
//	              -> every checkpointEvery or checkpointBytes: [lock, no round in flight] checkpoint [unlock]
//	Start         -> load the checkpoint, replay the records after it, deliver what was not delivered,
//	                 record the restart (restarted)
//	Shutdown      -> everything delivered: the journal is emptied

var batchMarshaler ptrace.ProtoMarshaler

// When a checkpoint is written: after this many bytes of records, or four
// times the last checkpoint's size when that is more (a checkpoint costs
// about what writing its size in records does, so checkpoints take at most
// a fifth of what the journal writes; the replay after a crash reads at
// most about this much), or this long after the last one (so a quiet
// processor's journal stays small).
const (
	checkpointBytes     = 64 << 20
	checkpointsPerState = 4
	checkpointEvery     = 5 * time.Minute
)

// startStorage opens the storage extension's client, when the processor has
// one, and recovers what the journal holds. A storage extension that is not
// there is a configuration error; one whose store cannot be opened is
// logged and the processor runs without it (a crash loop would lose more).
func (p *gymProcessor) startStorage(ctx context.Context, host component.Host) error {
	if p.cfg.Storage == nil {
		return nil
	}
	ext, ok := host.GetExtensions()[*p.cfg.Storage]
	if !ok {
		return fmt.Errorf("storage: extension %q is not in the service's extensions", p.cfg.Storage.String())
	}
	se, ok := ext.(storage.Extension)
	if !ok {
		return fmt.Errorf("storage: extension %q is not a storage extension", p.cfg.Storage.String())
	}
	client, err := se.GetClient(ctx, component.KindProcessor, p.id, "")
	if err != nil {
		p.logger.Error("gym processor: its storage cannot be opened; running without it, so a kill -9 loses the spans held undecided",
			zap.String("storage", p.cfg.Storage.String()), zap.Error(err))
		p.tel.ProcessorGymStorageErrors.Add(ctx, 1)
		return nil
	}
	jr, why, err := openJournal(ctx, client, p.cfg)
	if err != nil {
		p.logger.Error("gym processor: its storage cannot be read; running without it, so a kill -9 loses the spans held undecided",
			zap.String("storage", p.cfg.Storage.String()), zap.Error(err))
		p.tel.ProcessorGymStorageErrors.Add(ctx, 1)
		_ = client.Close(ctx)
		return nil
	}
	if why != "" {
		p.logger.Error("gym processor: what its storage held is set aside, not replayed: "+why,
			zap.String("storage", p.cfg.Storage.String()), zap.Uint64("set_aside_generation", jr.meta.Aside))
		p.tel.ProcessorGymStorageErrors.Add(ctx, 1)
	}
	p.jr = jr
	return p.recover(ctx)
}

// recover rebuilds the engine from the journal and hands on, now, the
// output of every replayed round that was not delivered before the
// collector stopped.
func (p *gymProcessor) recover(ctx context.Context) error {
	jr := p.jr
	// First what was refused before the stop: the replay keeps what is
	// refused again behind it, under new keys of the held range.
	p.loadHeld(ctx)
	lj, err := jr.load(ctx)
	if err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	eng, err := newEngine(p.cfg)
	if err != nil {
		return err
	}
	corrupt := lj.corrupt
	if lj.checkpoint != nil {
		if err := eng.restore(lj.checkpoint); err != nil {
			corrupt = fmt.Errorf("checkpoint %d: %w", jr.meta.Checkpoint, err)
			lj.records = nil
			if eng, err = newEngine(p.cfg); err != nil {
				return err
			}
		}
	}
	var replayed, redelivered int64
	for _, rec := range lj.records {
		var r *round
		switch rec.kind {
		case recordBatch:
			td, uerr := spanUnmarshaler.UnmarshalTraces(rec.payload)
			if uerr != nil {
				corrupt = fmt.Errorf("record %d: %w: %w", rec.seq, errCorruptRecord, uerr)
			} else {
				// A journal written with the rule off, or with other
				// lists, is replayed under this rule.
				p.removeCredentials(ctx, td)
				f := eng.prepare(td)
				r = eng.consume(td, f, rec.now)
				f.release()
			}
		case recordTick:
			r = eng.flush(rec.now, false)
		case recordRestart:
			eng.core.Restarted(rec.now) // a round of nothing
			replayed++
			jr.next = rec.seq + 1
			continue
		}
		if r == nil {
			break
		}
		replayed++
		jr.next = rec.seq + 1
		if rec.delivered {
			r.recycle()
			continue
		}
		p.mu.Lock()
		p.inflight++
		p.mu.Unlock()
		settled := p.deliver(ctx, r, gauges{spans: int64(eng.core.Pending()), bytes: eng.core.PendingBytes(), index: int64(eng.core.Indexed())}, rec.seq)
		redelivered += r.emitted
		p.delivered(ctx, rec.seq, r, settled)
	}
	p.mu.Lock()
	p.eng = eng
	p.applied = jr.next - 1
	if replayed == 0 {
		// Nothing to fold away: the first checkpoint is due by size, or
		// checkpointEvery after the start, not at the first tick (which
		// would snapshot whatever the first load brought in).
		jr.lastCheckpoint = p.clock.Now()
	}
	err = jr.writeMarks(ctx)
	p.mu.Unlock()
	if err != nil {
		p.storageFailed(ctx, err)
	}
	if replayed > 0 || lj.checkpoint != nil {
		p.restarted(ctx)
	}
	if replayed > 0 || redelivered > 0 {
		p.logger.Info("gym processor: recovered what it held from its storage",
			zap.Int64("records_replayed", replayed), zap.Int("spans_held", eng.core.Pending()),
			zap.Int64("spans_handed_on_again", redelivered))
	}
	p.tel.ProcessorGymSpansRedelivered.Add(ctx, redelivered)
	if corrupt == nil {
		return nil
	}
	// What followed the corrupt part cannot be replayed: keep what was
	// recovered as a checkpoint of a new generation, set the old one aside.
	p.logger.Error("gym processor: its storage holds a corrupt record; what came before it was recovered, the rest is set aside",
		zap.String("storage", p.cfg.Storage.String()), zap.Error(corrupt))
	p.tel.ProcessorGymStorageErrors.Add(ctx, 1)
	if err := jr.setAside(ctx, corrupt.Error()); err != nil {
		return err
	}
	return jr.checkpoint(ctx, jr.next-1, eng.snapshot())
}

// restarted records that the collector started again on what its journal
// held and tells the engine (design §4.6): for wait from now, a span whose
// parent left in no rollout waits for the spans below it, which the senders
// may still be retrying (the batches the stopped collector had not
// acknowledged). The record makes a replay apply it at the same point. When
// it cannot be written the engine is not told either.
func (p *gymProcessor) restarted(ctx context.Context) {
	seq, now, err := p.record(ctx, recordRestart, nil)
	if err != nil {
		p.storageFailed(ctx, err)
		return
	}
	p.mu.Lock()
	p.eng.core.Restarted(now)
	p.endTurnLocked(seq)
	p.mu.Unlock()
}

// record writes a batch or tick to the journal (without the lock: callers
// that arrive together share a transaction) and returns its sequence and
// time; without storage it does nothing.
func (p *gymProcessor) record(ctx context.Context, kind byte, payload []byte) (uint64, int64, error) {
	if p.jr == nil {
		return 0, 0, nil
	}
	return p.jr.write(ctx, kind, p.clock, payload)
}

// takeTurnLocked waits, under the lock, until the engine may take record
// seq: every record before it was taken and no checkpoint is being taken.
// It is false after shutdown (the record's round is not computed: its batch
// is passed on as it is, the journal is emptied with the rest). Without
// storage (seq 0) there is no order to keep but a checkpoint's.
func (p *gymProcessor) takeTurnLocked(seq uint64) bool {
	for p.quiesce || (seq != 0 && seq != p.applied+1 && !p.shutdown) {
		p.idle.Wait()
	}
	if p.shutdown {
		if seq != 0 {
			p.endTurnLocked(seq) // its successors must not wait for it
		}
		return false
	}
	p.inflight++
	return true
}

// endTurnLocked records that the engine took record seq.
func (p *gymProcessor) endTurnLocked(seq uint64) {
	if seq != 0 && seq > p.applied {
		p.applied = seq
		p.idle.Broadcast()
	}
}

// delivered marks round seq as handed on (a round that emitted nothing needs
// no mark: its replay hands on nothing either), recycles it, and lets a
// waiting checkpoint go on. The mark is written with the next record: a
// kill before it hands the round on again after the restart (counted), and
// gymspans drops what it already wrote. A round that is not settled (the
// next consumer refused part of it and the storage could not keep that
// part) is marked once the part is delivered or kept (redeliver.go).
func (p *gymProcessor) delivered(_ context.Context, seq uint64, r *round, settled bool) {
	emitted := r.emitted
	r.recycle()
	if p.jr != nil && emitted > 0 && settled {
		p.jr.mark(seq)
	}
	p.mu.Lock()
	p.inflight--
	if p.inflight == 0 {
		p.idle.Broadcast()
	}
	p.mu.Unlock()
}

// checkpointIfDue writes a checkpoint when the journal has grown by
// checkpointBytes, or checkpointEvery has passed, since the last one. It
// holds new rounds back until the rounds in flight are handed on, so the
// checkpoint follows only delivered rounds.
func (p *gymProcessor) checkpointIfDue(ctx context.Context) {
	jr := p.jr
	if jr == nil {
		return
	}
	p.mu.Lock()
	written := jr.bytes.Load()
	now := p.clock.Now()
	// A round whose refused output is only in memory (redeliver.go) must
	// stay replayable: no checkpoint may cover it.
	if p.shutdown || written == 0 || p.red.hasDebts() ||
		(written < max(checkpointBytes, checkpointsPerState*jr.checkpointSize) && now.Sub(jr.lastCheckpoint) < checkpointEvery) {
		p.mu.Unlock()
		return
	}
	p.quiesce = true
	for p.inflight > 0 {
		p.idle.Wait()
	}
	snap := p.eng.snapshot()
	seq := p.applied // 0 when no record was taken yet
	jr.dropMarks()   // every round so far is delivered: none is replayed
	jr.lastCheckpoint = now
	p.quiesce = false
	p.idle.Broadcast()
	p.mu.Unlock()

	// Written without the lock: records keep coming meanwhile.
	if err := jr.checkpoint(ctx, seq, snap); err != nil {
		p.storageFailed(ctx, err)
		return
	}
	jr.bytes.Add(-written)
	p.mu.Lock()
	jr.checkpointSize = int64(len(snap))
	p.mu.Unlock()
	p.tel.ProcessorGymStorageCheckpoints.Add(ctx, 1)
}

// storageFailed counts and logs (rate-limited) a write the storage refused.
func (p *gymProcessor) storageFailed(ctx context.Context, err error) {
	p.tel.ProcessorGymStorageErrors.Add(ctx, 1)
	p.diag.storageFailed(err)
}

// closeStorage empties the journal after a shutdown that handed everything
// on (the next start has nothing to replay), and closes the client.
func (p *gymProcessor) closeStorage(ctx context.Context, allDelivered bool) error {
	jr := p.jr
	if jr == nil {
		return nil
	}
	var err error
	if allDelivered {
		err = jr.reset(ctx)
	}
	return errors.Join(err, jr.client.Close(ctx))
}

// loadHeld queues what the held range kept of the batches the next consumer
// refused before the collector stopped (the first tick hands them on), and
// reads the range's header, which every later write extends.
func (p *gymProcessor) loadHeld(ctx context.Context) {
	bs, bad, err := p.jr.loadHeld(ctx)
	if err != nil {
		p.logger.Error("gym processor: the spans it held for redelivery cannot be read from its storage; they stay there",
			zap.String("storage", p.cfg.Storage.String()), zap.Error(err))
		p.tel.ProcessorGymStorageErrors.Add(ctx, 1)
		return
	}
	if bad != nil {
		p.logger.Error("gym processor: a batch it held for redelivery is corrupt in its storage and is dropped",
			zap.String("storage", p.cfg.Storage.String()), zap.Error(bad))
		p.tel.ProcessorGymStorageErrors.Add(ctx, 1)
	}
	if len(bs) == 0 {
		return
	}
	rd := p.red
	rd.mu.Lock()
	for _, b := range bs {
		rd.queue = append(rd.queue, b)
		rd.spans.Add(b.spans)
		rd.bytes.Add(b.bytes)
	}
	n := rd.spans.Load()
	rd.mu.Unlock()
	p.tel.ProcessorGymRedeliverySpans.Record(ctx, n)
	p.logger.Info("gym processor: recovered from its storage the spans the next consumer had refused; they are handed on again",
		zap.Int64("spans", n))
}
