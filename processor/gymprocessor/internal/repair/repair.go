// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package repair // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/repair"

import (
	"strings"

	"github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/rollout"
)

// Kind is a span's kind, as far as the repairs care.
type Kind uint8

const (
	KindOther Kind = iota
	KindServer
	KindClient
	KindInternal
)

// Origin is the resource and scope a span came with, as the processor
// keeps them; the repair places a synthesized span in one and reads its
// service.
type Origin interface{ Service() string }

// Span is what a span says, for the repairs.
type Span struct {
	Kind Kind
	// Service is its service (service_attributes), interned.
	Service string
	// NoParent: it names no parent span; Synthetic: a gym processor
	// synthesized it (nemo.gym.synthetic); RolloutSpan: its name is
	// gym.rollout.
	NoParent, Synthetic, RolloutSpan bool
	// ServerHP: a SERVER span's host:port (the address it was reached at);
	// ClientHP: a CLIENT span's (the address it called); "" when unknown.
	ServerHP, ClientHP string
	// HasPeerService: it has peer.service already.
	HasPeerService bool
	// Origin: at its arrival, its process's resource and scope (INTERNAL
	// spans, a possible embedder parent); when it leaves held, the resource
	// and scope it is held with; else nil.
	Origin Origin
}

// IDs are the split's ids (internal/split): T' and hex trace ids.
type IDs interface {
	TraceID(run string, orig [16]byte, rollout string) [16]byte
	Hex(orig [16]byte) string
}

// Config is the gym processor's service_map configuration.
type Config struct {
	Peers      bool              // service_map.enabled
	Synthesize bool              // service_map.synthesize_client_spans
	Split      bool              // split.enabled: parents below gym.rollout need T'
	Configured map[string]string // service_map.peers
	MaxRoots   int               // split.max_tracked_roots: the synthesis table's bound
}

// Repair is the state of the service-map repairs. It is not safe for
// concurrent use: the processor calls it under its lock.
type Repair struct {
	core         *rollout.Core
	ids          IDs
	peers, synth bool
	split        bool
	configured   map[string]string
	learned      map[string]string
	names        map[string]*string // interned service names
	table        synthTable
	peerWaiters  map[string][]*rollout.Node // HoldPeer CLIENT spans, by host:port
	peerDrops    map[string]int             // waiters that left since a list was compacted
	untaught     map[string]struct{}
	counts       Counts
}

// Counts is what the repair counted since it was last asked.
type Counts struct {
	Synthesized, SynthMissed int64
	PeerSet                  [NumPeerSources]int64
}

// New returns the repair of cfg. It holds spans in core; ids gives it T'.
func New(cfg Config, core *rollout.Core, ids IDs) *Repair {
	r := &Repair{
		core:        core,
		ids:         ids,
		peers:       cfg.Peers,
		synth:       cfg.Synthesize,
		split:       cfg.Split,
		configured:  make(map[string]string, len(cfg.Configured)),
		learned:     make(map[string]string),
		names:       make(map[string]*string),
		table:       newSynthTable(cfg.MaxRoots),
		peerWaiters: make(map[string][]*rollout.Node),
		peerDrops:   make(map[string]int),
		untaught:    make(map[string]struct{}),
	}
	for k, v := range cfg.Configured {
		r.configured[strings.ToLower(k)] = v
	}
	return r
}

// Intern returns one shared copy of a service name, so index entries do not
// keep a batch's strings alive.
func (r *Repair) Intern(s string) string {
	if s == "" {
		return ""
	}
	return *r.internPtr(s)
}

func (r *Repair) internPtr(s string) *string {
	if v, ok := r.names[s]; ok {
		return v
	}
	if len(r.names) >= 1<<12 {
		clear(r.names)
	}
	v := strings.Clone(s)
	r.names[v] = &v
	return &v
}

// TakeCounts returns what was counted since the last call and resets it.
func (r *Repair) TakeCounts() Counts {
	c := r.counts
	r.counts = Counts{}
	return c
}

// Arrived notes what an indexed span s (node n) tells about others: a
// SERVER span names its parent's peer service and the host:port it was
// reached at; an INTERNAL span's resource is a possible embedder parent.
func (r *Repair) Arrived(n *rollout.Node, s *Span) {
	switch s.Kind {
	case KindServer:
		if p := n.Parent(); r.peers && p != nil && peerServiceOf(p) == "" {
			setPeerService(p, r.internPtr(s.Service))
			if ph, held := p.Held(); held && ph == rollout.HoldPeer {
				r.core.Release(p) // its SERVER child told it
			}
		}
		r.learnPeer(s.ServerHP, s.Service)
	case KindInternal:
		if r.synth && s.Origin != nil {
			setOrigin(n, s.Origin)
		}
	}
}

// Decided holds n, decided directly or downward, while a repair waits for
// what it needs: a parentless SERVER span with evidence for its rollout's
// gym.rollout, a CLIENT span for its peer. It reports whether n is held (or
// left already).
func (r *Repair) Decided(n *rollout.Node, s *Span, run string) bool {
	if r.synth && r.split && n.How() == rollout.HowDirect && n.Parent() == nil && s.Kind == KindServer && s.NoParent && !s.Synthetic {
		r.holdForRolloutParent(n, run)
		return true
	}
	return r.holdForPeer(n, s)
}

// Plan is what a leaving span gets from the repairs.
type Plan struct {
	// PeerService is the peer.service to set, when HasPeer.
	PeerService string
	HasPeer     bool
	// Synthesized is the CLIENT span to synthesize above it, when HasSynth.
	Synthesized Synthesized
	HasSynth    bool
}

// Left plans the repairs of a span that leaves (d, s), whose trace id
// once rewritten is tid: peer.service on a CLIENT span, a synthesized
// CLIENT parent for a SERVER span, and, for a gym.rollout span, the SERVER
// spans of its rollout that waited for it are let go.
func (r *Repair) Left(d *rollout.Departure, s *Span, tid [16]byte) Plan {
	var pl Plan
	switch s.Kind {
	case KindClient:
		if r.peers {
			r.planPeerService(&pl, s, peerServiceOf(d.Node))
		}
		if d.Phase == rollout.HoldPeer {
			r.dropPeerWaiter(s.ClientHP, d.GaveUp)
		}
	case KindServer:
		r.planSynthesized(&pl, d, s, tid)
	case KindInternal:
		r.rolloutSpanLeft(d, s, tid)
	}
	return pl
}

// Unindexed plans what it can for a span that passes unindexed
// (pass-through runs, zero or duplicate span ids): a SERVER span teaches
// its host:port, a CLIENT span gets peer.service from the host:port maps.
func (r *Repair) Unindexed(s *Span) Plan {
	var pl Plan
	if !r.peers {
		return pl
	}
	switch s.Kind {
	case KindServer:
		r.learnPeer(s.ServerHP, s.Service)
	case KindClient:
		r.planPeerService(&pl, s, "")
	}
	return pl
}
