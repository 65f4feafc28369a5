// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package servicemap

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// callSpans yields n CLIENT spans from client to each of servers in run.
func callSpans(run, client string, servers ...string) func(yield func(pcommon.Resource, ptrace.Span) bool) {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", client)
	rs.Resource().Attributes().PutStr("nemo.run.id", run)
	for _, srv := range servers {
		s := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
		s.SetKind(ptrace.SpanKindClient)
		s.SetStartTimestamp(1_000_000)
		s.SetEndTimestamp(6_000_000)
		s.Attributes().PutStr(PeerServiceAttribute, srv)
	}
	return func(yield func(pcommon.Resource, ptrace.Span) bool) {
		spans := rs.ScopeSpans()
		for i := 0; i < spans.Len(); i++ {
			if !yield(rs.Resource(), spans.At(i).Spans().At(0)) {
				return
			}
		}
	}
}

// TestWriterPositions: the position a group of spans brings its writer to
// is written with their calls, read back by Position, and dropped by Forget;
// another writer's position is kept beside it.
func TestWriterPositions(t *testing.T) {
	dir := t.TempDir()
	m := newTestMap(t, dir, Options{})
	m.ObserveAt("w1", 5, callSpans("r", "agent", "model", "model"))
	_, ok := m.Committed("w1")
	assert.False(t, ok, "not written yet")
	require.NoError(t, m.Flush())
	p, ok := m.Committed("w1")
	assert.True(t, ok)
	assert.Equal(t, uint64(5), p)

	other := newTestMap(t, dir, Options{})
	other.ObserveAt("w2", 9, callSpans("r", "agent", "model"))
	require.NoError(t, other.Flush())
	for w, want := range map[string]uint64{"w1": 5, "w2": 9} {
		p, ok, err := m.Position(w)
		require.NoError(t, err)
		assert.True(t, ok, w)
		assert.Equal(t, want, p, w)
	}
	data, err := os.ReadFile(filepath.Join(dir, "service_map.json"))
	require.NoError(t, err)
	edges, err := ReadEdges(data)
	require.NoError(t, err)
	require.Len(t, edges, 1)
	assert.Equal(t, uint64(3), edges[0].Calls)

	m.Forget("w1")
	require.NoError(t, m.Flush())
	_, ok, err = m.Position("w1")
	require.NoError(t, err)
	assert.False(t, ok, "forgotten")
	_, ok, err = m.Position("w2")
	require.NoError(t, err)
	assert.True(t, ok, "another writer's is kept")
}

// TestObserveAtIsNeverSplit: a group that does not fit under MaxEdges is
// added whole after what was held is flushed, so the file never holds part
// of a group without its position.
func TestObserveAtIsNeverSplit(t *testing.T) {
	dir := t.TempDir()
	m := newTestMap(t, dir, Options{MaxEdges: 2})
	m.ObserveAt("w", 1, callSpans("r", "agent", "a", "b"))
	var servers []string
	for i := range 5 {
		servers = append(servers, fmt.Sprint("s", i))
	}
	m.ObserveAt("w", 2, callSpans("r", "agent", servers...)) // flushes the first group, then holds 5 edges
	p, ok, err := m.Position("w")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, uint64(1), p, "the file holds the first group only")
	data, err := os.ReadFile(filepath.Join(dir, "service_map.json"))
	require.NoError(t, err)
	assert.Equal(t, 2, strings.Count(string(data), `"client": "agent"`))
	assert.Equal(t, 5, m.Stats().Edges)
	require.NoError(t, m.Flush())
	p, _, err = m.Position("w")
	require.NoError(t, err)
	assert.Equal(t, uint64(2), p)
}
