// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymcaptureprocessor

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The rule of linewait.go: a span that finds no line waits for it while it
// may still come, however long after its end it came, within lineHorizon.
func TestLineMayComeAfterTheSpanCame(t *testing.T) {
	line := captureJSON(0.1, 0.9, 11) + "\n"
	cases := []struct {
		name string
		// before: the rollout's file when the span comes (nil: none);
		// other: another rollout's file is there (Gym captures here).
		before []byte
		other  bool
		// after: how long after its end (in capture_waits) the span comes.
		after int
		waits bool
	}{
		// A CLIENT span ends at the response's headers, before Gym writes
		// the line: it may come capture_wait after its end, line still due.
		{name: "late_file_empty", before: []byte{}, after: 2, waits: true},
		{name: "late_no_file_gym_captures_here", before: nil, other: true, after: 2, waits: true},
		{name: "fresh_no_file_gym_captures_here", before: nil, other: true, after: 0, waits: true},
		// A run that captures elsewhere, or nothing, never waits.
		{name: "late_no_file_no_captures_here", before: nil, after: 2, waits: false},
		{name: "fresh_no_file_no_captures_here", before: nil, after: 0, waits: false},
		// Gym wrote past the call: a later call's line is there.
		{name: "late_later_line_there", before: []byte(captureJSON(1.5, 1.9, 3) + "\n"), after: 2, waits: false},
		// Ended long before it came (an outage, a restart).
		{name: "past_horizon", before: []byte{}, after: lineHorizon + 1, waits: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			path := filepath.Join(h.dir, "0-0.capture.jsonl")
			if tc.other {
				require.NoError(t, os.WriteFile(filepath.Join(h.dir, "9-9.capture.jsonl"), []byte(line), 0o640))
				require.NoError(t, h.consume(modelSpan("9-9", 9, 0, 1)).wait(), "joins its line at once")
			}
			if tc.before != nil {
				require.NoError(t, os.WriteFile(path, tc.before, 0o640))
			}
			// The span ends at t0+1s, when the harness starts.
			h.clock.set(harnessStart.Add(time.Duration(tc.after) * h.p.cfg.CaptureWait))
			c := h.consume(modelSpan("0-0", 1, 0, 1))
			if !tc.waits {
				require.NoError(t, c.wait())
				assert.Zero(t, h.waiting())
				_, ok := inputTokens(t, h.sink.AllTraces()[len(h.sink.AllTraces())-1])
				assert.False(t, ok, "left without a line")
				return
			}
			require.Equal(t, 1, h.waiting(), "waits for its line")
			appendLine(t, h.dir, "0-0", captureJSON(0.1, 0.9, 11))
			h.p.poll(context.Background(), false)
			require.NoError(t, c.wait())
			n, ok := inputTokens(t, h.sink.AllTraces()[len(h.sink.AllTraces())-1])
			assert.True(t, ok, "joined its line once Gym wrote it")
			assert.Equal(t, int64(11), n)
		})
	}
}

// A span that waited for its line and left without it, refused downstream
// and handed on again soon after, does not wait a second time.
func TestSpanWaitsForItsLineOnce(t *testing.T) {
	h := newHarness(t, nil)
	require.NoError(t, os.WriteFile(filepath.Join(h.dir, "0-0.capture.jsonl"), nil, 0o640))
	c := h.consume(modelSpan("0-0", 1, 0, 1))
	require.Equal(t, 1, h.waiting())
	h.clock.advance(h.p.cfg.CaptureWait)
	h.p.poll(context.Background(), false)
	require.NoError(t, c.wait())
	assert.Equal(t, int64(1), h.counter(t, metricSpansMissed, "reason", "wait"))

	h.clock.advance(h.p.cfg.CaptureWait) // the caller's backoff, well within lineHorizon
	require.NoError(t, h.consume(modelSpan("0-0", 1, 0, 1)).wait())
	assert.Zero(t, h.waiting())
	assert.Equal(t, int64(2), h.counter(t, metricSpansMissed, "reason", "wait"))
}
