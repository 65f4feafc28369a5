// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor

import (
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-gym/otelcol-gym/internal/gymtest"
)

// TestLeakedContextIsCountedOnce: the request of rollout 10-1 that named
// 10-0's finished POST /run as its local parent is detached from it and
// counted once, whether the parent arrives before it or after it; 10-2's
// request, whose local parent is around it, is not.
func TestLeakedContextIsCountedOnce(t *testing.T) {
	spans := leakedRequestSpans()
	var parentFirst, requestFirst []sdef
	for _, d := range spans {
		if d.id == "10-0/run" {
			parentFirst = append([]sdef{d}, parentFirst...)
			continue
		}
		parentFirst = append(parentFirst, d)
	}
	for _, d := range spans {
		if d.id != "10-0/run" {
			requestFirst = append(requestFirst, d)
		}
	}
	for name, batches := range map[string][][]sdef{
		"parent_first":  {parentFirst},
		"request_first": {requestFirst, {find1(spans, "10-0/run")}},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig()
			h := newHarness(t, cfg)
			for _, b := range batches {
				h.consume(buildTraces(gymProcs, procOrder, b))
			}
			h.tickAt(cfg.Wait + cfg.Settle)
			require.Zero(t, h.pending())
			assert.Equal(t, int64(1), h.metricSum(metricLeakedContexts))
			out := h.out()
			require.Len(t, out, len(spans))
			leaked := spanNamed(t, out, "10-1/run")
			assert.Empty(t, leaked.ParentID, "10-1's POST /run is cut from 10-0's")
			require.Len(t, leaked.Links, 1)
			assert.Equal(t, linkTypeParent, leaked.Links[0].Attributes[attrLinkType])
			assert.Equal(t, "10-0", spanNamed(t, out, "10-0/run").Rollout)
			assert.Equal(t, "10-2", spanNamed(t, out, "10-2/middleware").Rollout)
		})
	}
}

// spanNamed is the output span whose id gymtest derived from name.
func spanNamed(t *testing.T, out []normSpan, name string) normSpan {
	id := gymtest.SpanID(name)
	for _, s := range out {
		if s.SpanID == hex.EncodeToString(id[:]) {
			return s
		}
	}
	require.Failf(t, "no such span", "%s", name)
	return normSpan{}
}

func find1(spans []sdef, id string) sdef {
	for _, d := range spans {
		if d.id == id {
			return d
		}
	}
	panic(id)
}
