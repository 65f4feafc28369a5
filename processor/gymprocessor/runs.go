// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import (
	"container/heap"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// procState is what the processor knows about one sending process.
type procState struct {
	evidence bool // the process has shown direct rollout evidence

	// §4.4: the resource and scope of its latest INTERNAL spans, shared by
	// their index entries as possible embedder parents.
	org      *origin
	orgScope string
}

// runState is what the processor knows about one run (resource nemo.run.id).
type runState struct {
	id          string
	firstSeen   int64
	evidence    bool
	checked     bool // the `wait` check of §4.2 has been done
	passThrough bool // no evidence within `wait`: spans pass without waiting
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

func (e *engine) resourceInfo(rf *resFacts) *resInfo {
	runID := rf.run
	run := e.runs[runID]
	if run == nil {
		maxRuns := max(1024, e.cfg.Split.MaxTrackedJobs)
		for len(e.runs) >= maxRuns && len(e.runOrder) > 0 {
			delete(e.runs, e.runOrder[0])
			e.runOrder = e.runOrder[1:]
		}
		runID = strings.Clone(runID) // kept: not a view into the batch
		run = &runState{id: runID, firstSeen: e.now}
		e.runs[runID] = run
		e.runOrder = append(e.runOrder, runID)
	}
	service := rf.service
	switch {
	case run.service == "" && !run.manyService:
		run.service = service
		run.serviceOrch = rf.serviceOrch
	case run.service != service:
		run.manyService = true
	}
	proc := e.procs[rf.proc]
	if proc == nil {
		if len(e.procs) >= 1<<16 {
			clear(e.procs)
		}
		proc = &procState{}
		e.procs[strings.Clone(rf.proc)] = proc
	}
	return &resInfo{run: run, proc: proc, service: e.sm.intern(service)}
}

// checkRuns turns a run that showed no evidence within wait into a
// pass-through run and releases what it holds (SPEC §4.2).
func (e *engine) checkRuns(shutdown bool) {
	for _, run := range e.runs {
		if run.checked || (!shutdown && e.now-run.firstSeen < e.wait) {
			continue
		}
		run.checked = true
		if !run.manyService && run.serviceOrch {
			e.r.problems[problemOnlyOrchestrator]++
		}
		if run.evidence {
			continue
		}
		run.passThrough = true
		e.r.problems[problemNoEvidence]++
		e.r.noEvRuns = append(e.r.noEvRuns, run.id)
		var release []*node
		for _, hs := range e.heap {
			if hs.origin.info.run == run && (hs.phase == phaseSettle || hs.phase == phaseRelease) {
				release = append(release, hs.n)
			}
		}
		for _, n := range release {
			if n.held != nil && n.how == howUndecided {
				e.releaseNone(n, reasonNoEvidence)
			}
		}
	}
}

func (e *engine) noteEvidence(info *resInfo) {
	if !info.run.evidence {
		info.run.evidence = true
		info.run.passThrough = false
	}
	if !info.proc.evidence {
		info.proc.evidence = true
		// Re-arm: its undecided spans now wait rollout_wait.
		changed := false
		for _, hs := range e.heap {
			if hs.origin.info.proc == info.proc && hs.phase == phaseRelease && hs.n.parent != nil {
				if d := hs.arrival + e.rolloutWait; d > hs.deadline {
					hs.deadline = d
					changed = true
				}
			}
		}
		if changed {
			heap.Init(&e.heap)
		}
	}
}
