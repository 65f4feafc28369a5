// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package repair // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/repair"

import (
	"strings"

	"github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/rollout"
)

// peer.service on CLIENT spans (design §4.4): the service a host:port is,
// learned from SERVER spans or configured.

// maxLearnedPeers bounds the host:port → service map learned from SERVER
// spans; it is cleared whole when full (the configured peers stay).
const maxLearnedPeers = 4096

// Sources of peer.service (metric attribute "source").
const (
	PeerFromChild      = iota // the CLIENT span's SERVER child, already seen
	PeerFromConfigured        // service_map.peers
	PeerFromLearned           // host:port learned from SERVER spans
	PeerFromAddress           // the host:port the CLIENT span called
	NumPeerSources
)

// PeerSourceNames are the sources' metric attribute values.
var PeerSourceNames = [NumPeerSources]string{"child", "configured", "learned", "address"}

// learn records the host:port a SERVER span was reached at, and reports
// whether it was not known before.
func (r *Repair) learn(hp, service string) bool {
	if !r.peers || service == "" || hp == "" {
		return false
	}
	old, ok := r.learned[hp]
	if ok && old == service {
		return false
	}
	if len(r.learned) >= maxLearnedPeers {
		clear(r.learned)
	}
	r.learned[strings.Clone(hp)] = r.Intern(service)
	return !ok
}

// knows reports whether the service at hp is configured or learned, or
// whether waiting for it was already tried in vain.
func (r *Repair) knows(hp string) bool {
	if _, ok := r.configured[hp]; ok {
		return true
	}
	if _, ok := r.learned[hp]; ok {
		return true
	}
	_, ok := r.untaught[hp]
	return ok
}

// giveUpOn records that a CLIENT span waited for hp in vain.
func (r *Repair) giveUpOn(hp string) {
	if hp == "" {
		return
	}
	if len(r.untaught) >= maxLearnedPeers {
		clear(r.untaught)
	}
	r.untaught[strings.Clone(hp)] = struct{}{}
}

// planPeerService puts into pl the peer.service a CLIENT span s gets unless
// it has one (design §4.4): its SERVER child's service when seen (child),
// else the service mapped to the host:port it called (configured, then
// learned), else that host:port; and counts its source.
func (r *Repair) planPeerService(pl *Plan, s *Span, child string) {
	if s.HasPeerService {
		return
	}
	v, src := child, PeerFromChild
	if child == "" {
		hp := s.ClientHP
		if hp == "" {
			return
		}
		var ok bool
		if v, ok = r.configured[hp]; ok {
			src = PeerFromConfigured
		} else if v, ok = r.learned[hp]; ok {
			src = PeerFromLearned
		} else {
			v, src = hp, PeerFromAddress
		}
	}
	pl.PeerService, pl.HasPeer = v, true
	r.counts.PeerSet[src]++
}

// learnPeer learns the service at hp from a SERVER span, and lets the CLIENT
// spans that waited for it go.
func (r *Repair) learnPeer(hp, service string) {
	if !r.learn(hp, service) {
		return
	}
	ws := r.peerWaiters[hp]
	delete(r.peerWaiters, hp)
	delete(r.peerDrops, hp)
	for _, w := range ws {
		if ph, held := w.Held(); held && ph == rollout.HoldPeer {
			r.core.Release(w)
		}
	}
}

// holdForPeer holds a decided CLIENT span that would leave now while no
// source knows the service it called (design §4.4): the first calls of a run
// to each server, whose SERVER spans have not arrived yet, would otherwise
// give Jaeger and service_map.json a phantom 127.0.0.1:port node. It reports
// whether it held the span; once a host:port is learned no span waits.
func (r *Repair) holdForPeer(n *rollout.Node, s *Span) bool {
	if !r.peers || peerServiceOf(n) != "" || s.Kind != KindClient || s.HasPeerService {
		return false
	}
	hp := s.ClientHP
	if hp == "" || r.knows(hp) || !r.core.Hold(n, rollout.HoldPeer) {
		return false
	}
	r.peerWaiters[hp] = append(r.peerWaiters[hp], n)
	return true
}

// dropPeerWaiter forgets the CLIENT spans of host:port hp that no longer
// wait, so that a host:port never learned leaves nothing behind; with
// untaught, a span waited for hp in vain, and no span to it waits again.
// Forgetting scans the host:port's list, so it is done once half of the list
// has left since the last scan: each waiter that leaves costs a constant
// time however many wait (the first settle of a run can hold thousands of a
// model server's calls to its LLM, which give up one after the other).
func (r *Repair) dropPeerWaiter(hp string, untaught bool) {
	if untaught {
		r.giveUpOn(hp)
	}
	ws := r.peerWaiters[hp]
	if d := r.peerDrops[hp] + 1; 2*d < len(ws) {
		r.peerDrops[hp] = d
		return
	}
	delete(r.peerDrops, hp)
	if kept := stillWaiting(ws); len(kept) == 0 {
		delete(r.peerWaiters, hp)
	} else {
		r.peerWaiters[hp] = kept
	}
}

// compactPeerWaiters forgets every waiter that left, in every list.
func (r *Repair) compactPeerWaiters() {
	for hp, ws := range r.peerWaiters {
		if kept := stillWaiting(ws); len(kept) == 0 {
			delete(r.peerWaiters, hp)
		} else {
			r.peerWaiters[hp] = kept
		}
	}
	clear(r.peerDrops)
}

// stillWaiting keeps, in place, the nodes of ws still held for their peer.
func stillWaiting(ws []*rollout.Node) []*rollout.Node {
	kept := ws[:0]
	for _, w := range ws {
		if ph, held := w.Held(); held && ph == rollout.HoldPeer {
			kept = append(kept, w)
		}
	}
	clear(ws[len(kept):])
	return kept
}

// Waiting is the number of CLIENT spans listed as waiting for hp's service
// (for tests of the lists' bound).
func (r *Repair) Waiting(hp string) int { return len(r.peerWaiters[hp]) }

// WaitLists is the number of host:ports with waiting lists, and of lists
// with drops not yet compacted.
func (r *Repair) WaitLists() (lists, drops int) { return len(r.peerWaiters), len(r.peerDrops) }
