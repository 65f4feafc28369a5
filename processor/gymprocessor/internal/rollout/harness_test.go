// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package rollout

import (
	"fmt"
	"time"

	"github.com/otelcol-gym/otelcol-gym/internal/gymtest"
)

// A core driven by spans named in words, with an owner that records what
// the core tells it.

// testConfig is the gym processor's default.
func testConfig() Config {
	return Config{
		Settle: 5 * time.Second, Wait: 30 * time.Second, RolloutWait: 2 * time.Hour,
		MaxPendingSpans: 1_000_000, MaxPendingBytes: 512 << 20, MaxTrackedRuns: 1024,
		Split: true, AttemptOrder: func(string) int { return 0 },
	}
}

// span describes one span: its id, its parent's ("" for none), its trace,
// and what it says.
type span struct {
	id, parent, trace string
	evidence          string
	job               bool
	localRequest      bool
	start, end        int64
}

func spanID(name string) [8]byte { return gymtest.SpanID(name) }

func traceID(name string) [16]byte { return gymtest.TraceID(name) }

// shutdownSpans are a job span, a root below it, and a span whose parent
// never comes: what a shutdown must let go.
func shutdownSpans() []span {
	return []span{
		{id: "job", trace: "t", job: true},
		{id: "root", parent: "job", trace: "t"},
		{id: "r", parent: "root", trace: "t", evidence: "1-0"},
		{id: "orphan", parent: "absent", trace: "t"},
	}
}

// recorder is an Owner that records the core's events; decided and rooted,
// when set, let a test act as a part.
type recorder struct {
	c       *Core
	cur     string          // the name of the span arriving now
	held    map[Slot]string // what is in each slot
	names   map[Key]string  // span names by key
	left    []Departure     // every departure, in order
	leftBy  map[string]Departure
	decided func(n *Node) bool
	rooted  func(n *Node, run *Run, cut bool) bool
}

func newRecorder(cfg Config) *recorder {
	o := &recorder{held: map[Slot]string{}, names: map[Key]string{}, leftBy: map[string]Departure{}}
	o.c = New(cfg, o)
	return o
}

func (o *recorder) Hold(s Slot) int64 {
	o.held[s] = o.cur
	return 100
}

func (o *recorder) TakeCopy(Slot) bool { return false }
func (o *recorder) Arrived(*Node)      {}

func (o *recorder) Decided(n *Node, _ *Run) bool {
	if o.decided != nil {
		return o.decided(n)
	}
	return false
}

func (o *recorder) Rooted(n *Node, run *Run, cut bool) bool {
	if o.rooted != nil {
		return o.rooted(n, run, cut)
	}
	return false
}

func (o *recorder) Left(d Departure) {
	name := o.names[d.Key]
	if d.Slot != Current {
		name = o.held[d.Slot]
		delete(o.held, d.Slot)
	}
	if _, dup := o.leftBy[name]; dup && !d.Unindexed {
		panic(fmt.Sprintf("%s left twice", name))
	}
	o.left = append(o.left, d)
	o.leftBy[name] = d
}

func (o *recorder) facts(s span) Facts {
	k := Key{Trace: traceID(s.trace), Span: spanID(s.id)}
	f := Facts{Key: k, Hash: o.c.Hasher().Hash(k), Evidence: s.evidence, Job: s.job, LocalRequest: s.localRequest, Start: s.start, End: s.end}
	if s.parent != "" {
		f.Parent = spanID(s.parent)
		f.ParentHash = o.c.Hasher().Hash(Key{Trace: k.Trace, Span: f.Parent})
	}
	o.names[k] = s.id
	return f
}

// arrive takes spans through the core at now, in order, from run; it
// reports which were held.
func (o *recorder) arrive(now int64, run string, spans ...span) []bool {
	o.c.Begin(now)
	r := o.c.Run(run, "svc", false)
	held := make([]bool, len(spans))
	for i, s := range spans {
		f := o.facts(s)
		o.cur = s.id
		held[i] = o.c.Arrive(&f, r)
	}
	o.c.End()
	return held
}

// restart tells the core at now that the collector started again.
func (o *recorder) restart(now int64) { o.c.Restarted(now) }

// tick runs the timer at now.
func (o *recorder) tick(now int64, shutdown bool) {
	o.c.Begin(now)
	o.c.Flush(shutdown)
	o.c.End()
}

// rollout is where a span left: its rollout, or "-" for none, or "" when it
// has not left.
func (o *recorder) rollout(id string) string {
	d, ok := o.leftBy[id]
	switch {
	case !ok:
		return ""
	case d.Rollout == "":
		return "-"
	default:
		return d.Rollout
	}
}

const sec = int64(time.Second)
