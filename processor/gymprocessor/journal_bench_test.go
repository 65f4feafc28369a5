// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-gym/otelcol-gym/internal/timesource"
)

// BenchmarkJournalRecordBatch is what recording a batch costs ConsumeTraces
// with the journal in file_storage, as shipped (TMPDIR decides the disk):
// encoding the batch as it arrived, framing the record, and the store's
// transaction, one caller (no group to share). cpu-ns/span is per span of
// the batches recorded.
func BenchmarkJournalRecordBatch(b *testing.B) {
	small := defaultPresetStream()
	b.Run("sdk_small", func(b *testing.B) { benchJournalRecord(b, small) })
	// The SDKs' default export batch, 512 spans: the stream's batches
	// merged about ten at a time.
	var large []ptrace.Traces
	for i, td := range defaultPresetStream() {
		if i%10 == 0 {
			large = append(large, ptrace.NewTraces())
		}
		td.ResourceSpans().MoveAndAppendTo(large[len(large)-1].ResourceSpans())
	}
	b.Run("sdk_512", func(b *testing.B) { benchJournalRecord(b, large) })
}

func benchJournalRecord(b *testing.B, stream []ptrace.Traces) {
	spans := streamSpans(stream)
	ext := newFileStorage(b, b.TempDir())
	b.Cleanup(func() { _ = ext.Shutdown(context.Background()) })
	client, err := ext.(storage.Extension).GetClient(context.Background(), component.KindProcessor, component.MustNewID("gym"), "")
	require.NoError(b, err)
	jr, _, err := openJournal(context.Background(), client, testConfig())
	require.NoError(b, err)
	clk := timesource.Real{}
	b.ResetTimer()
	t0 := cpuNow()
	for range b.N {
		for _, td := range stream {
			payload, err := batchMarshaler.MarshalTraces(td)
			require.NoError(b, err)
			if _, _, err := jr.write(context.Background(), recordBatch, clk, payload); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64((cpuNow()-t0).Nanoseconds())/float64(b.N*spans), "cpu-ns/span")
	b.ReportMetric(float64(jr.bytes.Load())/float64(b.N*spans), "journal-B/span")
}
