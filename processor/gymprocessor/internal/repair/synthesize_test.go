// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package repair

import (
	"crypto/sha256"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// expectedSyntheticSpanID computes the span id design §4.4 gives the CLIENT
// span synthesized above SERVER span s in trace t, independently: the first
// 8 bytes of SHA-256("otelcol-gym/synthetic/v1" ‖ 0x00 ‖ t ‖ s), the last
// byte set to 1 if all are zero.
func expectedSyntheticSpanID(t [16]byte, s [8]byte) [8]byte {
	buf := append([]byte("otelcol-gym/synthetic/v1\x00"), t[:]...)
	buf = append(buf, s[:]...)
	sum := sha256.Sum256(buf)
	var id [8]byte
	copy(id[:], sum[:8])
	if id == [8]byte{} {
		id[7] = 1
	}
	return id
}

func TestSyntheticSpanIDZeroGuardAndFormula(t *testing.T) {
	for i := 0; i < 64; i++ {
		tid := [16]byte{byte(i), 'a'}
		sid := [8]byte{'a', byte(i)}
		assert.Equal(t, expectedSyntheticSpanID(tid, sid), SyntheticSpanID(tid, sid))
	}
}

// With http_client off a parentless SERVER span with evidence waits for its
// rollout's gym.rollout and leaves with a synthesized CLIENT parent below
// it, in its resource; one that comes after gym.rollout left is repaired at
// once; one in gym.rollout's own trace is left alone; one whose gym.rollout
// never comes leaves as it is (counted).
func TestSynthesizedParentBelowGymRollout(t *testing.T) {
	o := newOwner(Config{Peers: false, Synthesize: true, Split: true, MaxRoots: 64})
	agent := &origin{"agent"}
	early := server("model-early", "", "t-model", "1-0", "model", "")
	o.arrive(0, early)
	require.False(t, o.left("model-early"), "waits for gym.rollout")
	rollout := &tspan{id: "rollout", trace: "t", evidence: "1-0", s: Span{Kind: KindInternal, Service: "agent", RolloutSpan: true, Origin: agent}}
	o.arrive(sec, rollout)
	require.True(t, o.left("model-early"))
	tid := o.ids.TraceID("run", id16("t"), "1-0")
	pl := o.plans["model-early"]
	require.True(t, pl.HasSynth)
	assert.Equal(t, Synthesized{Trace: tid, ID: SyntheticSpanID(tid, id8("model-early")), Parent: id8("rollout"),
		ServerService: "model", OrigHex: hexOf(id16("t")), Rollout: "1-0", Origin: agent}, pl.Synthesized)

	o.arrive(2*sec, server("model-late", "", "t-other", "1-0", "model", ""))
	assert.True(t, o.plans["model-late"].HasSynth, "repaired at once")
	o.arrive(3*sec, server("same-trace", "", "t", "1-0", "agent", ""))
	assert.False(t, o.plans["same-trace"].HasSynth, "a root of gym.rollout's own trace")

	o.arrive(4*sec, server("orphan", "", "t-x", "2-0", "model", ""))
	o.tick(4*sec + 7200*sec)
	assert.False(t, o.plans["orphan"].HasSynth)
	c := o.r.TakeCounts()
	assert.Equal(t, int64(2), c.Synthesized)
	assert.Equal(t, int64(1), c.SynthMissed)
}

// A SERVER span whose parent is an arrived INTERNAL span of another service
// (an embedder calling /run from inside its own span) gets a synthesized
// CLIENT parent below it, in the embedder's resource; one of the same
// service does not.
func TestSynthesizedParentBelowAnEmbedder(t *testing.T) {
	o := newOwner(Config{Synthesize: true, Split: false, MaxRoots: 64})
	rl := &origin{"nemo-rl"}
	step := &tspan{id: "step", trace: "t", s: Span{Kind: KindInternal, Service: "nemo-rl", Origin: rl}}
	run := server("run", "step", "t", "", "agent", "")
	rollout := &tspan{id: "rollout", parent: "run", trace: "t", evidence: "1-0", s: Span{Kind: KindInternal, Service: "agent", Origin: &origin{"agent"}}}
	o.arrive(0, step, rollout, run)
	o.tick(5 * sec)
	require.True(t, o.left("run"))
	pl := o.plans["run"]
	require.True(t, pl.HasSynth)
	assert.Equal(t, id8("step"), pl.Synthesized.Parent)
	assert.Equal(t, Origin(rl), pl.Synthesized.Origin)
	assert.True(t, pl.Synthesized.ServerOrigHex, "the SERVER span's own original trace id")

	o2 := newOwner(Config{Synthesize: true, Split: false, MaxRoots: 64})
	same := &tspan{id: "step", trace: "t", s: Span{Kind: KindInternal, Service: "agent", Origin: &origin{"agent"}}}
	o2.arrive(0, same, server("run", "step", "t", "1-0", "agent", ""))
	assert.False(t, o2.plans["run"].HasSynth)
}
