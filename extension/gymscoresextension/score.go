// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymscoresextension // import "github.com/otelcol-gym/otelcol-gym/extension/gymscoresextension"

import (
	"strconv"

	"github.com/otelcol-gym/otelcol-gym/internal/gymview"
)

// The names of the scores, the same in every backend. reward is Gym's own
// name (its rollouts.jsonl member); the rest are Gym's under its prefix.
const (
	nameReward      = "reward"
	nameFailureKind = "gym.failure_kind"
	nameVerdict     = "gym.verdict"
	// sourceID names otelcol-gym as the scores' source (MLflow's source_id,
	// Phoenix's identifier: the key its upsert goes by).
	sourceID = "otelcol-gym"
)

// score is one named value of one rollout, as a backend takes it: a number
// (reward) or a label (failure kind, verdict).
type score struct {
	TraceID   string // 32 hex
	RolloutID string // the session
	Name      string
	Number    *float64
	Label     string
	Masked    bool // the reward is no valid measurement (Gym's mask_sample)
}

// value is the score's value as text: its identity beside trace and name.
func (s score) value() string {
	if s.Number != nil {
		return strconv.FormatFloat(*s.Number, 'g', -1, 64)
	}
	return s.Label
}

// key identifies a score across polls, retries and restarts: a rollout's
// trace, a name and a value are sent once.
func (s score) key() string { return s.TraceID + " " + s.Name + " " + s.value() }

// scoresOf are the scores Gym's output gives one rollout so far: its
// reward, its failure kind when it failed, its verdict once Gym's health
// checks wrote it.
func scoresOf(g gymview.Score) []score {
	base := score{TraceID: g.TraceID, RolloutID: g.RolloutID}
	var out []score
	if g.Reward != nil {
		s := base
		s.Name, s.Number, s.Masked = nameReward, g.Reward, g.Masked
		out = append(out, s)
	}
	if g.FailureKind != "" {
		s := base
		s.Name, s.Label = nameFailureKind, g.FailureKind
		out = append(out, s)
	}
	if g.Verdict != "" {
		s := base
		s.Name, s.Label = nameVerdict, g.Verdict
		out = append(out, s)
	}
	return out
}
