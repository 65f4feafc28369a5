// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.uber.org/zap"

	"github.com/otelcol-gym/otelcol-gym/internal/timesource"
)

// gymProcessor gives every span its rollout and every rollout its own trace
// (design §4.1–§4.3, §4.5); doc.go draws its data flow.
//
// All state lives in one engine behind one mutex, and only what needs that
// state runs under it. Before the lock, prepare reads a batch's facts
// (evidence, original trace ids, index hashes, resource keys) from the batch
// and the configuration alone. Under it, the engine indexes and decides, and
// records each leaving span's rewrite as an edit. After it, deliver writes
// the edits into the spans, moves released spans into the output, and calls
// next: a slow or re-entrant consumer never blocks other batches, and the
// pdata work of concurrent callers runs in parallel. Spans a round emits
// belong to that round's output only: once the lock is released nobody else
// touches them.
type gymProcessor struct {
	id     component.ID
	cfg    *Config
	next   consumer.Traces
	logger *zap.Logger
	tel    *telemetry
	clock  clock
	diag   *diagnostics

	mu       sync.Mutex
	eng      *engine
	shutdown bool

	// With storage (design §4.6): the journal, set by Start before any span
	// arrives; rounds computed and not yet handed on; and quiesce, set while
	// a checkpoint waits for them, which holds back new rounds (crash.go).
	// applied is the sequence of the last record the engine has taken:
	// records are written outside the lock and taken in their order.
	jr       *journal
	inflight int
	quiesce  bool
	applied  uint64
	idle     *sync.Cond // on mu: inflight dropped, quiesce ended, or a record was taken

	stop chan struct{}
	done chan struct{}
}

func newGymProcessor(set processor.Settings, cfg *Config, next consumer.Traces) (*gymProcessor, error) {
	return newGymProcessorWithClock(set, cfg, next, timesource.Real{})
}

func newGymProcessorWithClock(set processor.Settings, cfg *Config, next consumer.Traces, clk clock) (*gymProcessor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("gym processor: %w", err)
	}
	eng, err := newEngine(cfg)
	if err != nil {
		return nil, fmt.Errorf("gym processor: %w", err)
	}
	tel, err := newTelemetry(set.TelemetrySettings)
	if err != nil {
		return nil, fmt.Errorf("gym processor: creating metrics: %w", err)
	}
	logger := set.Logger
	if logger == nil {
		logger = zap.NewNop()
	}
	p := &gymProcessor{
		id:     set.ID,
		cfg:    cfg,
		next:   next,
		logger: logger,
		tel:    tel,
		clock:  clk,
		diag:   newDiagnostics(logger, clk),
		eng:    eng,
	}
	p.idle = sync.NewCond(&p.mu)
	return p, nil
}

// Start opens the storage and recovers what it holds (crash.go), when the
// processor has one, and launches the timer goroutine.
func (p *gymProcessor) Start(ctx context.Context, host component.Host) error {
	if err := p.startStorage(ctx, host); err != nil {
		return fmt.Errorf("gym processor: %w", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stop != nil || p.shutdown {
		return nil
	}
	p.stop = make(chan struct{})
	p.done = make(chan struct{})
	ticks, stopTicker := p.clock.NewTicker(tickPeriod(p.cfg.Settle))
	go p.run(ticks, stopTicker, p.stop, p.done)
	return nil
}

func (p *gymProcessor) run(ticks <-chan time.Time, stopTicker func(), stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	defer stopTicker()
	for {
		select {
		case <-stop:
			return
		case <-ticks:
			p.tick(context.Background())
			p.checkpointIfDue(context.Background())
		}
	}
}

// tick releases what is due now.
func (p *gymProcessor) tick(ctx context.Context) {
	if r, g, seq, ok := p.flushLocked(ctx); ok {
		_ = p.deliver(ctx, r, g)
		p.delivered(ctx, seq, r)
	}
}

// flushLocked is the timer's critical section; ok is false after shutdown,
// or when the storage could not record the tick (it is then not taken: a
// tick the journal lacks would make a replay decide otherwise).
func (p *gymProcessor) flushLocked(ctx context.Context) (*round, gauges, uint64, bool) {
	seq, now, err := p.record(ctx, recordTick, nil)
	if err != nil {
		p.diag.storageFailed(err)
		return nil, gauges{}, 0, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.takeTurnLocked(seq) {
		return nil, gauges{}, 0, false
	}
	if p.jr == nil {
		now = p.clock.Now().UnixNano()
	}
	r := p.eng.flush(now, false)
	p.endTurnLocked(seq)
	return r, p.gaugesLocked(), seq, true
}

// Shutdown stops the timer, takes every pending decision as if every
// deadline had passed, and emits everything (design §4.5).
func (p *gymProcessor) Shutdown(ctx context.Context) error {
	p.mu.Lock()
	stop, done := p.stop, p.done
	p.stop = nil
	p.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
	p.mu.Lock()
	if p.shutdown {
		p.mu.Unlock()
		return nil
	}
	p.shutdown = true
	for p.inflight > 0 {
		p.idle.Wait()
	}
	r := p.eng.flush(p.clock.Now().UnixNano(), true)
	g := p.gaugesLocked()
	p.mu.Unlock()
	err := p.deliver(ctx, r, g)
	r.recycle()
	if serr := p.closeStorage(ctx, err == nil); serr != nil {
		err = errors.Join(err, fmt.Errorf("gym processor: %w", serr))
	}
	return err
}

func (p *gymProcessor) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: true}
}

// ConsumeTraces indexes td, emits at once every span whose rollout is known
// (with whatever held spans they decide), and holds the rest. An error of
// the next consumer is returned, logged and counted.
func (p *gymProcessor) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	var rec []byte
	if p.jr != nil {
		// The batch as it arrived, for the journal (the engine rewrites td).
		b, err := batchMarshaler.MarshalTraces(td)
		if err != nil {
			return fmt.Errorf("gym processor storage: encoding a batch: %w", err)
		}
		rec = b
	}
	f := p.eng.prepare(td) // without the lock: it reads td and the configuration only
	defer f.release()
	r, g, seq, ok, err := p.consumeLocked(ctx, td, f, rec)
	if err != nil {
		return err // nothing of td was taken: the sender may retry it
	}
	if !ok {
		return p.next.ConsumeTraces(ctx, td)
	}
	err = p.deliver(ctx, r, g)
	p.delivered(ctx, seq, r)
	return err
}

// consumeLocked is ConsumeTraces' critical section; ok is false after
// shutdown (td is then passed on as it is). With storage, the batch is
// recorded first, and a failure to record it is returned.
func (p *gymProcessor) consumeLocked(ctx context.Context, td ptrace.Traces, f *batchFacts, rec []byte) (*round, gauges, uint64, bool, error) {
	seq, now, err := p.record(ctx, recordBatch, rec)
	if err != nil {
		p.diag.storageFailed(err)
		return nil, gauges{}, 0, false, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.takeTurnLocked(seq) {
		return nil, gauges{}, 0, false, nil
	}
	if p.jr == nil {
		now = p.clock.Now().UnixNano()
	}
	r := p.eng.consume(td, f, now)
	p.endTurnLocked(seq)
	return r, p.gaugesLocked(), seq, true, nil
}

func (p *gymProcessor) gaugesLocked() gauges {
	g := gauges{
		spans: int64(len(p.eng.heap)),
		bytes: p.eng.pendingBytes,
		index: int64(p.eng.idx.len()),
	}
	if p.jr != nil {
		g.storage = p.jr.checkpointSize + p.jr.bytes.Load()
	}
	return g
}

// deliver sends a round's output on, records its metrics and logs its
// diagnostics. It runs without the lock.
func (p *gymProcessor) deliver(ctx context.Context, r *round, g gauges) error {
	r.applyEdits(p.cfg.RolloutAttribute)
	r.assemble()
	out := r.out
	if p.cfg.PromoteToResource {
		out = promoteToResource(out, p.cfg.RolloutAttribute)
	}
	n := int64(out.SpanCount())
	var errs []error
	var failed int64
	if n > 0 {
		// A large release goes on in bounded batches (see maxEmitSpans);
		// each batch that fails is counted, and the others still go.
		for _, b := range splitTraces(out, maxEmitSpans) {
			k := int64(b.SpanCount())
			if e := p.next.ConsumeTraces(ctx, b); e != nil {
				failed += k
				errs = append(errs, e)
			}
		}
	}
	var err error
	if failed > 0 {
		err = errors.Join(errs...)
		p.tel.ProcessorGymDownstreamFailedSpans.Add(ctx, failed)
		p.diag.downstreamFailed(failed, err)
		err = fmt.Errorf("gym processor: next consumer refused %d of %d spans: %w", failed, n, err)
	}
	r.emitted = n
	p.tel.record(ctx, r, n, g)
	p.diag.report(r)
	return err
}
