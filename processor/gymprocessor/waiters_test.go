// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/processor/processortest"
)

// TestAbsentParentDoesNotKeepLeftChildren runs many rollouts of Gym's
// default preset under a gym.job span that has not arrived (it ends with the
// run, hours later). Every orchestrator CLIENT span waits on that absent
// parent and then leaves after settle; the parent's waiter list must not
// keep them all (it did: one node per rollout for the whole run).
func TestAbsentParentDoesNotKeepLeftChildren(t *testing.T) {
	const rollouts = 2000
	sink := new(consumertest.TracesSink)
	clk := newFakeClock()
	cfg := testConfig()
	p, err := newGymProcessorWithClock(processortest.NewNopSettings(componentType), cfg, sink, clk)
	require.NoError(t, err)
	period := tickPeriod(cfg.Settle)
	in := 0
	for w := 0; w < rollouts; w += 16 {
		var spans []sdef
		for r := w; r < w+16; r++ {
			spans = append(spans, rolloutSpans(fmt.Sprintf("%d-0", r), rolloutOpts{obs: true, hParent: "job", trace: "job"})...)
		}
		td := buildTraces(gymProcs, procOrder, spans)
		in += td.SpanCount()
		require.NoError(t, p.ConsumeTraces(context.Background(), td))
		clk.Advance(period)
		p.tick(context.Background())
	}
	for i := 0; i < 4; i++ { // past settle: every upward root has left
		clk.Advance(cfg.Settle)
		p.tick(context.Background())
	}

	p.mu.Lock()
	longest, waiting := 0, int32(0)
	for _, n := range p.eng.idx.m {
		if len(n.waiters) > longest {
			longest, waiting = len(n.waiters), n.nWait
		}
	}
	pending := len(p.eng.heap)
	p.mu.Unlock()
	t.Logf("%d rollouts: longest waiter list %d (%d still waiting), %d spans pending", rollouts, longest, waiting, pending)
	assert.LessOrEqual(t, longest, 2*int(waiting)+8, "a waiter list holds at most twice the children still waiting")
	assert.Less(t, longest, rollouts/10, "left children are not kept")

	require.NoError(t, p.Shutdown(context.Background()))
	out, synth := 0, 0
	for _, td := range sink.AllTraces() {
		for i := 0; i < td.ResourceSpans().Len(); i++ {
			for j := 0; j < td.ResourceSpans().At(i).ScopeSpans().Len(); j++ {
				spans := td.ResourceSpans().At(i).ScopeSpans().At(j).Spans()
				for k := 0; k < spans.Len(); k++ {
					if v, ok := spans.At(k).Attributes().Get(attrSynthetic); ok && v.Bool() {
						synth++
					} else {
						out++
					}
				}
			}
		}
	}
	assert.Equal(t, in, out, "every span left once (%d synthesized besides)", synth)
}
