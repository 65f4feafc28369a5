// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymview

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The run summary is the last (cumulative) point of each GenAI series of
// the run in otel-metrics.jsonl: here the gymgenai connector's golden output
// (tokens in 1277, out 173; 10 calls, one failed), after an earlier flush of
// the same series and a line of another run.
func TestRunSummaryFromMetrics(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "connector", "gymgenaiconnector", "testdata", "expected_metrics.json"))
	require.NoError(t, err)
	var final bytes.Buffer
	require.NoError(t, json.Compact(&final, b))
	earlier := bytes.ReplaceAll(final.Bytes(), []byte(`"sum":1277`), []byte(`"sum":100`))
	other := bytes.ReplaceAll(final.Bytes(), []byte(`"run-1"`), []byte(`"run-2"`))
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "otel-metrics.jsonl"),
		bytes.Join([][]byte{earlier, final.Bytes(), other, []byte("not json"), nil}, []byte("\n")), 0o640))
	h := newTestHandler(t, dir, Options{})

	var s runSummary
	require.NoError(t, json.Unmarshal(get(t, h, "/api/runsummary?run=run-1").Body.Bytes(), &s))
	assert.True(t, s.Available)
	assert.Equal(t, float64(1277), s.InputTokens)
	assert.Equal(t, float64(173), s.OutputTokens)
	assert.Equal(t, uint64(10), s.ModelCalls)
	assert.Equal(t, int64(1), s.Errors)
	require.NotNil(t, s.LatencyMeanS)
	assert.InDelta(t, (7.228+0.388+0.396)/10, *s.LatencyMeanS, 1e-9)
	require.NotNil(t, s.TTFTP95S)

	var none runSummary
	require.NoError(t, json.Unmarshal(get(t, h, "/api/runsummary?run=run-9").Body.Bytes(), &none))
	assert.False(t, none.Available)

	empty := newTestHandler(t, t.TempDir(), Options{})
	require.NoError(t, json.Unmarshal(get(t, empty, "/api/runsummary?run=run-1").Body.Bytes(), &none))
	assert.False(t, none.Available)
}
