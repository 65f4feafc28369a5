// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/otelcol-gym/otelcol-gym/internal/bounded"
)

// What the processor knows about the processes that send spans and the runs
// they belong to, and what a run has shown (design §4.2). How long a span
// waits never depends on them (pending.go, undecidedRelease), except that a
// run that has shown that Gym's observability is off passes through.

// Bounds of the process and run tables. An entry with held spans is never
// forgotten (they point at it); the oldest idle ones go first.
const (
	maxTrackedProcesses = 1 << 16
	minTrackedRuns      = 1024
)

// procState is what the processor knows about one sending process.
type procState struct {
	held int32 // its spans in the pending store

	// The resource and scope of its latest INTERNAL spans, shared by
	// their index entries as possible embedder parents.
	org      *origin
	orgScope string
}

// runState is what the processor knows about one run (resource nemo.run.id).
type runState struct {
	id        string
	firstSeen int64
	held      int32 // its spans in the pending store
	// evidence: a span of the run showed direct rollout evidence.
	evidence bool
	// observabilityOff: before any evidence, the run showed that Gym's
	// observability is off (evidence.go, observabilityOffSign).
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

// resInfo is computed once per incoming ResourceSpans.
type resInfo struct {
	run     *runState
	proc    *procState
	service string // the span's service (service_attributes), interned
}

func resourceString(attrs pcommon.Map, key string) string {
	v, ok := attrs.Get(key)
	if !ok {
		return ""
	}
	return v.AsString()
}

func newProcTable() *bounded.Table[string, *procState] {
	t := bounded.New[string, *procState](maxTrackedProcesses)
	t.Pin(func(p *procState) bool { return p.held > 0 })
	return t
}

func newRunTable(cfg *Config) *bounded.Table[string, *runState] {
	t := bounded.New[string, *runState](max(minTrackedRuns, cfg.Split.MaxTrackedJobs))
	t.Pin(func(r *runState) bool { return r.held > 0 })
	return t
}

// resourceInfo finds (or starts) the run and process of a ResourceSpans.
func (e *engine) resourceInfo(rf *resFacts) *resInfo {
	run, ok := e.runs.Get(rf.run)
	if ok {
		e.runs.Touch(rf.run)
	} else {
		id := strings.Clone(rf.run) // kept: not a view into the batch
		run = &runState{id: id, firstSeen: e.now}
		e.runs.Put(id, run)
	}
	service := rf.service
	switch {
	case run.service == "" && !run.manyService:
		run.service = service
		run.serviceOrch = rf.serviceOrch
	case run.service != service:
		run.manyService = true
	}
	proc, ok := e.procs.Get(rf.proc)
	if ok {
		e.procs.Touch(rf.proc)
	} else {
		proc = &procState{}
		e.procs.Put(strings.Clone(rf.proc), proc)
	}
	return &resInfo{run: run, proc: proc, service: e.sm.intern(service)}
}

// observeRun notes what an arriving span shows of its run: direct
// evidence, or, before any evidence, that Gym's observability is off.
func (e *engine) observeRun(run *runState, sf *spanFacts) {
	if sf.ev != "" {
		e.noteEvidence(run)
	} else if sf.observabilityOff && !run.evidence {
		e.noteObservabilityOff(run)
	}
}

// noteEvidence records that a span of run showed direct evidence: the
// run's pass-through, if any, ends (a mixed run).
func (e *engine) noteEvidence(run *runState) {
	run.evidence = true
	run.passThrough = false
}

// noteObservabilityOff records that run showed, before any evidence, that
// Gym's observability is off: no rollout id will come. Its pending spans
// leave now, as they stand, and its later spans pass through until direct
// evidence appears in it.
func (e *engine) noteObservabilityOff(run *runState) {
	if run.passThrough {
		return
	}
	if !run.observabilityOff {
		run.observabilityOff = true
		e.r.problems[problemObservabilityOff]++
		e.r.problemRuns[problemObservabilityOff] = append(e.r.problemRuns[problemObservabilityOff], run.id)
	}
	run.passThrough = true
	e.releaseRun(run, reasonObservabilityOff)
}

// checkRuns reports, wait after a run's first span, the setup problems a
// run shows by then: only orchestrator spans, or neither evidence nor that
// observability is off. Its spans keep waiting by structure.
func (e *engine) checkRuns(shutdown bool) {
	e.runs.Range(func(_ string, run *runState) bool {
		if run.checked || (!shutdown && e.now < e.dl.noEvidenceCheck(run)) {
			return true
		}
		run.checked = true
		if !run.manyService && run.serviceOrch {
			e.r.problems[problemOnlyOrchestrator]++
		}
		if !run.evidence && !run.observabilityOff {
			e.r.problems[problemNoEvidence]++
			e.r.problemRuns[problemNoEvidence] = append(e.r.problemRuns[problemNoEvidence], run.id)
		}
		return true
	})
}

// releaseRun makes every span of run that waits for a rollout leave now, in
// none: undecided spans as they stand, job spans with what they have.
func (e *engine) releaseRun(run *runState, reason int) {
	if run.held == 0 {
		return
	}
	var release []*node
	for _, hs := range e.heap {
		if hs.origin.info.run == run && (hs.phase == phaseSettle || hs.phase == phaseRelease || hs.phase == phaseJob) {
			release = append(release, hs.n)
		}
	}
	for _, n := range release {
		switch {
		case n.held == nil:
		case n.job:
			e.emit(n)
		case n.how == howUndecided:
			e.releaseNone(n, reason)
		}
	}
}
