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
// §4.7). Data flow: ConsumeTraces → model-call spans taken out of the batch
// (hold) → their rollouts' capture files read by offset (read) → joined
// (rolloutState.join, modelcall.Join) → annotated and put back in the batch
// → next; a span whose line is not there yet waits, and run's poll joins it
// later or lets it go at its deadline. Every span that enters leaves once:
// the batch without its waiting spans at once, each waiting span when it is
// joined, at capture_wait, at max_waiting_spans or at shutdown. One mutex
// guards all state; next is called without it.
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
	freed     []*waitingSpan // let go this round, not yet in its output
	buf       []byte
	lastLog   time.Time
	// round counts the calls (batches, polls): a rollout's file is read
	// once per round however many of its spans the round has; now is the
	// round's time.
	round uint64
	now   time.Time

	stop, done chan struct{}
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

func (p *captureProcessor) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	var c counts
	var seen modelcall.Span
	p.mu.Lock()
	now := p.newRound()
	var out []joined
	td.ResourceSpans().RemoveIf(func(rs ptrace.ResourceSpans) bool {
		res := rs.Resource().Attributes()
		serverType := stringAttr(res, gymconv.ServerTypeAttribute)
		service := gymconv.Service(res, p.cfg.ServiceAttributes)
		run := stringAttr(res, gymconv.RunAttribute)
		p.services.learn(service, serverType)
		rs.ScopeSpans().RemoveIf(func(ss ptrace.ScopeSpans) bool {
			ss.Spans().RemoveIf(func(span ptrace.Span) bool {
				r, kind := p.wants(span, service, serverType, &seen, &c)
				if r == nil {
					if kind == modelcall.NotModelCall {
						p.markRollout(span, &seen, res, &c)
					}
					return false
				}
				runKinds := p.runs.seen(run, kind, p.round)
				provider := p.providers.of(kind, service, &seen)
				if l := p.joinNow(r, kind, span, &c, &out); l != nil {
					if p.place(span, kind, runKinds, r.id, provider, l, false) {
						return false
					}
					p.waitForCall(p.hold(r, kind, runKinds, provider, rs, ss, span, now), l)
					return true
				}
				if !r.tail.exists {
					// No capture file: Gym captures nothing for this
					// rollout here (or not yet, which its export delay
					// makes rare); nothing to wait for.
					c.missed[missedNoFile]++
					return false
				}
				w := p.hold(r, kind, runKinds, provider, rs, ss, span, now)
				r.waiting[kind] = append(r.waiting[kind], w)
				r.nWaiting++
				return true
			})
			return ss.Spans().Len() == 0
		})
		return rs.ScopeSpans().Len() == 0
	})
	p.release(out, &c)
	p.expire(td, &c, func(w *waitingSpan) bool { return !w.deadline.After(now) }, missedWait)
	for p.queue.Len() > p.cfg.MaxWaitingSpans {
		p.let(p.queue.Front().Value.(*waitingSpan), td, &c, missedBound)
	}
	p.flushFreed(td)
	c.waiting = int64(p.queue.Len())
	p.mu.Unlock()
	p.tel.record(ctx, &c)
	if td.ResourceSpans().Len() == 0 {
		return nil
	}
	return p.next.ConsumeTraces(ctx, td)
}

// poll reads the capture files of the rollouts with waiting spans, joins,
// and passes on the spans joined and those whose wait ran out (all of them
// when final).
func (p *captureProcessor) poll(ctx context.Context, final bool) {
	var c counts
	td := ptrace.NewTraces()
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
		p.expire(td, &c, func(*waitingSpan) bool { return true }, missedShutdown)
	} else {
		p.expire(td, &c, func(w *waitingSpan) bool { return !w.deadline.After(now) }, missedWait)
	}
	p.flushFreed(td)
	p.files.closeIdle(now.Add(-openFileIdle))
	c.waiting = int64(p.queue.Len())
	p.mu.Unlock()
	p.tel.record(ctx, &c)
	if n := td.SpanCount(); n > 0 {
		if err := p.next.ConsumeTraces(ctx, td); err != nil {
			p.tel.ProcessorGymcaptureDownstreamFailedSpans.Add(ctx, int64(n))
			p.logger.Warn("The next consumer refused model-call spans released after their wait", zap.Int("spans", n), zap.Error(err))
		}
	}
}

// wants is the rollout whose capture a span is to be joined with, and the
// span's kind; nil for a span that is no model call, already joined (an
// earlier gymcapture, a replay), or in no rollout that may name a file.
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

// hold moves span out of its batch into a traces of its own, to wait until
// capture_wait after now.
func (p *captureProcessor) hold(r *rolloutState, kind modelcall.Kind, run *runKinds, provider string, rs ptrace.ResourceSpans, ss ptrace.ScopeSpans, span ptrace.Span, now time.Time) *waitingSpan {
	td := ptrace.NewTraces()
	rs2 := td.ResourceSpans().AppendEmpty()
	rs.Resource().CopyTo(rs2.Resource())
	rs2.SetSchemaUrl(rs.SchemaUrl())
	ss2 := rs2.ScopeSpans().AppendEmpty()
	ss.Scope().CopyTo(ss2.Scope())
	ss2.SetSchemaUrl(ss.SchemaUrl())
	moved := ss2.Spans().AppendEmpty()
	span.MoveTo(moved)
	w := &waitingSpan{td: td, span: moved, call: call(moved), kind: kind, rollout: r, run: run, provider: provider, deadline: now.Add(p.cfg.CaptureWait)}
	w.queued = p.queue.PushBack(w)
	return w
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
		case !r.add(l, p.cfg.MaxLinesPerRollout):
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

// release places the waiting spans that found their line: each leaves
// (flushFreed) or waits on for a better span of its call.
func (p *captureProcessor) release(out []joined, c *counts) {
	for _, j := range out {
		c.countJoined(j.how)
		w := j.w
		if p.place(w.span, w.kind, w.run, w.rollout.id, w.provider, j.l, false) {
			p.queue.Remove(w.queued)
			p.freed = append(p.freed, w)
		} else {
			p.waitForCall(w, j.l)
		}
	}
}

// flushFreed moves the spans let go this round into td.
func (p *captureProcessor) flushFreed(td ptrace.Traces) {
	for i, w := range p.freed {
		w.td.ResourceSpans().MoveAndAppendTo(td.ResourceSpans())
		p.freed[i] = nil
	}
	p.freed = p.freed[:0]
}

// expire lets the waiting spans go, in deadline order, while due says so.
func (p *captureProcessor) expire(td ptrace.Traces, c *counts, due func(*waitingSpan) bool, reason int) {
	for e := p.queue.Front(); e != nil && due(e.Value.(*waitingSpan)); e = p.queue.Front() {
		p.let(e.Value.(*waitingSpan), td, c, reason)
	}
}

// let lets a waiting span go: one joined to its line stands for its call
// unless a better span of it waits too (leaveCall); one without its line leaves without it,
// counted by reason, and stands for its call when it is of the best kind
// its run has (the call's other spans are not).
func (p *captureProcessor) let(w *waitingSpan, td ptrace.Traces, c *counts, reason int) {
	if w.line != nil {
		p.leaveCall(w)
		return
	}
	w.rollout.remove(w)
	p.queue.Remove(w.queued)
	c.missed[reason]++
	if w.kind >= w.run.best {
		annotateLineless(w.span.Attributes(), w.rollout.id, w.provider)
	}
	w.td.ResourceSpans().MoveAndAppendTo(td.ResourceSpans())
}

func stringAttr(m pcommon.Map, k string) string {
	if v, ok := m.Get(k); ok && v.Type() == pcommon.ValueTypeStr {
		return v.Str()
	}
	return ""
}
