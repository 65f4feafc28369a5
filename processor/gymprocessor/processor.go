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

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.uber.org/zap"

	"github.com/otelcol-gym/otelcol-gym/internal/credentials"
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

	// creds is the credentials rule, credLog names each key it removes once.
	creds   *credentials.Rule
	credLog *credentials.Log

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

	// red holds what the next consumer refused (redeliver.go);
	// pendingSpans and pendingBytes mirror the engine's held spans for
	// its bound check, which takes no lock.
	red                        *redelivery
	pendingSpans, pendingBytes atomic.Int64

	stop chan struct{}
	done chan struct{}
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
		red:    &redelivery{},

		creds:   cfg.Credentials.Rule(),
		credLog: credentials.NewLog(logger, credentialsMetric),
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

// tick hands on again what the next consumer refused, when its backoff has
// passed, and releases what is due now.
func (p *gymProcessor) tick(ctx context.Context) {
	p.retryRefused(ctx, false)
	if r, g, seq, ok := p.flushLocked(ctx); ok {
		settled := p.deliver(ctx, r, g, seq)
		p.delivered(ctx, seq, r, settled)
	}
}

// flushLocked is the timer's critical section; ok is false after shutdown,
// or when the storage could not record the tick (it is then not taken: a
// tick the journal lacks would make a replay decide otherwise).
func (p *gymProcessor) flushLocked(ctx context.Context) (*round, gauges, uint64, bool) {
	seq, now, err := p.record(ctx, recordTick, nil)
	if err != nil {
		p.storageFailed(ctx, err)
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
// deadline had passed, and emits everything (design §4.5), with one more
// attempt for what the next consumer refused before. What it still refuses
// stays in the storage for the next start; without storage it is lost, and
// the log says how much.
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
	settled := p.deliver(ctx, r, g, 0)
	r.recycle()
	p.retryRefused(ctx, true)
	journalDone, err := p.refusedAtShutdown()
	if serr := p.closeStorage(ctx, settled && journalDone); serr != nil {
		err = errors.Join(err, fmt.Errorf("gym processor: %w", serr))
	}
	return err
}

func (p *gymProcessor) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: true}
}

// ConsumeTraces indexes td, emits at once every span whose rollout is known
// (with whatever held spans they decide), and holds the rest. What the next
// consumer refuses is kept and handed on again (redeliver.go); while spans
// wait for that, a batch is refused at the pending bounds (atBound).
func (p *gymProcessor) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	if err := p.atBound(ctx); err != nil {
		return err // nothing of td was taken: the sender retries it
	}
	p.removeCredentials(ctx, td) // before anything records or reads td
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
	settled := p.deliver(ctx, r, g, seq)
	p.delivered(ctx, seq, r, settled)
	return nil
}

// consumeLocked is ConsumeTraces' critical section; ok is false after
// shutdown (td is then passed on as it is). With storage, the batch is
// recorded first, and a failure to record it is returned.
func (p *gymProcessor) consumeLocked(ctx context.Context, td ptrace.Traces, f *batchFacts, rec []byte) (*round, gauges, uint64, bool, error) {
	seq, now, err := p.record(ctx, recordBatch, rec)
	if err != nil {
		p.storageFailed(ctx, err)
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
		spans: int64(p.eng.core.Pending()),
		bytes: p.eng.core.PendingBytes(),
		index: int64(p.eng.core.Indexed()),
	}
	if p.jr != nil {
		g.storage = p.jr.checkpointSize + p.jr.bytes.Load()
	}
	p.pendingSpans.Store(g.spans)
	p.pendingBytes.Store(g.bytes)
	return g
}

// deliver sends a round's output on (handOn keeps what the next consumer
// refuses), records its metrics and logs its diagnostics. It runs without
// the lock, and reports whether the round (record seq) is settled: all of it
// taken by the next consumer or in the journal's held range.
func (p *gymProcessor) deliver(ctx context.Context, r *round, g gauges, seq uint64) bool {
	r.applyEdits(p.cfg.RolloutAttribute)
	r.assemble()
	out := r.out
	if p.cfg.PromoteToResource {
		out = promoteToResource(out, p.cfg.RolloutAttribute)
	}
	n := int64(out.SpanCount())
	settled := true
	if n > 0 {
		settled = p.handOn(ctx, out, seq)
	}
	r.emitted = n
	g.refused = p.red.spans.Load()
	p.tel.record(ctx, r, n, g)
	p.diag.report(r)
	return settled
}
