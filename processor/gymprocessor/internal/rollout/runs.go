// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package rollout // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/rollout"

import (
	"strings"

	"github.com/otelcol-gym/otelcol-gym/internal/bounded"
)

// What the core knows about the runs spans come from (resource nemo.run.id)
// and what a run has shown (design §4.2). How long a span waits never
// depends on it, except that a run that has shown that Gym's observability
// is off passes through.

// MinTrackedRuns is the least bound of the run table. A run with held spans
// is never forgotten (they point at it); the oldest idle ones go first.
const MinTrackedRuns = 1024

// Run is what the core knows about one run.
type Run struct {
	id        string
	firstSeen int64
	held      int32 // its spans in the pending store
	// evidence: a span of the run showed direct rollout evidence.
	evidence bool
	// observabilityOff: before any evidence, the run showed that Gym's
	// observability is off (Facts.ObservabilityOff).
	observabilityOff bool
	// checked: the no-evidence diagnostic, wait after the first span, is done.
	checked bool
	// passThrough: spans of the run leave at once, unchanged, until direct
	// evidence appears in it.
	passThrough bool
	service     string
	serviceOrch bool
	manyService bool
}

// ID is the run's id (nemo.run.id), "" for spans without one.
func (r *Run) ID() string { return r.id }

func newRunTable(capacity int) *bounded.Table[string, *Run] {
	t := bounded.New[string, *Run](max(MinTrackedRuns, capacity))
	t.Pin(func(r *Run) bool { return r.held > 0 })
	return t
}

// Run finds (or starts) the run id, which a resource of service sent
// (orchestrator: its service is Gym's orchestrator). Call it once per
// incoming resource, in the round.
func (c *Core) Run(id, service string, orchestrator bool) *Run {
	run, ok := c.runs.Get(id)
	if ok {
		c.runs.Touch(id)
	} else {
		id = strings.Clone(id) // kept: not a view into the batch
		run = &Run{id: id, firstSeen: c.now}
		c.runs.Put(id, run)
	}
	switch {
	case run.service == "" && !run.manyService:
		run.service = strings.Clone(service)
		run.serviceOrch = orchestrator
	case run.service != service:
		run.manyService = true
	}
	return run
}

// observeRun notes what an arriving span shows of its run: direct
// evidence, or, before any evidence, that Gym's observability is off.
func (c *Core) observeRun(run *Run, f *Facts) {
	if f.Evidence != "" {
		run.evidence = true
		run.passThrough = false // a mixed run
	} else if f.ObservabilityOff && !run.evidence {
		c.observabilityOff(run)
	}
}

// observabilityOff records that run showed, before any evidence, that
// Gym's observability is off: no rollout id will come. Its pending spans
// leave now, as they stand, and its later spans pass through until direct
// evidence appears in it.
func (c *Core) observabilityOff(run *Run) {
	if run.passThrough {
		return
	}
	if !run.observabilityOff {
		run.observabilityOff = true
		c.problem(ProblemObservabilityOff, run)
	}
	run.passThrough = true
	c.releaseRun(run, ReasonObservabilityOff)
}

func (c *Core) problem(p Problem, run *Run) {
	c.counts.Problems[p]++
	c.counts.ProblemRuns[p] = append(c.counts.ProblemRuns[p], run.id)
}

// checkRuns reports, wait after a run's first span, the setup problems a
// run shows by then: only orchestrator spans, or neither evidence nor that
// observability is off. Its spans keep waiting by structure.
func (c *Core) checkRuns(shutdown bool) {
	c.runs.Range(func(_ string, run *Run) bool {
		if run.checked || (!shutdown && c.now < c.dl.noEvidenceCheck(run)) {
			return true
		}
		run.checked = true
		if !run.manyService && run.serviceOrch {
			c.counts.Problems[ProblemOnlyOrchestrator]++
		}
		if !run.evidence && !run.observabilityOff {
			c.problem(ProblemNoEvidence, run)
		}
		return true
	})
}

// releaseRun makes every span of run that waits for a rollout leave now, in
// none: undecided spans as they stand, job spans with what they have.
func (c *Core) releaseRun(run *Run, reason Reason) {
	if run.held == 0 {
		return
	}
	var release []*Node
	for _, e := range c.heap {
		if e.run == run && (e.phase == PhaseSettle || e.phase == PhaseRelease || e.phase == PhaseJob) {
			release = append(release, e.n)
		}
	}
	for _, n := range release {
		switch {
		case n.held == nil:
		case n.job:
			c.emit(n)
		case n.how == HowUndecided:
			c.releaseNone(n, reason)
		}
	}
}
