// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-gym/otelcol-gym/internal/bounded"
	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
	"github.com/otelcol-gym/otelcol-gym/internal/hostport"

	oldconventions "go.opentelemetry.io/otel/semconv/v1.12.0"
	conventions "go.opentelemetry.io/otel/semconv/v1.37.0"
)

// Service-map repair (design §4.4): peer.service on CLIENT spans, and
// synthesized CLIENT parents for SERVER spans that have none in their
// caller's service.

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

// syntheticSpanID is the span id of the CLIENT span synthesized above the
// SERVER span serverID in trace t: the first 8 bytes of
// SHA-256("otelcol-gym/synthetic/v1" ‖ 0x00 ‖ t (16 raw bytes) ‖ serverID
// (8 raw bytes)), never all zero.
func syntheticSpanID(t pcommon.TraceID, serverID pcommon.SpanID) pcommon.SpanID {
	var id pcommon.SpanID
	hashID(id[:], syntheticSpanDomain, t[:], serverID[:])
	return id
}

// rolloutSpanRef is R's gym.rollout span as it left: where a synthesized
// CLIENT span of R hangs (parent, resource and scope).
type rolloutSpanRef struct {
	orig    pcommon.TraceID // its original trace id
	span    pcommon.SpanID
	origHex string // its original trace id, carried by the synthesized span
	org     *origin
}

// synthEntry is, per rollout trace T', R's gym.rollout once it left, and the
// SERVER spans held until it does.
type synthEntry struct {
	ref     *rolloutSpanRef
	waiters []*node
}

// synthTable is bounded by split.max_tracked_roots entries, oldest first
// out, but never one that SERVER spans still wait on.
type synthTable struct {
	t *bounded.Table[pcommon.TraceID, *synthEntry]
}

func newSynthTable(capacity int) synthTable {
	t := bounded.New[pcommon.TraceID, *synthEntry](capacity)
	t.Pin(func(e *synthEntry) bool {
		for _, w := range e.waiters {
			if w.held != nil && w.held.phase == phaseSynth {
				return true
			}
		}
		return false
	})
	return synthTable{t: t}
}

func (t *synthTable) entry(tid pcommon.TraceID) *synthEntry {
	if e, ok := t.t.Get(tid); ok {
		return e
	}
	e := &synthEntry{}
	t.t.Put(tid, e)
	return e
}

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
	hp := clientHostPort(attrs)
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

// clientHostPort is the host:port a CLIENT span called: from url.full or
// http.url, else server.address and server.port (net.peer.name/port).
func clientHostPort(attrs pcommon.Map) string {
	for _, k := range []string{string(conventions.URLFullKey), string(oldconventions.HTTPURLKey)} {
		if v, ok := attrs.Get(k); ok && v.Type() == pcommon.ValueTypeStr {
			if hp := urlHostPort(v.Str()); hp != "" {
				return hp
			}
		}
	}
	if hp := hostport.Join(attrs, string(conventions.ServerAddressKey), string(conventions.ServerPortKey)); hp != "" {
		return hp
	}
	return hostport.Join(attrs, string(oldconventions.NetPeerNameKey), string(oldconventions.NetPeerPortKey))
}

// urlHostPort returns the host:port of an absolute URL ("scheme://[user@]
// host[:port]/..."); a URL without a port gets its scheme's (80 for http,
// 443 for https). It parses by hand: it runs for every CLIENT span.
func urlHostPort(raw string) string {
	i := strings.Index(raw, "://")
	if i <= 0 {
		return ""
	}
	scheme, rest := raw[:i], raw[i+3:]
	if j := strings.IndexAny(rest, "/?#"); j >= 0 {
		rest = rest[:j]
	}
	if j := strings.LastIndexByte(rest, '@'); j >= 0 {
		rest = rest[j+1:]
	}
	if rest == "" || strings.ContainsAny(rest, " \t") {
		return ""
	}
	host := strings.ToLower(rest)
	// A port follows the last ':' unless that ':' is inside an IPv6 literal.
	if c := strings.LastIndexByte(host, ':'); c >= 0 && c > strings.LastIndexByte(host, ']') {
		if c == len(host)-1 {
			return ""
		}
		return host
	}
	switch strings.ToLower(scheme) {
	case "http":
		return host + ":80"
	case "https":
		return host + ":443"
	}
	return host
}

// httpMethod is the SERVER span's request method, or "".
func httpMethod(attrs pcommon.Map) string {
	for _, k := range []string{attrHTTPMethod, string(oldconventions.HTTPMethodKey)} {
		if v, ok := attrs.Get(k); ok && v.Type() == pcommon.ValueTypeStr && v.Str() != "" {
			return strings.ToUpper(v.Str())
		}
	}
	return ""
}

// isSynthetic reports whether a span was synthesized by a gym processor.
func isSynthetic(attrs pcommon.Map) bool {
	v, ok := attrs.Get(attrSynthetic)
	return ok && v.Type() == pcommon.ValueTypeBool && v.Bool()
}

// synthesizeParent appends to the round, in org's resource and scope, a
// CLIENT span between server (whose final trace id is tid) and parent, and
// re-parents server onto it (design §4.4); both are written after the lock is
// released (clientEdit).
func (e *engine) synthesizeParent(server ptrace.Span, tid pcommon.TraceID, serverSvc string, parent pcommon.SpanID, org *origin, origHex, rollout string) {
	c := ptrace.NewSpan()
	e.r.leave(org, c, 0)
	e.r.clients = append(e.r.clients, clientEdit{
		client: c, server: server, tid: tid, id: syntheticSpanID(tid, server.SpanID()), parent: parent,
		serverService: serverSvc, origHex: origHex, rollout: rollout,
	})
	e.r.synthesized++
}

// wantsRolloutParent reports whether the span arriving now is a parentless
// SERVER span with direct evidence, to be re-parented under a synthesized
// CLIENT span below its rollout's gym.rollout (design §4.4).
func (e *engine) wantsRolloutParent(n *node) bool {
	return e.sm.synth && e.split && n == e.cur && n.parent == nil && n.how == howDirect &&
		e.curSpan.Kind() == ptrace.SpanKindServer && e.curSpan.ParentSpanID().IsEmpty() &&
		!isSynthetic(e.curSpan.Attributes())
}

// holdForRolloutParent holds the current SERVER span n until R's gym.rollout
// has left (at most rollout_wait), or emits it at once, repaired, when it
// already has. A SERVER span in gym.rollout's own original trace is the root
// of that trace, not a call made without traceparent: it is never put below
// gym.rollout (which may hang below it; that would be a cycle).
func (e *engine) holdForRolloutParent(n *node) {
	info := e.curInfo
	tid := e.tids.get(rolloutKey(info.run.id, n.key.trace), n.rollout)
	e.hold(n, phaseSynth, e.dl.rolloutParent(e.now))
	ent := e.sm.table.entry(tid)
	if ent.ref != nil {
		if ent.ref.orig != n.key.trace {
			n.held.synth = ent.ref
		}
		e.emit(n)
		return
	}
	ent.waiters = append(ent.waiters, n)
}

// rolloutSpanLeft records R's gym.rollout as it leaves (tid is its final
// trace id, T') and releases the SERVER spans that waited for it.
func (e *engine) rolloutSpanLeft(sp ptrace.Span, tid pcommon.TraceID, n *node, org *origin) {
	if !e.sm.synth || !e.split || n.rollout == "" || sp.Name() != gymconv.RolloutSpanName {
		return
	}
	ent := e.sm.table.entry(tid)
	if ent.ref != nil {
		return // the first gym.rollout of a trace is the one
	}
	if org == nil {
		org = n.org // its process's resource and scope (noteArrival)
	}
	if org == nil {
		if e.curOrg == nil {
			e.curOrg = newOrigin(e.curRS, e.curSS, e.curInfo)
		}
		org = e.curOrg
	}
	ent.ref = &rolloutSpanRef{orig: n.key.trace, span: sp.SpanID(), origHex: e.hexOf(n.key.trace), org: org}
	ws := ent.waiters
	ent.waiters = nil
	for _, w := range ws {
		if hs := w.held; hs != nil && hs.phase == phaseSynth {
			if ent.ref.orig != w.key.trace {
				hs.synth = ent.ref
			}
			e.emit(w)
		}
	}
}

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

// learnPeer learns the service at hp from a SERVER span, and lets the CLIENT
// spans that waited for it leave.
func (e *engine) learnPeer(hp, service string) {
	if !e.sm.learn(hp, service) {
		return
	}
	ws := e.sm.peerWaiters[hp]
	delete(e.sm.peerWaiters, hp)
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
	hp := clientHostPort(attrs)
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
func (e *engine) dropPeerWaiter(sp ptrace.Span, untaught bool) {
	hp := clientHostPort(sp.Attributes())
	if untaught {
		e.sm.giveUpOn(hp)
	}
	ws := e.sm.peerWaiters[hp]
	kept := ws[:0]
	for _, w := range ws {
		if w.held != nil && w.held.phase == phasePeer {
			kept = append(kept, w)
		}
	}
	clear(ws[len(kept):])
	if len(kept) == 0 {
		delete(e.sm.peerWaiters, hp)
	} else {
		e.sm.peerWaiters[hp] = kept
	}
}
