// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package repair

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func client(id, parent, trace, evidence, hp string) *tspan {
	return &tspan{id: id, parent: parent, trace: trace, evidence: evidence, s: Span{Kind: KindClient, Service: "agent", ClientHP: hp}}
}

func server(id, parent, trace, evidence, service, hp string) *tspan {
	return &tspan{id: id, parent: parent, trace: trace, evidence: evidence, s: Span{Kind: KindServer, Service: service, ServerHP: hp}}
}

// peer.service comes from the CLIENT span's SERVER child when it arrived,
// else from the configured, then the learned host:port, else the host:port
// itself (design §4.4).
func TestPeerServiceSources(t *testing.T) {
	o := newOwner(Config{Peers: true, Split: true, MaxRoots: 64, Configured: map[string]string{"10.0.0.1:80": "vllm"}})
	o.arrive(0,
		server("s1", "c1", "t", "1-0", "model", "127.0.0.1:8001"),
		client("c1", "", "t", "1-0", "127.0.0.1:8001"),
		client("c2", "", "u", "1-0", "127.0.0.1:8001"),
		client("c3", "", "v", "1-0", "10.0.0.1:80"),
	)
	assert.Equal(t, Plan{PeerService: "model", HasPeer: true}, o.plans["c1"], "its SERVER child")
	assert.Equal(t, Plan{PeerService: "model", HasPeer: true}, o.plans["c2"], "learned from s1")
	assert.Equal(t, Plan{PeerService: "vllm", HasPeer: true}, o.plans["c3"], "configured")
	c := o.r.TakeCounts()
	assert.Equal(t, [NumPeerSources]int64{1, 1, 1, 0}, c.PeerSet)

	hasPeer := client("c4", "", "w", "1-0", "127.0.0.1:8001")
	hasPeer.s.HasPeerService = true
	o.arrive(sec, hasPeer)
	assert.Equal(t, Plan{}, o.plans["c4"], "a span that has one keeps it")
}

// A CLIENT span whose host:port nobody taught waits at most settle for a
// SERVER span that teaches it, and leaves with the first source that
// answers; once it waited in vain, no span to that host:port waits again.
func TestClientWaitsForItsPeer(t *testing.T) {
	o := newOwner(Config{Peers: true, Split: true, MaxRoots: 64})
	o.arrive(0, client("c1", "", "t", "1-0", "127.0.0.1:8001"))
	require.False(t, o.left("c1"), "held for its peer")
	o.arrive(sec, server("s-other", "", "u", "2-0", "model", "127.0.0.1:8001"))
	require.True(t, o.left("c1"), "another SERVER span at its host:port taught it")
	assert.Equal(t, "model", o.plans["c1"].PeerService)

	o.arrive(2*sec, client("c2", "", "v", "1-0", "10.9.9.9:8000"))
	require.False(t, o.left("c2"))
	o.arrive(3*sec, server("s2", "c2", "v", "1-0", "llm", ""))
	require.True(t, o.left("c2"), "its own SERVER child told it")
	assert.Equal(t, "llm", o.plans["c2"].PeerService)

	o.arrive(4*sec, client("c3", "", "w", "1-0", "10.1.1.1:9"))
	o.tick(9 * sec)
	require.True(t, o.left("c3"), "settle passed")
	assert.Equal(t, "10.1.1.1:9", o.plans["c3"].PeerService, "the address it called")
	o.arrive(10*sec, client("c4", "", "x", "1-0", "10.1.1.1:9"))
	assert.True(t, o.left("c4"), "waited in vain once: no span to it waits again")
	lists, drops := o.r.WaitLists()
	assert.Zero(t, lists+drops)
}

// The waiting lists of a host:port never taught stay within twice the spans
// still waiting as they give up one after the other.
func TestPeerWaitersAreCompacted(t *testing.T) {
	o := newOwner(Config{Peers: true, Split: true, MaxRoots: 64})
	const n = 200
	for i := range n {
		o.arrive(int64(i)*sec/1000, client(fmt.Sprint("c", i), "", fmt.Sprint("t", i), "1-0", "10.9.9.9:8000"))
	}
	for i := range n {
		o.tick(5*sec + int64(i)*sec/1000)
		assert.LessOrEqual(t, o.r.Waiting("10.9.9.9:8000"), 2*(n-i-1)+1)
	}
	assert.Zero(t, o.r.Waiting("10.9.9.9:8000"))
}
