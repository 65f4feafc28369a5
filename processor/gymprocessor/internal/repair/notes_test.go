// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package repair

import (
	"maps"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/rollout"
	"github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/state"
)

// A note is kept in its cheapest form (no allocation for one fact), and
// reads back what was set, in any order.
func TestNotes(t *testing.T) {
	o := &origin{"agent"}
	svc := "model"
	ref := &rolloutRef{span: [8]byte{1}}
	var n rollout.Node
	assert.Equal(t, "", peerServiceOf(&n))
	setOrigin(&n, o)
	assert.IsType(t, o, n.Note(), "an origin alone is the note")
	setPeerService(&n, &svc)
	assert.IsType(t, &note{}, n.Note())
	assert.Equal(t, "model", peerServiceOf(&n))
	assert.Equal(t, Origin(o), originOf(&n))
	setSynth(&n, ref)
	assert.Equal(t, ref, synthOf(&n))
	assert.Equal(t, "model", peerServiceOf(&n))

	var m rollout.Node
	setPeerService(&m, &svc)
	assert.IsType(t, &svc, m.Note(), "a service alone is the note")
	assert.Nil(t, originOf(&m))
}

// The repair's state and notes read back as written: a repair restored
// from a checkpoint lets the same spans go with the same plans.
func TestCheckpointRoundTrip(t *testing.T) {
	cfg := Config{Peers: true, Synthesize: true, Split: true, MaxRoots: 64}
	o := newOwner(cfg)
	o.arrive(0,
		server("model", "", "t-model", "1-0", "model", "127.0.0.1:8001"),
		client("waits", "", "t-w", "1-0", "10.9.9.9:8000"),
	)
	w := state.NewWriter(0)
	oc := &origins{}
	snap := o.c.Snapshot()
	o.r.AddNodes(snap)
	snap.Encode(w, o.r.Notes(oc))
	o.r.Encode(w, snap, oc)

	o2 := newOwner(cfg)
	o2.names, o2.held = maps.Clone(o.names), maps.Clone(o.held)
	rd := state.NewReader(w.Bytes())
	oc2 := &origins{list: oc.list}
	nodes, err := o2.c.Restore(rd, o2.r.Notes(oc2))
	assert.NoError(t, err)
	o2.r.Restore(rd, nodes, oc2)
	assert.NoError(t, rd.Err())
	assert.Zero(t, rd.Left())

	agent := &origin{"agent"}
	for _, x := range []*owner{o, o2} {
		x.arrive(sec, &tspan{id: "rollout", trace: "t", evidence: "1-0", s: Span{Kind: KindInternal, Service: "agent", RolloutSpan: true, Origin: agent}})
		x.tick(6 * sec)
	}
	assert.Equal(t, o.plans["model"], o2.plans["model"])
	assert.Equal(t, o.plans["waits"], o2.plans["waits"])
	assert.Equal(t, o.order, o2.order[len(o2.order)-len(o.order):])
}

// origins numbers test origins by their place in a list.
type origins struct{ list []*origin }

func (c *origins) EncodeOrigin(w *state.Writer, o Origin) {
	org, _ := o.(*origin)
	for i, x := range c.list {
		if x == org {
			w.Ref(i, true)
			return
		}
	}
	if org == nil {
		w.Ref(0, false)
		return
	}
	c.list = append(c.list, org)
	w.Ref(len(c.list)-1, true)
}

func (c *origins) DecodeOrigin(r *state.Reader) Origin {
	if i := r.Ref(len(c.list)); i >= 0 {
		return c.list[i]
	}
	return nil
}
