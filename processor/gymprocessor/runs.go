// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import (
	"container/heap"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/otelcol-gym/otelcol-gym/internal/bounded"
)

// What the processor knows about the processes that send spans and the runs
// they belong to, and what a run has shown (design §4.2): how long an
// undecided span waits is decided by what its run and its process have
// shown, never by how long they were quiet (pending.go, undecidedRelease).

// Bounds of the process and run tables. An entry with held spans is never
// forgotten (they point at it); the oldest idle ones go first.
const (
	maxTrackedProcesses = 1 << 16
	minTrackedRuns      = 1024
)

// procState is what the processor knows about one sending process.
type procState struct {
	evidence      bool  // the process has shown direct rollout evidence
	rolloutServer bool  // its nemo.gym.server.type is a Gym server that serves rollouts
	held          int32 // its spans in the pending store

	// §4.4: the resource and scope of its latest INTERNAL spans, shared by
	// their index entries as possible embedder parents.
	org      *origin
	orgScope string
}

// servesRollouts reports whether the process takes part in rollouts, so
// that its undecided spans may learn one when a rollout ends (§4.2).
func (p *procState) servesRollouts() bool { return p.evidence || p.rolloutServer }

// runState is what the processor knows about one run (resource nemo.run.id).
type runState struct {
	id        string
	firstSeen int64
	held      int32 // its spans in the pending store
	// evidence: a span of the run showed direct rollout evidence.
	evidence bool
	// typed: a process of the run has nemo.gym.server.type, so it is Gym
	// with its own telemetry and waits by what it shows; a run with none
	// keeps the first draft's rule (checkRuns).
	typed bool
	// observabilityOff: before any evidence, the run showed that Gym's
	// observability is off (evidence.go, observabilityOffSign).
	observabilityOff bool
	// checked: the first draft's check, wait after the first span, is done.
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
	if rf.serverType {
		run.typed = true
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
		proc = &procState{rolloutServer: rf.rolloutServer}
		e.procs.Put(strings.Clone(rf.proc), proc)
	}
	return &resInfo{run: run, proc: proc, service: e.sm.intern(service)}
}

// noteEvidence records that a span of info's process showed direct
// evidence: the run's pass-through, if any, ends (a mixed run), and the
// process's undecided spans now wait as those of a process that serves
// rollouts.
func (e *engine) noteEvidence(info *resInfo) {
	if !info.run.evidence {
		info.run.evidence = true
		info.run.passThrough = false
	}
	if info.proc.evidence {
		return
	}
	served := info.proc.servesRollouts()
	info.proc.evidence = true
	if served {
		return // its spans already wait rollout_wait
	}
	changed := false
	for _, hs := range e.heap {
		if hs.origin.info.proc == info.proc && hs.phase == phaseRelease {
			if d := e.dl.undecidedRelease(hs); d > hs.deadline {
				hs.deadline = d
				changed = true
			}
		}
	}
	if changed {
		heap.Init(&e.heap)
	}
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

// checkRuns applies, wait after a run's first span, the first draft's rule
// to a run that has shown neither evidence nor that observability is off:
// the no-evidence problem is reported, and a run none of whose processes
// has nemo.gym.server.type (Gym under generic OpenTelemetry instrumentation,
// or a sender that is not Gym) passes through from then on. A Gym run keeps
// its spans waiting by what its processes are (§4.2).
func (e *engine) checkRuns(shutdown bool) {
	var passing []*runState
	e.runs.Range(func(_ string, run *runState) bool {
		if run.checked || (!shutdown && e.now < e.dl.noEvidenceCheck(run)) {
			return true
		}
		run.checked = true
		if !run.manyService && run.serviceOrch {
			e.r.problems[problemOnlyOrchestrator]++
		}
		if run.evidence || run.observabilityOff {
			return true
		}
		e.r.problems[problemNoEvidence]++
		e.r.problemRuns[problemNoEvidence] = append(e.r.problemRuns[problemNoEvidence], run.id)
		if !run.typed {
			run.passThrough = true
			passing = append(passing, run)
		}
		return true
	})
	for _, run := range passing {
		e.releaseRun(run, reasonNoEvidence)
	}
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
