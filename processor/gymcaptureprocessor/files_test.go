// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymcaptureprocessor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/otelcol-gym/otelcol-gym/processor/gymcaptureprocessor/internal/metadatatest"
)

// appendLine appends one capture line to the rollout's file.
func appendLine(t *testing.T, dir, rollout, line string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, rollout+".capture.jsonl"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o640)
	require.NoError(t, err)
	_, err = f.WriteString(line + "\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// Past max_open_files the least recently read file is closed; read again,
// it is opened and read on from where it stopped (no line read twice).
func TestOpenFilesBounded(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxOpenFiles = 2 })
	for i := range 3 {
		id := fmt.Sprintf("%d-0", i)
		appendLine(t, h.dir, id, captureJSON(0.1, 0.9, 10+i))
		require.NoError(t, h.p.ConsumeTraces(context.Background(), modelSpan(id, byte(i), 0, 1)))
	}
	require.Equal(t, 3, h.left())
	assert.Equal(t, 2, h.p.files.lru.Len())
	first := h.p.rollouts["0-0"]
	assert.False(t, first.tail.isOpen)
	assert.True(t, h.p.rollouts["2-0"].tail.isOpen)

	appendLine(t, h.dir, "0-0", captureJSON(2.1, 2.9, 42))
	require.NoError(t, h.p.ConsumeTraces(context.Background(), modelSpan("0-0", 9, 2, 3)))
	require.Equal(t, 4, h.left())
	n, ok := inputTokens(t, h.sink.AllTraces()[3])
	assert.True(t, ok)
	assert.Equal(t, int64(42), n)
	assert.Len(t, first.lines, 2)
	assert.True(t, first.tail.isOpen)
	assert.Equal(t, 2, h.p.files.lru.Len())
	assert.Equal(t, int64(4), h.counter(t, metricCaptureLines, "result", "kept"))
}

// A file nothing read for openFileIdle is closed at the next poll; at
// shutdown every file is.
func TestIdleFilesClosed(t *testing.T) {
	h := newHarness(t, nil)
	for i := range 2 {
		id := fmt.Sprintf("%d-0", i)
		appendLine(t, h.dir, id, captureJSON(0.1, 0.9, 1))
		require.NoError(t, h.p.ConsumeTraces(context.Background(), modelSpan(id, byte(i), 0, 1)))
		h.clock.advance(openFileIdle / 2)
	}
	h.clock.advance(openFileIdle/2 - time.Millisecond)
	h.p.poll(context.Background(), false)
	assert.False(t, h.p.rollouts["0-0"].tail.isOpen)
	assert.True(t, h.p.rollouts["1-0"].tail.isOpen)
	require.NoError(t, h.p.Shutdown(context.Background()))
	assert.False(t, h.p.rollouts["1-0"].tail.isOpen)
	assert.Zero(t, h.p.files.lru.Len())
}

// A file cut shorter than what was read is read again from its start when
// a span finds no line in what was read: the lines before are forgotten.
func TestCutCaptureFile(t *testing.T) {
	h := newHarness(t, nil)
	appendLine(t, h.dir, "0-0", captureJSON(5, 6, 1)+"\n"+captureJSON(7, 8, 2))
	require.NoError(t, h.p.ConsumeTraces(context.Background(), modelSpan("0-0", 1, 5, 6)))
	r := h.p.rollouts["0-0"]
	require.Len(t, r.lines, 2)
	require.NoError(t, os.WriteFile(filepath.Join(h.dir, "0-0.capture.jsonl"), []byte(captureJSON(0.1, 0.9, 9)+"\n"), 0o640))
	require.NoError(t, h.p.ConsumeTraces(context.Background(), modelSpan("0-0", 2, 0, 1)))
	require.Equal(t, 2, h.left())
	n, ok := inputTokens(t, h.sink.AllTraces()[1])
	assert.True(t, ok)
	assert.Equal(t, int64(9), n)
	assert.Len(t, r.lines, 1)
}

// A file removed while open is let go: the rollout's later spans find no
// file; Gym writes captures here, so they wait capture_wait for it (Gym
// removes a rollout's file before it dispatches the rollout again:
// linewait.go) and leave without a line, counted as finding no file.
func TestRemovedCaptureFile(t *testing.T) {
	h := newHarness(t, nil)
	appendLine(t, h.dir, "0-0", captureJSON(5, 6, 1))
	require.NoError(t, h.p.ConsumeTraces(context.Background(), modelSpan("0-0", 1, 5, 6)))
	require.NoError(t, os.Remove(filepath.Join(h.dir, "0-0.capture.jsonl")))
	c := h.consume(modelSpan("0-0", 2, 0, 1))
	require.Equal(t, 1, h.waiting())
	h.clock.advance(h.p.cfg.CaptureWait)
	h.p.poll(context.Background(), false)
	require.NoError(t, c.wait())
	require.Equal(t, 2, h.left())
	assert.False(t, h.p.rollouts["0-0"].tail.isOpen)
	metadatatest.AssertEqualProcessorGymcaptureSpansMissed(t, h.tel, []metricdata.DataPoint[int64]{
		{Attributes: attribute.NewSet(attribute.String(metricAttrReason, "no_capture_file")), Value: 1},
	}, metricdatatest.IgnoreTimestamp())
}
