// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import (
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-gym/otelcol-gym/internal/bounded"
	"github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/evidence"
	"github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/repair"
	"github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/rollout"
	"github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/split"
)

// engine is the processor's state behind its lock: the rollout core, which
// decides, the parts it tells what it decides (the split, the service-map
// repair), and what the core does not hold, the spans' data (held.go). It
// turns the core's events into the rewrites of leaving spans (events.go),
// and a round's output is written after the lock (edit.go, round.go). It is
// not safe for concurrent use. Times are unix nanoseconds.
type engine struct {
	cfg      *Config
	ev       *evidence.Finder
	jobNames map[string]struct{}
	hasher   rollout.Hasher // read before the lock (prepare)

	core   *rollout.Core
	split  *split.Split
	repair *repair.Repair
	held   heldSpans
	procs  *bounded.Table[string, *procState]

	now int64
	r   *round
	cur current
}

// current is the span arriving now, where it lies in its batch.
type current struct {
	span  ptrace.Span
	facts *spanFacts
	info  *resInfo
	rs    ptrace.ResourceSpans
	ss    ptrace.ScopeSpans
	org   *origin // the scope's origin, once a span of it was held
}

func newEngine(cfg *Config) (*engine, error) {
	ev, err := evidence.New(evidence.Config{
		Attribute: cfg.RolloutAttribute, URLAttributes: cfg.URLAttributes, URLPrefix: cfg.URLPrefix,
		Pattern: cfg.RolloutIDPattern, ModelRoutes: cfg.ModelRoutes,
	})
	if err != nil {
		return nil, err
	}
	e := &engine{
		cfg:      cfg,
		ev:       ev,
		jobNames: make(map[string]struct{}, len(cfg.JobSpanNames)),
		procs:    newProcTable(),
		split: split.New(split.Config{
			MaxJobLinks: cfg.Split.MaxJobLinks, MaxTrackedJobs: cfg.Split.MaxTrackedJobs,
			MaxTrackedRoots: cfg.Split.MaxTrackedRoots, JobTTL: int64(cfg.Split.JobTTL),
		}),
	}
	for _, n := range cfg.JobSpanNames {
		e.jobNames[n] = struct{}{}
	}
	e.core = rollout.New(rollout.Config{
		Settle: cfg.Settle, Wait: cfg.Wait, RolloutWait: cfg.RolloutWait,
		MaxPendingSpans: cfg.MaxPendingSpans, MaxPendingBytes: cfg.MaxPendingBytes,
		MaxTrackedRuns: cfg.Split.MaxTrackedJobs, Split: cfg.Split.Enabled,
		AttemptOrder: split.AttemptIndex,
	}, e)
	e.hasher = e.core.Hasher()
	e.repair = repair.New(repair.Config{
		Peers: cfg.ServiceMap.Enabled, Synthesize: cfg.ServiceMap.SynthesizeClientSpans, Split: cfg.Split.Enabled,
		Configured: cfg.ServiceMap.Peers, MaxRoots: cfg.Split.MaxTrackedRoots,
	}, e.core, e.split)
	return e, nil
}

func (e *engine) begin(out ptrace.Traces, now int64) {
	e.now = now
	e.r = newRound(out)
	e.core.Begin(now)
}

// end ends a round and returns it with the parts' counts.
func (e *engine) end() *round {
	e.core.End()
	r := e.r
	e.r = nil
	r.core = e.core.TakeCounts()
	r.repair = e.repair.TakeCounts()
	r.split = e.split.TakeCounts()
	return r
}

// consume takes every span of td through the core, rewrites in place the
// spans that leave, moves the others into the held slots, and appends to td
// the held spans this batch let go. td is the round's output; f holds its
// facts, read by prepare.
func (e *engine) consume(td ptrace.Traces, f *batchFacts, now int64) *round {
	e.begin(td, now)
	rss := td.ResourceSpans()
	// Spans end, and are exported, children first: taking each batch from
	// its end meets parents before children, so most children are decided
	// downward where they lie instead of being held.
	for i := rss.Len() - 1; i >= 0; i-- {
		rs := rss.At(i)
		rf := &f.res[i]
		var info *resInfo
		sss := rs.ScopeSpans()
		for j := sss.Len() - 1; j >= 0; j-- {
			ss := sss.At(j)
			spans := ss.Spans()
			if spans.Len() == 0 {
				continue
			}
			if info == nil {
				info = e.resourceInfo(rf)
			}
			e.cur = current{rs: rs, ss: ss, info: info}
			facts := f.spans[f.scope[rf.scope+j]:][:spans.Len()]
			if e.arriveAll(spans, facts) {
				k := 0
				spans.RemoveIf(func(ptrace.Span) bool {
					h := facts[k].held
					k++
					return h
				})
			}
		}
	}
	// Drop references into td: it belongs to the next consumer now.
	e.cur = current{}
	rss.RemoveIf(func(rs ptrace.ResourceSpans) bool {
		rs.ScopeSpans().RemoveIf(func(ss ptrace.ScopeSpans) bool { return ss.Spans().Len() == 0 })
		return rs.ScopeSpans().Len() == 0
	})
	return e.end()
}

// arriveAll takes the spans of one ScopeSpans through the core, from the
// last, and reports whether any of them left the batch.
func (e *engine) arriveAll(spans ptrace.SpanSlice, facts []spanFacts) bool {
	anyHeld := false
	for k := spans.Len() - 1; k >= 0; k-- {
		sf := &facts[k]
		sf.repair.Service = e.cur.info.service
		e.cur.span, e.cur.facts = spans.At(k), sf
		if e.core.Arrive(&sf.core, e.cur.info.run) {
			sf.held = true
			anyHeld = true
		}
	}
	return anyHeld
}

// flush takes every decision whose deadline is at or before now (with
// shutdown, every one) and returns what they let go.
func (e *engine) flush(now int64, shutdown bool) *round {
	e.begin(ptrace.NewTraces(), now)
	e.core.Flush(shutdown)
	e.split.Expire(now)
	return e.end()
}
