// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import (
	"cmp"
	"container/heap"
	"math"
	"slices"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-gym/otelcol-gym/internal/bounded"
	"github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/evidence"
	"github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/split"
)

// maxWalk bounds every walk up a parent chain (cycles, very deep chains).
const maxWalk = 4096

// engine holds every piece of the processor's state. It is not safe for
// concurrent use: the processor serializes calls under its mutex. Times are
// unix nanoseconds taken from the processor's clock.
type engine struct {
	cfg      *Config
	ev       *evidence.Finder
	sm       *serviceMap
	jobNames map[string]struct{}
	split    bool

	dl deadlines

	idx          spanIndex
	fifo         nodeQueue
	heap         pendingHeap
	pendingBytes int64
	seq          uint64
	indexCap     int
	tracePending map[pcommon.TraceID]int32
	jobWait      map[pcommon.TraceID][]*node
	leakPending  map[*node][]*node // absent parent → requests waiting for its verdict (leak.go)

	procs *bounded.Table[string, *procState]
	runs  *bounded.Table[string, *runState]

	sp *split.Split // the split's tables and memos (§4.3)

	now int64
	r   *round

	spare []*node // unused fresh nodes from prepare (see newNode)

	// Buffers of flush, kept between ticks.
	due      []*heldSpan
	dueOrder []attemptOrder

	// The span being classified where it lies in the incoming batch.
	cur     *node
	curSpan ptrace.Span
	curInfo *resInfo
	curHeld bool
	curRS   ptrace.ResourceSpans
	curSS   ptrace.ScopeSpans
	curOrg  *origin
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
		cfg:          cfg,
		ev:           ev,
		sm:           newServiceMap(cfg),
		jobNames:     make(map[string]struct{}, len(cfg.JobSpanNames)),
		split:        cfg.Split.Enabled,
		dl:           newDeadlines(cfg),
		idx:          newSpanIndex(),
		indexCap:     cfg.MaxPendingSpans,
		tracePending: make(map[pcommon.TraceID]int32),
		jobWait:      make(map[pcommon.TraceID][]*node),
		procs:        newProcTable(),
		runs:         newRunTable(cfg),
		sp: split.New(split.Config{
			MaxJobLinks: cfg.Split.MaxJobLinks, MaxTrackedJobs: cfg.Split.MaxTrackedJobs,
			MaxTrackedRoots: cfg.Split.MaxTrackedRoots, JobTTL: int64(cfg.Split.JobTTL),
		}),
	}
	for _, n := range cfg.JobSpanNames {
		e.jobNames[n] = struct{}{}
	}
	return e, nil
}

func (e *engine) begin(out ptrace.Traces, now int64) {
	e.now = now
	e.r = newRound(out)
}

func (e *engine) end() *round {
	r := e.r
	r.linksMissed += e.sp.TakeCounts().LinksMissed
	e.r = nil
	return r
}

// flush takes every decision whose deadline is at or before limit and emits
// what they release. With shutdown, limit is +inf and releases count as
// shutdown.
func (e *engine) flush(now int64, shutdown bool) *round {
	e.begin(ptrace.NewTraces(), now)
	limit := now
	relReason := reasonWait
	if shutdown {
		limit = math.MaxInt64
		relReason = reasonShutdown
	}
	e.checkRuns(shutdown)
	for {
		batch := e.due[:0]
		minPhase := uint8(math.MaxUint8)
		for len(e.heap) > 0 && e.heap[0].deadline <= limit {
			hs := heap.Pop(&e.heap).(*heldSpan)
			batch = append(batch, hs)
			minPhase = min(minPhase, hs.phase)
		}
		if len(batch) == 0 {
			break
		}
		// Earlier attempts first, so a retry finds its previous attempt's root.
		keyed := e.dueOrder[:0]
		for _, hs := range batch {
			if hs.phase == minPhase {
				keyed = append(keyed, attemptOrder{attempt: split.AttemptIndex(hs.n.candidate()), hs: hs})
			} else {
				heap.Push(&e.heap, hs)
			}
		}
		clear(batch)
		e.due = batch[:0]
		slices.SortFunc(keyed, func(a, b attemptOrder) int {
			if a.attempt != b.attempt {
				return cmp.Compare(a.attempt, b.attempt)
			}
			return cmp.Compare(a.hs.seq, b.hs.seq)
		})
		for _, k := range keyed {
			hs := k.hs
			if hs.n.held != hs || hs.heapIdx >= 0 {
				continue // left, or re-armed by an earlier decision of this pass
			}
			e.expire(hs, relReason)
		}
		clear(keyed)
		e.dueOrder = keyed[:0]
	}
	if cap(e.due) > maxKeptDue {
		e.due, e.dueOrder = nil, nil // after a huge flush (shutdown, a bound)
	}
	e.sp.Expire(now)
	e.enforceIndexBounds()
	return e.end()
}

// maxKeptDue bounds the flush buffers kept between ticks.
const maxKeptDue = 1 << 14

type attemptOrder struct {
	attempt int
	hs      *heldSpan
}

// candidate is the rollout a node has or would take upward.
func (n *node) candidate() string {
	if n.rollout != "" {
		return n.rollout
	}
	return n.below.id
}
