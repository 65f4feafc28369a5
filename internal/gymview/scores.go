// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymview

// Score is what Gym's output says of one rollout, with the rollout's trace:
// what the gymscores extension sends a backend as that backend's own
// scores (design §6). It is the viewer's join (the run Gym's output joins,
// rollout ids as Gym makes them), so a backend shows what the viewer shows.
type Score struct {
	RolloutID, Run, TraceID string
	// Reward is nil when Gym's row has none (a dropped rollout).
	Reward *float64
	// Masked: Gym's mask_sample, the reward is no valid measurement.
	Masked bool
	// FailureKind is Gym's failure_kind (or the dropped row's failure
	// class); "" when the rollout did not fail.
	FailureKind string
	// Verdict is rollout_verdicts.jsonl's (healthy, unhealthy, unobserved);
	// "" until Gym's health checks wrote it, once the run is done.
	Verdict string
}

// Scores reads what rollouts.jsonl and Gym's output gained and returns a
// Score for each rollout of the run Gym's output joins that has a trace id
// and a row or a verdict in Gym's output, in rollouts.jsonl's order. Nil
// without Gym's output.
func (h *Handler) Scores() []Score {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.gym == nil {
		return nil
	}
	h.refreshLocked()
	h.refreshGymLocked()
	run, _ := h.gymRunLocked()
	var out []Score
	for _, r := range h.index.byRun[run] {
		res := h.gym.result(r.ID)
		if res == nil || r.TraceID == "" {
			continue
		}
		out = append(out, Score{RolloutID: r.ID, Run: r.Run, TraceID: r.TraceID, Reward: res.Reward, Masked: res.Masked,
			FailureKind: res.FailureKind, Verdict: res.Verdict})
	}
	return out
}
