// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package instrument

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestQuantile(t *testing.T) {
	d := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	assert.Equal(t, time.Duration(5), quantile(d, 0.5))
	assert.Equal(t, time.Duration(9), quantile(d, 0.9))
	assert.Equal(t, time.Duration(7), quantile([]time.Duration{7}, 0.9))
	assert.Equal(t, time.Duration(0), quantile(nil, 0.5))
}

// The summary reads only the lines after the offset (the run's), and says
// what it reads.
func TestRunSummary(t *testing.T) {
	dir := t.TempDir()
	before := `{"rollout_id":"0-0","start_time":"2026-08-21T12:00:00Z","end_time":"2026-08-21T12:09:00Z","status":"ERROR","time_split_ms":{"model":1}}` + "\n"
	run := `{"rollout_id":"1-0","start_time":"2026-08-21T12:00:00Z","end_time":"2026-08-21T12:00:01Z","status":"OK","time_split_ms":{"model":600,"tools":0,"verify":100,"agent":300,"queue":0,"other":0}}
{"rollout_id":"1-1","start_time":"2026-08-21T12:00:00Z","end_time":"2026-08-21T12:00:03Z","status":"ERROR","time_split_ms":{"model":2400,"tools":0,"verify":300,"agent":300,"queue":0,"other":0}}
not json
`
	path := filepath.Join(dir, rolloutsName)
	require.NoError(t, os.WriteFile(path, []byte(before+run), 0o600))
	s, err := readRuns(dir, int64(len(before)))
	require.NoError(t, err)
	assert.Equal(t, 2, s.rollouts)
	assert.Equal(t, 1, s.failed)
	assert.Equal(t, 1, s.unreadable)

	var b strings.Builder
	s.write(&b, runPlan{captureDir: "/c", gymOutput: "/o/r.jsonl"}, []string{"rollouts.jsonl", "2 <rollout>.spans.jsonl"})
	assert.Equal(t, `otelcol-gym instrument: 2 rollouts, 1 failed; duration p50 1s, p90 3s
otelcol-gym instrument: where the time went: model 75%, tools 0%, verify 10%, agent 15%, queue 0%, other 0%
otelcol-gym instrument: 1 lines of rollouts.jsonl are no rollout
otelcol-gym instrument: written to /c: rollouts.jsonl, 2 <rollout>.spans.jsonl
otelcol-gym instrument: to see the run: otelcol-gym view --capture-dir '/c' --gym-output '/o/r.jsonl'
`, b.String())

	s, err = readRuns(t.TempDir(), 0)
	require.NoError(t, err)
	b.Reset()
	s.write(&b, runPlan{captureDir: "/c"}, nil)
	assert.Equal(t, `otelcol-gym instrument: no rollout reached /c/rollouts.jsonl (Gym writes rollouts only with observability_enabled=true and its telemetry on)
otelcol-gym instrument: to see the run: otelcol-gym view --capture-dir '/c'
`, b.String())
}
