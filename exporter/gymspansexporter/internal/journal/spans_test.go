// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package journal_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/journal"
)

// tracesOf is a batch of rollouts × spansPer spans, its ids from seed.
func tracesOf(seed byte, rollouts, spansPer int) ptrace.Traces {
	td := ptrace.NewTraces()
	for r := range rollouts {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", "nemo-gym/simple_agent")
		ss := rs.ScopeSpans().AppendEmpty()
		ss.Scope().SetName("nemo.lens.helpers")
		for s := range spansPer {
			span := ss.Spans().AppendEmpty()
			span.SetTraceID([16]byte{seed, byte(r)})
			span.SetSpanID([8]byte{seed, byte(r), byte(s)})
			span.SetName("HTTP POST")
			span.Attributes().PutStr("nemo.gym.rollout_id", "0-"+string(rune('0'+r)))
		}
	}
	return td
}

// blobOf is the blob of tds, each with the spans wrote says, as an index
// writes it to its data file.
func blobOf(t testing.TB, wrote func(batch, i int) bool, tds ...ptrace.Traces) []byte {
	t.Helper()
	j, dir := openIndex(t, true)
	var sb journal.SpansBlob
	var m ptrace.ProtoMarshaler
	for bi, td := range tds {
		p, err := m.MarshalTraces(td)
		require.NoError(t, err)
		sb.Add(p, td.SpanCount(), func(i int) bool { return wrote(bi, i) })
	}
	_, err := j.AddSpans(&sb, groupTail(journal.AppendSpansHeader(nil), nil), 0)
	require.NoError(t, err)
	matches, err := filepath.Glob(filepath.Join(dir, journal.Dir, "*.spans"))
	require.NoError(t, err)
	require.Len(t, matches, 1)
	out, err := os.ReadFile(matches[0])
	require.NoError(t, err)
	require.NoError(t, j.Close(true))
	return out
}

// TestBlobRoundTrip: a blob of two batches reads back as the same spans,
// with each batch's mask of the spans its push wrote.
func TestBlobRoundTrip(t *testing.T) {
	a, b := tracesOf(1, 3, 4), tracesOf(2, 2, 9) // 12 and 18 spans: masks across bytes
	data := blobOf(t, func(batch, i int) bool { return batch == 0 || i%3 == 1 }, a, b)
	got, err := journal.DecodeBlob(data)
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, a, got[0].Traces)
	assert.Equal(t, b, got[1].Traces)
	for i, w := range got[0].Wrote {
		assert.True(t, w, "batch 0 span %d", i)
	}
	for i, w := range got[1].Wrote {
		assert.Equal(t, i%3 == 1, w, "batch 1 span %d", i)
	}
}

// TestBlobDamage: a blob cut anywhere, or with a byte changed in its
// framing, is an error or reads back as spans, never a panic; cut inside a
// batch it is an error.
func TestBlobDamage(t *testing.T) {
	data := blobOf(t, func(int, int) bool { return true }, tracesOf(3, 2, 3))
	for n := 1; n < len(data); n++ {
		_, err := journal.DecodeBlob(data[:n])
		assert.Error(t, err, "cut at %d of %d", n, len(data))
	}
	for i := range 8 {
		d := append([]byte(nil), data...)
		d[i] ^= 0xff
		_, _ = journal.DecodeBlob(d)
	}
}

func FuzzDecodeBlob(f *testing.F) {
	f.Add(blobOf(f, func(int, int) bool { return true }, tracesOf(4, 2, 3)))
	f.Add(blobOf(f, func(_, i int) bool { return i == 0 }, tracesOf(5, 1, 1), tracesOf(6, 1, 2)))
	f.Add([]byte{})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := journal.DecodeBlob(data)
		if err != nil {
			return
		}
		for _, bb := range got {
			require.Equal(t, bb.Traces.SpanCount(), len(bb.Wrote))
		}
	})
}
