// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-gym/otelcol-gym/internal/bounded"
	"github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/repair"
	"github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/rollout"
)

// The spans' data the rollout core does not hold: each held span in the
// slot the core gave it, and the resources and scopes spans came with.

// origin is the resource and scope a span came with. It is copied once per
// incoming ScopeSpans that has a span to hold, shared by those spans, and is
// the key by which leaving spans are regrouped; a process's INTERNAL spans
// share one (procState), which the service-map repair places synthesized
// spans in.
type origin struct {
	rs      ptrace.ResourceSpans // resource + one ScopeSpans carrying the scope, no spans
	service string               // the service of the resource (service_attributes)
}

var _ repair.Origin = (*origin)(nil)

// Service is the resource's service.
func (o *origin) Service() string { return o.service }

func newOrigin(rs ptrace.ResourceSpans, ss ptrace.ScopeSpans, service string) *origin {
	o := &origin{rs: ptrace.NewResourceSpans(), service: service}
	rs.Resource().CopyTo(o.rs.Resource())
	o.rs.SetSchemaUrl(rs.SchemaUrl())
	dst := o.rs.ScopeSpans().AppendEmpty()
	ss.Scope().CopyTo(dst.Scope())
	dst.SetSchemaUrl(ss.SchemaUrl())
	return o
}

// heldSpan is the data of a span the core holds. It owns the span.
type heldSpan struct {
	span   ptrace.Span
	origin *origin
	facts  heldFacts
	edit   editFacts
	copies int32 // unchanged copies that arrived while it was held (resent.go)
}

// heldFacts is what a held span keeps of its facts for the repair (its
// service and origin are its origin's; the host:port it was reached at was
// learned when it arrived).
type heldFacts struct {
	clientHP                                         string
	kind                                             repair.Kind
	noParent, synthetic, rolloutSpan, hasPeerService bool
}

func keepFacts(s *repair.Span) heldFacts {
	return heldFacts{clientHP: s.ClientHP, kind: s.Kind, noParent: s.NoParent, synthetic: s.Synthetic, rolloutSpan: s.RolloutSpan, hasPeerService: s.HasPeerService}
}

// repairSpan is what the repair reads of the held span.
func (hs *heldSpan) repairSpan() repair.Span {
	f := &hs.facts
	return repair.Span{
		Kind: f.kind, Service: hs.origin.service, NoParent: f.noParent, Synthetic: f.synthetic, RolloutSpan: f.rolloutSpan,
		ClientHP: f.clientHP, HasPeerService: f.hasPeerService, Origin: hs.origin,
	}
}

// heldSpans are the held spans by slot (rollout.Slot).
type heldSpans []heldSpan

func (h *heldSpans) put(s rollout.Slot, hs heldSpan) {
	for int(s) >= len(*h) {
		*h = append(*h, heldSpan{})
	}
	(*h)[s] = hs
}

// take returns the span in slot s and empties the slot.
func (h heldSpans) take(s rollout.Slot) heldSpan {
	hs := h[s]
	h[s] = heldSpan{}
	return hs
}

// procState is what the processor keeps per sending process: the resource
// and scope of its latest INTERNAL spans, shared by their index entries as
// possible embedder parents (§4.4). A process is its resource's
// service.name, host.name and process.pid.
type procState struct {
	org      *origin
	orgScope string
}

// maxTrackedProcesses bounds the process table; the oldest go first.
const maxTrackedProcesses = 1 << 16

func newProcTable() *bounded.Table[string, *procState] {
	return bounded.New[string, *procState](maxTrackedProcesses)
}

// resInfo is what the engine keeps of an incoming ResourceSpans in a round.
type resInfo struct {
	run     *rollout.Run
	proc    *procState
	service string // interned
}

// resourceInfo finds (or starts) the run and process of a ResourceSpans.
func (e *engine) resourceInfo(rf *resFacts) *resInfo {
	proc, ok := e.procs.Get(rf.proc)
	if ok {
		e.procs.Touch(rf.proc)
	} else {
		proc = &procState{}
		e.procs.Put(strings.Clone(rf.proc), proc)
	}
	return &resInfo{run: e.core.Run(rf.run, rf.service, rf.serviceOrch), proc: proc, service: e.repair.Intern(rf.service)}
}

// procOrigin is the origin of the current span's process and scope: one
// copy of the resource and scope per process and scope, not per batch (a
// process's resource does not change).
func (e *engine) procOrigin() *origin {
	c := &e.cur
	p := c.info.proc
	if p.org == nil || p.orgScope != c.ss.Scope().Name() {
		p.org = newOrigin(c.rs, c.ss, c.info.service)
		p.orgScope = p.org.rs.ScopeSpans().At(0).Scope().Name()
	}
	return p.org
}
