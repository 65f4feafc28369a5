// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// TestRoundRecycleLeavesNoReferences: a pooled round holds no span, origin
// or rollout past its lists' lengths, whether it was delivered (applyEdits
// and assemble zero what they use) or recycled as it was (a journal record
// replayed that was delivered before), which recycle clears within the
// lengths only.
func TestRoundRecycleLeavesNoReferences(t *testing.T) {
	fill := func(r *round, n int) {
		rs := ptrace.NewResourceSpans()
		org := newOrigin(rs, rs.ScopeSpans().AppendEmpty(), "agent")
		for range n {
			sp := ptrace.NewSpan()
			r.edits = append(r.edits, spanEdit{sp: sp, rollout: "r1", putRollout: true})
			r.clients = append(r.clients, clientEdit{client: ptrace.NewSpan(), server: sp, rollout: "r1"})
			r.leave(org, sp, 0)
		}
	}
	for _, tc := range []struct {
		name    string
		deliver bool
	}{{"delivered", true}, {"replayed_as_delivered", false}} {
		t.Run(tc.name, func(t *testing.T) {
			r := &round{out: ptrace.NewTraces(), groups: map[*origin]ptrace.SpanSlice{}}
			fill(r, 9)
			if tc.deliver {
				r.applyEdits("nemo.gym.rollout.id")
				r.assemble()
				assert.Equal(t, 9, r.out.SpanCount())
			}
			edits, clients, leaving := r.edits, r.clients, r.leaving
			r.recycle()
			for i := range edits[:cap(edits)] {
				assert.True(t, reflect.ValueOf(edits[:cap(edits)][i]).IsZero(), "edit %d", i)
			}
			for i := range clients[:cap(clients)] {
				assert.True(t, reflect.ValueOf(clients[:cap(clients)][i]).IsZero(), "client %d", i)
			}
			for i := range leaving[:cap(leaving)] {
				assert.True(t, reflect.ValueOf(leaving[:cap(leaving)][i]).IsZero(), "leaving span %d", i)
			}
		})
	}
}
