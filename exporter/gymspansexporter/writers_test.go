// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/capturedir"
	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/dedup"
)

// TestStartPicksOneWriter: the configuration decides the writer once, at
// start.
func TestStartPicksOneWriter(t *testing.T) {
	for name, tc := range map[string]struct {
		mutate func(*Config)
		want   groupWriter
	}{
		"journal":       {nil, &journalWriter{}},
		"rest":          {func(c *Config) { c.CombinedSpans = combinedRest }, &restWriter{}},
		"write-through": {func(c *Config) { c.CombinedFile = "" }, &throughWriter{}},
	} {
		t.Run(name, func(t *testing.T) {
			e, _ := newTestExporter(t, tc.mutate)
			startExporter(t, e)
			assert.IsType(t, tc.want, e.writer)
		})
	}
}

// TestRetryTableSettle: a failed span is remembered with the files that hold
// its line, the table is active while it holds one, and a retry that writes
// it everywhere forgets it.
func TestRetryTableSettle(t *testing.T) {
	td := gymTraces(1, 1, 2) // a rollout's root and one child
	r := newRetryTable()
	b := &batch{td: td}
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		sss := td.ResourceSpans().At(i).ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			for k := 0; k < sss.At(j).Spans().Len(); k++ {
				b.refs = append(b.refs, spanRef{rs: int32(i), ss: int32(j), sp: int32(k), claim: dedup.ClaimNew})
			}
		}
	}
	require.Len(t, b.refs, 2)
	rollout := &fileBatch{name: "0-0.spans.jsonl", ok: true, spans: []int32{0, 1}}
	combined := &fileBatch{name: "spans.jsonl", spans: []int32{0, 1}}
	b.files = []*fileBatch{rollout, combined}

	assert.False(t, r.active())
	r.settle(b, td, []bool{true, false})
	assert.True(t, r.active())
	assert.Equal(t, 1, r.Len())
	files, ok := r.files(refKey(td, b.refs[0]))
	require.True(t, ok)
	assert.Equal(t, []string{"0-0.spans.jsonl"}, files)
	_, ok = r.files(refKey(td, b.refs[1]))
	assert.False(t, ok, "a span written everywhere is not remembered")

	first := b.refs[0]
	first.retried = true
	retry := &batch{td: td, refs: []spanRef{first}}
	r.settle(retry, td, nil)
	assert.False(t, r.active())
	assert.Zero(t, r.Len())
}

// TestNameCacheRenders: the cache gives what the template renders, a
// name or the reason there is none.
func TestNameCacheRenders(t *testing.T) {
	c := capturedir.NewNameCache(capturedir.NewTemplate("{run_id}.{rollout_id}.spans.jsonl", "", "spans.jsonl"), maxCachedNames)
	for range 2 { // rendered, then cached
		name, reason := c.Render([2]string{"run1", "0-0"})
		assert.Equal(t, "run1.0-0.spans.jsonl", name)
		assert.Empty(t, reason)
		name, reason = c.Render([2]string{"run1", "../x"})
		assert.Empty(t, name)
		assert.Equal(t, rejectRolloutID, reason)
	}
}
