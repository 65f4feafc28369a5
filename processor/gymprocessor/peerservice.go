// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-gym/otelcol-gym/internal/hostport"
)

// peer.service on CLIENT spans (design §4.4): the service a host:port is,
// learned from SERVER spans or configured.

// serviceMap is the state of the service-map repairs.
type serviceMap struct {
	peers      bool // service_map.enabled
	synth      bool // service_map.synthesize_client_spans
	configured map[string]string
	learned    map[string]string
	names      map[string]string // interned service names
	table      synthTable
	// peerWaiters are the decided CLIENT spans held until a SERVER span
	// tells the service at their host:port (phasePeer), by host:port.
	peerWaiters map[string][]*node
	// peerDrops counts, by host:port, the waiters that left since its list
	// was last compacted (dropPeerWaiter).
	peerDrops map[string]int
	// untaught are the host:ports a CLIENT span waited settle for and no
	// SERVER span taught (a model server's upstream vLLM, an external API):
	// no CLIENT span to them waits again. Cleared whole when full.
	untaught map[string]struct{}
}

func newServiceMap(cfg *Config) *serviceMap {
	sm := &serviceMap{
		peers:       cfg.ServiceMap.Enabled,
		synth:       cfg.ServiceMap.SynthesizeClientSpans,
		configured:  make(map[string]string, len(cfg.ServiceMap.Peers)),
		learned:     make(map[string]string),
		names:       make(map[string]string),
		table:       newSynthTable(cfg.Split.MaxTrackedRoots),
		peerWaiters: make(map[string][]*node),
		peerDrops:   make(map[string]int),
		untaught:    make(map[string]struct{}),
	}
	for k, v := range cfg.ServiceMap.Peers {
		sm.configured[strings.ToLower(k)] = v
	}
	return sm
}

// intern returns one shared copy of a service name, so index entries do not
// keep a batch's strings alive.
func (sm *serviceMap) intern(s string) string {
	if s == "" {
		return ""
	}
	if v, ok := sm.names[s]; ok {
		return v
	}
	if len(sm.names) >= 1<<12 {
		clear(sm.names)
	}
	v := strings.Clone(s)
	sm.names[v] = v
	return v
}

// learn records the host:port a SERVER span was reached at (hp, read by
// prepare), and reports whether it was not known before.
func (sm *serviceMap) learn(hp, service string) bool {
	if !sm.peers || service == "" || hp == "" {
		return false
	}
	old, ok := sm.learned[hp]
	if ok && old == service {
		return false
	}
	if len(sm.learned) >= maxLearnedPeers {
		clear(sm.learned)
	}
	sm.learned[strings.Clone(hp)] = sm.intern(service)
	return !ok
}

// knows reports whether the service at hp is configured or learned, or
// whether waiting for it was already tried in vain.
func (sm *serviceMap) knows(hp string) bool {
	if _, ok := sm.configured[hp]; ok {
		return true
	}
	if _, ok := sm.learned[hp]; ok {
		return true
	}
	_, ok := sm.untaught[hp]
	return ok
}

// giveUpOn records that a CLIENT span waited for hp in vain.
func (sm *serviceMap) giveUpOn(hp string) {
	if hp == "" {
		return
	}
	if len(sm.untaught) >= maxLearnedPeers {
		clear(sm.untaught)
	}
	sm.untaught[strings.Clone(hp)] = struct{}{}
}

// peerService is the peer.service a CLIENT span gets unless it has one
// (design §4.4): its SERVER child's service when seen (child), else the
// service mapped to the host:port it called (configured, then learned),
// else that host:port. It returns the value and the source used, or -1 when
// the span gets none.
func (sm *serviceMap) peerService(attrs pcommon.Map, child string) (string, int) {
	if _, ok := attrs.Get(attrPeerService); ok {
		return "", -1
	}
	if child != "" {
		return child, peerFromChild
	}
	hp := hostport.Client(attrs)
	if hp == "" {
		return "", -1
	}
	if s, ok := sm.configured[hp]; ok {
		return s, peerFromConfigured
	}
	if s, ok := sm.learned[hp]; ok {
		return s, peerFromLearned
	}
	return hp, peerFromAddress
}

// planPeerService puts into ed the peer.service a CLIENT span gets, and
// counts its source.
func (e *engine) planPeerService(ed *spanEdit, child string) {
	if v, src := e.sm.peerService(ed.sp.Attributes(), child); src >= 0 {
		ed.peer, ed.hasPeer = v, true
		e.r.peerSet[src]++
	}
}

// learnPeer learns the service at hp from a SERVER span, and lets the CLIENT
// spans that waited for it leave.
func (e *engine) learnPeer(hp, service string) {
	if !e.sm.learn(hp, service) {
		return
	}
	ws := e.sm.peerWaiters[hp]
	delete(e.sm.peerWaiters, hp)
	delete(e.sm.peerDrops, hp)
	for _, w := range ws {
		if w.held != nil && w.held.phase == phasePeer {
			e.emit(w)
		}
	}
}

// holdForPeer holds a decided CLIENT span that would leave now while no
// source knows the service it called (design §4.4): the first calls of a run
// to each server, whose SERVER spans have not arrived yet, would otherwise
// give Jaeger and service_map.json a phantom 127.0.0.1:port node. It reports
// whether it held the span; once a host:port is learned no span waits.
func (e *engine) holdForPeer(n *node) bool {
	if !e.sm.peers || n.peerSvc != "" {
		return false
	}
	var sp ptrace.Span
	switch {
	case n.held != nil:
		sp = n.held.span
	case n == e.cur:
		sp = e.curSpan
	default:
		return false
	}
	if sp.Kind() != ptrace.SpanKindClient {
		return false
	}
	attrs := sp.Attributes()
	if _, ok := attrs.Get(attrPeerService); ok {
		return false
	}
	hp := hostport.Client(attrs)
	if hp == "" || e.sm.knows(hp) {
		return false
	}
	if n.held == nil {
		e.hold(n, phasePeer, e.dl.peerWait(e.now))
	} else {
		d := e.dl.peerWait(n.held.arrival)
		if d <= e.now {
			return false
		}
		e.setDeadline(n.held, phasePeer, d)
	}
	e.sm.peerWaiters[hp] = append(e.sm.peerWaiters[hp], n)
	return true
}

// dropPeerWaiter forgets the CLIENT spans of sp's host:port that no longer
// wait, so that a host:port never learned leaves nothing behind; with
// untaught, sp waited in vain, and no span to its host:port waits again.
// Forgetting scans the host:port's list, so it is done once half of the list
// has left since the last scan: each waiter that leaves costs a constant
// time however many wait (the first settle of a run can hold thousands of a
// model server's calls to its LLM, which give up one after the other).
func (e *engine) dropPeerWaiter(sp ptrace.Span, untaught bool) {
	hp := hostport.Client(sp.Attributes())
	if untaught {
		e.sm.giveUpOn(hp)
	}
	ws := e.sm.peerWaiters[hp]
	if d := e.sm.peerDrops[hp] + 1; 2*d < len(ws) {
		e.sm.peerDrops[hp] = d
		return
	}
	delete(e.sm.peerDrops, hp)
	if kept := stillWaiting(ws); len(kept) == 0 {
		delete(e.sm.peerWaiters, hp)
	} else {
		e.sm.peerWaiters[hp] = kept
	}
}

// compactPeerWaiters forgets every waiter that left, in every list.
func (e *engine) compactPeerWaiters() {
	for hp, ws := range e.sm.peerWaiters {
		if kept := stillWaiting(ws); len(kept) == 0 {
			delete(e.sm.peerWaiters, hp)
		} else {
			e.sm.peerWaiters[hp] = kept
		}
	}
	clear(e.sm.peerDrops)
}

// stillWaiting keeps, in place, the nodes of ws still held for their peer.
func stillWaiting(ws []*node) []*node {
	kept := ws[:0]
	for _, w := range ws {
		if w.held != nil && w.held.phase == phasePeer {
			kept = append(kept, w)
		}
	}
	clear(ws[len(kept):])
	return kept
}
