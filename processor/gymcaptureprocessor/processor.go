// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymcaptureprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymcaptureprocessor"

import (
	"bytes"
	"container/list"
	"context"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
	"github.com/otelcol-gym/otelcol-gym/internal/modelcall"
	"github.com/otelcol-gym/otelcol-gym/internal/timesource"
)

// captureProcessor joins model-call spans to Gym's capture lines (design
// §4.7). Data flow: ConsumeTraces → the model-call spans of the batch
// (wants) → their rollouts' capture files read by offset (read) → joined
// (rolloutState.join, modelcall.Join) → annotated in place → next; a span
// whose line is not there yet waits where it lies, and its batch waits with
// it in the caller (hold.go), until run's poll joins it or lets it go at its
// deadline. Every span that enters leaves once, with its batch: at once, or
// when its last waiting span is joined, at capture_wait, at
// max_waiting_spans or at shutdown. One mutex guards all state; next is
// called without it.
type captureProcessor struct {
	cfg    *Config
	next   consumer.Traces
	logger *zap.Logger
	tel    *telemetry
	clock  timesource.Source

	mu       sync.Mutex
	dirfd    int // the capture dir, -1 until it could be opened
	rollouts map[string]*rolloutState
	recent   *list.List // of *rolloutState, most recently used first
	files    openFiles
	queue    *list.List // of *waitingSpan, by deadline
	services serviceTypes
	runs     runTable
	agents   agentServices
	// providers is each model server's gen_ai.provider.name, told by the
	// host its calls to its LLM go to.
	providers providerTable
	buf       []byte
	lastLog   time.Time
	// round counts the calls (batches, polls): a rollout's file is read
	// once per round however many of its spans the round has; now is the
	// round's time.
	round uint64
	now   time.Time
	// capturesHere: a rollout's capture file has been seen in the dir, so
	// Gym writes its captures here (linewait.go).
	capturesHere bool

	stop, done chan struct{}
	// onWait, when set (tests), is called as a caller begins to wait.
	onWait func()
}

// errorLogEvery rate-limits the log of capture files that cannot be read.
const errorLogEvery = time.Minute

func newCaptureProcessor(set processor.Settings, cfg *Config, next consumer.Traces, clk timesource.Source) (*captureProcessor, error) {
	tel, err := newTelemetry(set.TelemetrySettings)
	if err != nil {
		return nil, fmt.Errorf("creating the gymcapture processor's metrics: %w", err)
	}
	return &captureProcessor{
		cfg: cfg, next: next, logger: set.Logger, tel: tel, clock: clk,
		dirfd: -1, rollouts: map[string]*rolloutState{}, recent: list.New(), queue: list.New(),
		files:    openFiles{lru: list.New(), max: cfg.MaxOpenFiles},
		services: serviceTypes{}, runs: runTable{}, agents: agentServices{}, providers: providerTable{}, buf: make([]byte, 256<<10),
	}, nil
}

func (p *captureProcessor) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: true}
}

func (p *captureProcessor) Start(context.Context, component.Host) error {
	p.mu.Lock()
	p.openDir()
	p.mu.Unlock()
	p.stop, p.done = make(chan struct{}), make(chan struct{})
	go p.run()
	return nil
}

// Shutdown joins what it can and lets every waiting span go.
func (p *captureProcessor) Shutdown(ctx context.Context) error {
	if p.stop != nil {
		close(p.stop)
		<-p.done
		p.stop = nil
	}
	p.poll(ctx, true)
	p.tel.Shutdown()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.files.closeAll()
	if p.dirfd >= 0 {
		_ = unix.Close(p.dirfd)
		p.dirfd = -1
	}
	return nil
}

func (p *captureProcessor) run() {
	tick, stop := p.clock.NewTicker(p.cfg.PollInterval)
	defer close(p.done)
	defer stop()
	for {
		select {
		case <-p.stop:
			return
		case <-tick:
			p.poll(context.Background(), false)
		}
	}
}

// ConsumeTraces joins the batch's model-call spans to their capture lines
// and hands the batch on, once none of its spans waits any more (hold.go):
// the next consumer's error is returned, and the caller keeps the spans.
func (p *captureProcessor) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	var c counts
	var seen modelcall.Span
	b := &waitingBatch{}
	p.mu.Lock()
	now := p.newRound()
	var out []joined
	for _, rs := range td.ResourceSpans().All() {
		res := rs.Resource().Attributes()
		serverType := stringAttr(res, gymconv.ServerTypeAttribute)
		service := gymconv.Service(res, p.cfg.ServiceAttributes)
		run := stringAttr(res, gymconv.RunAttribute)
		p.services.learn(service, serverType)
		for _, ss := range rs.ScopeSpans().All() {
			// Chat spans (chatspan.go) are appended to ss as calls are
			// stood for: the batch's own spans are the first n.
			spans := ss.Spans()
			for i, n := 0, spans.Len(); i < n; i++ {
				span := spans.At(i)
				r, kind := p.wants(span, service, serverType, &seen, &c)
				if r == nil {
					if kind == modelcall.NotModelCall {
						p.markRollout(span, &seen, res, &c)
					}
					continue
				}
				w := waitingSpan{span: span, scope: ss, kind: kind, rollout: r, run: p.runs.seen(run, kind, p.round), provider: p.providers.of(kind, service, &seen)}
				p.consumeCall(&w, now, b, &c, &out)
			}
		}
	}
	p.release(out, &c)
	p.expire(&c, dueBy(now), missedWait)
	for p.queue.Len() > p.cfg.MaxWaitingSpans {
		p.let(p.queue.Front().Value.(*waitingSpan), &c, missedBound)
	}
	b.seal()
	c.waiting = int64(p.queue.Len())
	p.mu.Unlock()
	p.tel.record(ctx, &c)
	p.await(ctx, b)
	if td.ResourceSpans().Len() == 0 {
		return nil
	}
	if err := p.next.ConsumeTraces(ctx, td); err != nil {
		p.tel.ProcessorGymcaptureDownstreamFailedSpans.Add(ctx, int64(td.SpanCount()))
		return err
	}
	return nil
}

// poll reads the capture files of the rollouts with waiting spans, joins,
// and lets go the spans whose wait ran out (all of them when final); their
// callers hand their batches on.
func (p *captureProcessor) poll(ctx context.Context, final bool) {
	var c counts
	p.mu.Lock()
	now := p.newRound()
	var out []joined
	seen := map[*rolloutState]bool{}
	for e := p.queue.Front(); e != nil; e = e.Next() {
		if r := e.Value.(*waitingSpan).rollout; !seen[r] {
			seen[r] = true
			p.read(r, true, &c)
			out = r.join(out)
		}
	}
	p.release(out, &c)
	if final {
		p.expire(&c, func(*waitingSpan) bool { return true }, missedShutdown)
	} else {
		p.expire(&c, dueBy(now), missedWait)
	}
	p.files.closeIdle(now.Add(-openFileIdle))
	c.waiting = int64(p.queue.Len())
	p.mu.Unlock()
	p.tel.record(ctx, &c)
}

// consumeCall joins a model-call span of the batch (w: a waitingSpan not
// yet waiting) to its line and places it (callspan.go); a span that finds
// no line, or is to wait for a better span of its call, waits in the batch
// (hold.go).
func (p *captureProcessor) consumeCall(w *waitingSpan, now time.Time, b *waitingBatch, c *counts, out *[]joined) {
	late := w.span.EndTimestamp().AsTime().Add(p.cfg.CaptureWait).Before(now)
	l := p.joinNow(w.rollout, w.kind, w.span, c, out)
	if w.rollout.tail.exists {
		p.capturesHere = true
	}
	if l != nil {
		if !p.place(w, l, late) {
			p.waitForCall(p.hold(w, now, b), l)
		}
		return
	}
	switch {
	case !w.rollout.tail.exists && !p.lineMayCome(w, now):
		// No capture file: Gym captures nothing for this rollout here, or
		// nothing at all here (linewait.go); nothing to wait for.
		c.missed[missedNoFile]++
	case late && !p.lineMayCome(w, now):
		// Ended long before it came (handed on again after an outage, or
		// after a restart), or Gym wrote past its call: its line came or
		// never will (linewait.go).
		p.leaveLineless(w, c, missedWait)
	default:
		w = p.hold(w, now, b)
		w.rollout.waiting[w.kind] = append(w.rollout.waiting[w.kind], w)
		w.rollout.nWaiting++
	}
}

// wants is the rollout whose capture a span is to be joined with, and the
// span's kind; nil for a span that is no model call, already joined (an
// earlier gymcapture, a replay), or in no rollout that may name a file. s
// is what was read of the span.
func (p *captureProcessor) wants(span ptrace.Span, service, serverType string, s *modelcall.Span, c *counts) (*rolloutState, modelcall.Kind) {
	kind := p.services.kindOf(span, service, serverType, s)
	if kind == modelcall.NotModelCall {
		return nil, kind
	}
	switch kind {
	case modelcall.Client:
		p.agents.learn(service)
	case modelcall.Upstream:
		p.providers.learn(service, modelcall.Provider(*s))
	}
	if _, done := span.Attributes().Get(gymconv.ModelCallIDAttribute); done {
		return nil, kind
	}
	id := stringAttr(span.Attributes(), p.cfg.RolloutAttribute)
	if !gymconv.SafeFileID(id) {
		c.missed[missedRollout]++
		return nil, kind
	}
	return p.rollout(id), kind
}

// rollout is the state of rollout id, made most recently used; the least
// recently used rollouts with no waiting span are forgotten past
// max_rollouts.
func (p *captureProcessor) rollout(id string) *rolloutState {
	if r, ok := p.rollouts[id]; ok {
		p.recent.MoveToFront(r.recent)
		return r
	}
	r := &rolloutState{id: id, file: id + ".capture.jsonl"}
	r.recent = p.recent.PushFront(r)
	p.rollouts[id] = r
	for e := p.recent.Back(); e != nil && p.recent.Len() > p.cfg.MaxRollouts; {
		prev := e.Prev()
		if old := e.Value.(*rolloutState); old.nWaiting == 0 {
			p.files.close(old)
			p.recent.Remove(e)
			delete(p.rollouts, old.id)
		}
		e = prev
	}
	return r
}

// joinNow joins span, still in its batch, to its capture line, after
// reading what the file got since the last read; a span that finds no line
// looks at the file's name again before it waits (the file may have been
// replaced). It returns the line (nil: none); waiting spans the new lines
// placed go to out.
func (p *captureProcessor) joinNow(r *rolloutState, kind modelcall.Kind, span ptrace.Span, c *counts, out *[]joined) *captureLine {
	p.read(r, false, c)
	sc := call(span)
	l, how := r.joinOne(kind, sc, out)
	if l == nil && r.checkRound != p.round {
		p.read(r, true, c)
		l, how = r.joinOne(kind, sc, out)
	}
	if l != nil {
		c.countJoined(how)
	}
	return l
}

// newRound starts a call's round and returns its time.
func (p *captureProcessor) newRound() time.Time {
	p.round++
	p.now = p.clock.Now()
	return p.now
}

// read takes the lines Gym appended to r's capture file since the last read,
// once a round, and once more when check asks for a look at the file's name
// (a file not open is looked up by name anyway).
func (p *captureProcessor) read(r *rolloutState, check bool, c *counts) {
	if (r.readRound == p.round && (!check || r.checkRound == p.round)) || !p.openDir() {
		return
	}
	r.readRound = p.round
	if check || !r.tail.isOpen {
		r.checkRound = p.round
	}
	oversized, err := r.tail.read(p.dirfd, r.file, check, p.cfg.MaxLineBytes, p.buf, func(line []byte) {
		if len(bytes.TrimSpace(line)) == 0 {
			return
		}
		l, ok := modelcall.ParseLine(line)
		switch {
		case !ok:
			c.lines[lineMalformed]++
		case !r.add(l, p.lineContent(line), p.cfg.MaxLinesPerRollout):
			c.lines[lineOverBound]++
		default:
			c.lines[lineKept]++
		}
	})
	p.files.used(r, p.now)
	c.lines[lineOversized] += int64(oversized)
	if err != nil {
		c.captureErrors++
		p.logRateLimited("A capture file could not be read; its model calls leave without its lines", err)
	}
}

// openDir opens the capture dir once it exists; reports whether it is open.
func (p *captureProcessor) openDir() bool {
	if p.dirfd >= 0 {
		return true
	}
	fd, err := unix.Open(p.cfg.CaptureDir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		p.logRateLimited("The capture dir cannot be opened (yet)", err)
		return false
	}
	p.dirfd = fd
	return true
}

func (p *captureProcessor) logRateLimited(msg string, err error) {
	if now := p.clock.Now(); now.Sub(p.lastLog) >= errorLogEvery {
		p.lastLog = now
		p.logger.Warn(msg, zap.String("capture_dir", p.cfg.CaptureDir), zap.Error(err))
	}
}

func stringAttr(m pcommon.Map, k string) string {
	if v, ok := m.Get(k); ok && v.Type() == pcommon.ValueTypeStr {
		return v.Str()
	}
	return ""
}
