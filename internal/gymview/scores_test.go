// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymview

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestScoresAreTheViewersJoin: over a real Gym run, Scores gives each
// rollout the viewer lists with Gym's output the same trace id, reward,
// failure and verdict as the rollout list.
func TestScoresAreTheViewersJoin(t *testing.T) {
	h := newTestHandler(t, filepath.Join(whyDir, "captures"), Options{GymOutput: filepath.Join(whyDir, "gym-output")})
	scores := h.Scores()
	var p listPage
	require.NoError(t, json.Unmarshal(get(t, h, "/api/rollouts?run="+whyRun+"&limit=1000").Body.Bytes(), &p))
	want := map[string]listRow{}
	for _, r := range p.Rows {
		if r.Gym != nil && r.TraceID != "" {
			want[r.ID] = r
		}
	}
	require.NotEmpty(t, want)
	require.Len(t, scores, len(want))
	for _, s := range scores {
		r, ok := want[s.RolloutID]
		require.True(t, ok, s.RolloutID)
		assert.Equal(t, r.TraceID, s.TraceID)
		assert.Equal(t, whyRun, s.Run)
		assert.Equal(t, r.Gym.Reward, s.Reward, s.RolloutID)
		assert.Equal(t, r.Gym.FailureKind, s.FailureKind, s.RolloutID)
		assert.Equal(t, r.Gym.Verdict, s.Verdict, s.RolloutID)
	}
}

// TestScoresLive: a rollout gets its Score once both its rollouts.jsonl row
// and Gym's row are there, and its verdict when Gym's health checks write it.
func TestScoresLive(t *testing.T) {
	dir := t.TempDir()
	capt := filepath.Join(dir, "captures")
	require.NoError(t, os.Mkdir(capt, 0o750))
	h := newTestHandler(t, capt, Options{GymOutput: dir})
	assert.Empty(t, h.Scores(), "nothing yet")
	writeFile(t, dir, "rollouts.jsonl", `{"_ng_task_index":0,"_ng_rollout_index":0,"reward":0.5}`+"\n")
	assert.Empty(t, h.Scores(), "no trace yet")
	appendFile(t, filepath.Join(capt, "rollouts.jsonl"), rolloutsLine("run1", "0-0", "OK", 0, "01.000000"))
	s := h.Scores()
	require.Len(t, s, 1)
	assert.Equal(t, 0.5, *s[0].Reward)
	assert.Empty(t, s[0].Verdict)
	writeFile(t, dir, gymVerdictsFile, `{"rollout_id":"0-0","verdict":"healthy","findings":[]}`+"\n")
	assert.Equal(t, "healthy", h.Scores()[0].Verdict)

	none := newTestHandler(t, capt, Options{})
	assert.Nil(t, none.Scores(), "without Gym's output")
}
