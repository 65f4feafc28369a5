// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import (
	"go.opentelemetry.io/collector/pdata/ptrace"

	conventions "go.opentelemetry.io/otel/semconv/v1.37.0"
)

// Service-map repair (design §4.4): its names, and where the engine calls it
// (a span indexed, leaving, or passing unindexed). peer.service is in
// peerservice.go, synthesized CLIENT parents in synthesize.go, host:port
// parsing in internal/hostport.

const (
	attrPeerService = string(conventions.PeerServiceKey)
	attrSynthetic   = "nemo.gym.synthetic"
	attrHTTPMethod  = string(conventions.HTTPRequestMethodKey)

	syntheticSpanDomain = "otelcol-gym/synthetic/v1"

	// maxLearnedPeers bounds the host:port → service map learned from SERVER
	// spans; it is cleared whole when full (the configured peers stay).
	maxLearnedPeers = 4096
)

// Sources of peer.service (metric attribute "source").
const (
	peerFromChild      = iota // the CLIENT span's SERVER child, already seen
	peerFromConfigured        // service_map.peers
	peerFromLearned           // host:port learned from SERVER spans
	peerFromAddress           // the host:port the CLIENT span called
	numPeerSources
)

var peerSourceNames = [numPeerSources]string{"child", "configured", "learned", "address"}

// repairOnEmit repairs the service map at a span that leaves, after ed
// planned its rollout rewrite: peer.service on a CLIENT span (into ed), a
// synthesized CLIENT parent for a SERVER span (below gym.rollout, or below
// an embedder's INTERNAL span of another service), and the record of a
// gym.rollout span.
func (e *engine) repairOnEmit(sp ptrace.Span, info *resInfo, n *node, hs *heldSpan, ed *spanEdit) {
	switch sp.Kind() {
	case ptrace.SpanKindClient:
		if e.sm.peers {
			e.planPeerService(ed, n.peerSvc)
		}
	case ptrace.SpanKindServer:
		if hs != nil && hs.synth != nil {
			ref := hs.synth
			e.synthesizeParent(sp, ed.traceID(), info.service, ref.span, ref.org, ref.origHex, n.rollout)
			return
		}
		p := n.parent
		if !e.sm.synth || p == nil || p.org == nil || p.state == stAbsent || (hs != nil && hs.cut) ||
			p.org.info.service == info.service || sp.ParentSpanID() != p.key.span || isSynthetic(sp.Attributes()) {
			return
		}
		// An embedder's INTERNAL span of another service called this server
		// without a CLIENT span of its own.
		e.synthesizeParent(sp, ed.traceID(), info.service, p.key.span, p.org, ed.originalTraceHex(), n.rollout)
	case ptrace.SpanKindInternal:
		var org *origin
		if hs != nil {
			org = hs.origin
		}
		e.rolloutSpanLeft(sp, ed.traceID(), n, org)
	}
}

// noteArrival records, for the service-map repairs, what an indexed span
// tells about others: a SERVER span names its parent's peer service and the
// host:port it was reached at; an INTERNAL span keeps its resource as a
// possible embedder parent.
func (e *engine) noteArrival(sp ptrace.Span, info *resInfo, n *node, sf *spanFacts) {
	switch sp.Kind() {
	case ptrace.SpanKindServer:
		if p := n.parent; p != nil && p.peerSvc == "" {
			p.peerSvc = info.service
			if hs := p.held; hs != nil && hs.phase == phasePeer {
				e.emit(p) // its SERVER child told it
				e.dropPeerWaiter(hs.span, false)
			}
		}
		e.learnPeer(sf.serverHP, info.service)
	case ptrace.SpanKindInternal:
		if e.sm.synth {
			// One copy of the resource and scope per process and scope,
			// not per batch: a process's resource does not change.
			p := info.proc
			if p.org == nil || p.orgScope != e.curSS.Scope().Name() {
				p.org = newOrigin(e.curRS, e.curSS, info)
				p.orgScope = p.org.rs.ScopeSpans().At(0).Scope().Name()
			}
			n.org = p.org
		}
	}
}

// repairUnindexed repairs what it can of a span that passes unindexed
// (pass-through runs, zero or duplicate span ids): a SERVER span teaches its
// host:port, a CLIENT span gets peer.service from the host:port maps.
func (e *engine) repairUnindexed(sp ptrace.Span, info *resInfo, sf *spanFacts, ed *spanEdit) {
	if !e.sm.peers {
		return
	}
	switch sp.Kind() {
	case ptrace.SpanKindServer:
		e.learnPeer(sf.serverHP, info.service)
	case ptrace.SpanKindClient:
		e.planPeerService(ed, "")
	}
}
