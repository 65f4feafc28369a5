// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package repair

import (
	"encoding/hex"
	"time"

	"github.com/otelcol-gym/otelcol-gym/internal/gymtest"

	"github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/rollout"
	"github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/split"
)

// The repair driven through a real rollout core, by spans named in words;
// the owner hands the core's events to the repair, as the processor does,
// and records each leaving span's plan.

type origin struct{ service string }

func (o *origin) Service() string { return o.service }

// tspan is one span: its core facts in words, and its repair facts.
type tspan struct {
	id, parent, trace, evidence string
	s                           Span
}

type owner struct {
	c      *rollout.Core
	r      *Repair
	ids    *split.Split
	cur    *tspan
	held   map[rollout.Slot]*tspan
	names  map[rollout.Key]*tspan
	plans  map[string]Plan
	order  []string // names, in the order they left
	run    *rollout.Run
	config Config
}

func newOwner(cfg Config) *owner {
	o := &owner{held: map[rollout.Slot]*tspan{}, names: map[rollout.Key]*tspan{}, plans: map[string]Plan{}, config: cfg}
	o.c = rollout.New(rollout.Config{
		Settle: 5 * time.Second, Wait: 30 * time.Second, RolloutWait: 2 * time.Hour,
		MaxPendingSpans: 1000, MaxPendingBytes: 1 << 20, Split: cfg.Split, AttemptOrder: split.AttemptIndex,
	}, o)
	o.ids = split.New(split.Config{MaxJobLinks: 8, MaxTrackedJobs: 8, MaxTrackedRoots: 64, JobTTL: int64(time.Hour)})
	o.r = New(cfg, o.c, o.ids)
	return o
}

func (o *owner) Hold(s rollout.Slot) int64  { o.held[s] = o.cur; return 100 }
func (o *owner) TakeCopy(rollout.Slot) bool { return false }
func (o *owner) Arrived(n *rollout.Node)    { o.r.Arrived(n, &o.cur.s) }

func (o *owner) Decided(n *rollout.Node, _ *rollout.Run) bool {
	sp := o.cur
	if s := n.Slot(); s != rollout.Current {
		sp = o.held[s]
	}
	return o.r.Decided(n, &sp.s, o.run.ID())
}

func (o *owner) Rooted(*rollout.Node, *rollout.Run, bool) bool { return false }

func (o *owner) Left(d rollout.Departure) {
	sp := o.names[d.Key]
	if d.Slot != rollout.Current {
		sp = o.held[d.Slot]
		delete(o.held, d.Slot)
	}
	tid := d.Key.Trace
	if d.Rollout != "" && o.config.Split {
		tid = o.ids.TraceID(d.Run.ID(), d.Key.Trace, d.Rollout)
	}
	if d.Unindexed || d.PassedThrough {
		o.plans[sp.id] = o.r.Unindexed(&sp.s)
	} else {
		o.plans[sp.id] = o.r.Left(&d, &sp.s, tid)
	}
	o.order = append(o.order, sp.id)
}

func id8(name string) [8]byte { return gymtest.SpanID(name) }

func id16(name string) [16]byte { return gymtest.TraceID(name) }

func (o *owner) arrive(now int64, spans ...*tspan) {
	o.c.Begin(now)
	o.run = o.c.Run("run", "svc", false)
	for _, sp := range spans {
		k := rollout.Key{Trace: id16(sp.trace), Span: id8(sp.id)}
		f := rollout.Facts{Key: k, Hash: o.c.Hasher().Hash(k), Evidence: sp.evidence}
		if sp.parent != "" {
			f.Parent = id8(sp.parent)
			f.ParentHash = o.c.Hasher().Hash(rollout.Key{Trace: k.Trace, Span: f.Parent})
		}
		sp.s.NoParent = sp.parent == ""
		o.names[k] = sp
		o.cur = sp
		o.c.Arrive(&f, o.run)
	}
	o.c.End()
}

func (o *owner) tick(now int64) {
	o.c.Begin(now)
	o.c.Flush(false)
	o.c.End()
}

func (o *owner) left(id string) bool {
	_, ok := o.plans[id]
	return ok
}

func hexOf(id [16]byte) string { return hex.EncodeToString(id[:]) }

const sec = int64(time.Second)
