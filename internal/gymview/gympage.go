// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymview

import (
	"cmp"

	"go.uber.org/zap"
)

// Gym's output beside the trace: which run it joins, and what the run page
// says of it (/api/gymoutput). Gym's rows carry no run id, so one output
// joins one run of the capture dir: the one configured (gym_run), else the
// run whose first rollout started last (the run Gym wrote it for, when
// the capture dir holds several runs and the output the latest).

// refreshGymLocked reads what Gym's output files gained. A failure is
// shown on the run page and logged once per message. Callers hold h.mu.
func (h *Handler) refreshGymLocked() {
	if h.gym == nil {
		return
	}
	err := h.gym.refresh()
	if err == nil || err.Error() == h.gymLogged {
		return
	}
	h.gymLogged = err.Error()
	h.log.Warn("Cannot read Gym's output", zap.String("gym_output", h.gym.path), zap.Error(err))
}

// gymRunLocked is the run Gym's output joins, and whether it was
// configured. Callers hold h.mu.
func (h *Handler) gymRunLocked() (string, bool) {
	g := h.gym
	if g.runCfg != "" {
		return g.runCfg, true
	}
	if g.latestGen != h.index.gen {
		g.latestGen, g.latest = h.index.gen, ""
		var latestStart int64
		for run, rows := range h.index.byRun {
			first := int64(0)
			for _, r := range rows {
				if r.Start != 0 && (first == 0 || r.Start < first) {
					first = r.Start
				}
			}
			if nk := h.index.notKeptOf(run); nk.Start != 0 && (first == 0 || nk.Start < first) {
				first = nk.Start // its rows let go started first
			}
			if c := cmp.Compare(first, latestStart); c > 0 || (c == 0 && run > g.latest) {
				g.latest, latestStart = run, first
			}
		}
	}
	return g.latest, false
}

// gymJoins: Gym's output joins r's run. Callers hold h.mu.
func (h *Handler) gymJoins(r *rollout) bool {
	if h.gym == nil {
		return false
	}
	run, _ := h.gymRunLocked()
	return r.Run == run
}

// gymResultLocked is what Gym's output says of r: nil when nothing, or
// when r is of a run the output does not join. Callers hold h.mu.
func (h *Handler) gymResultLocked(r *rollout) *gymResult {
	if !h.gymJoins(r) {
		return nil
	}
	return h.gym.result(r.ID)
}

// gymPageCache keeps the counts of gymPage while neither rollouts.jsonl
// nor Gym's output changed.
type gymPageCache struct {
	run              string
	indexGen, gymGen uint64
	page             gymPage
}

// gymPage is the answer of /api/gymoutput.
type gymPage struct {
	Configured bool            `json:"configured"`
	Path       string          `json:"path,omitempty"`
	Run        string          `json:"run"`                 // the run it joins
	ChosenBy   string          `json:"chosen_by,omitempty"` // "gym_run" (configured) or "latest"
	Here       bool            `json:"here"`                // the run asked about is that run
	Error      string          `json:"error,omitempty"`
	Files      []gymFileStatus `json:"files"`
	Joined     int             `json:"joined"`    // rollouts of the run that Gym's output names
	Unmatched  int             `json:"unmatched"` // rollout ids of Gym's output with no rollout in the run
	Rewarded   int             `json:"rewarded"`  // joined rollouts with a reward
	RewardMean *float64        `json:"reward_mean,omitempty"`
	Failed     int             `json:"failed"`
	Unhealthy  int             `json:"unhealthy"`
	// NotKept: rollouts of the run whose rows the viewer no longer keeps
	// (Options.MaxRollouts): not joined, and not counted in Unmatched.
	NotKept int `json:"not_kept,omitempty"`
}

func (h *Handler) gymOutputPage(run string) gymPage {
	p := gymPage{Files: []gymFileStatus{}}
	if h.gym == nil {
		return p
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.refreshLocked()
	g := h.gym
	p.Configured, p.Path, p.Error = true, g.path, g.err
	joined, configured := h.gymRunLocked()
	p.Run, p.Here, p.ChosenBy = joined, joined == run, "latest"
	if configured {
		p.ChosenBy = "gym_run"
	}
	for _, f := range []*gymFile{g.rollouts, g.failures, g.verdicts} {
		if f != nil {
			p.Files = append(p.Files, f.status())
		}
	}
	if !p.Here {
		return p
	}
	c := &g.pageCache
	if c.run == run && c.indexGen == h.index.gen && c.gymGen == g.gen && c.gymGen != 0 {
		p.Joined, p.Unmatched, p.Rewarded, p.RewardMean, p.Failed, p.Unhealthy, p.NotKept = c.page.Joined, c.page.Unmatched, c.page.Rewarded, c.page.RewardMean, c.page.Failed, c.page.Unhealthy, c.page.NotKept
		return p
	}
	defer func() { *c = gymPageCache{run: run, indexGen: h.index.gen, gymGen: g.gen, page: p} }()
	sum := 0.0
	for _, r := range h.index.byRun[run] {
		x, v := g.lookup(r.ID)
		if x == nil && v == nil {
			continue
		}
		p.Joined++
		if x != nil && x.Reward != nil {
			p.Rewarded++
			sum += *x.Reward
		}
		if x.failed() {
			p.Failed++
		}
		if v != nil && v.verdict == "unhealthy" {
			p.Unhealthy++
		}
	}
	if p.Rewarded > 0 {
		mean := sum / float64(p.Rewarded)
		p.RewardMean = &mean
	}
	// A run's rollout ids are distinct: each joined one is one of Gym's.
	// Those whose rows are not kept may be any of the others.
	p.NotKept = h.index.notKeptOf(run).Rollouts
	p.Unmatched = max(0, g.distinct()-p.Joined-p.NotKept)
	return p
}
