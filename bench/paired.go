// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package main

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// pairedAgainst names, for each pipeline a paired ratio is reported for, the
// pipelines it is compared with: the capture join alone (Cj) and with the
// GenAI metrics (Cg) against the pipeline without them (C), issue #26's
// target; the time split (C, on by default) against C without it (Cn),
// issue #37's; C against C0 and Cj against Cj0, the same pipeline run by
// -baseline-collector's binary (before a change; issue #36's join); and the
// default pipeline (C), with storage (Cs), and upstream's grouping chains
// (B, G) against upstream's plain pipeline (A), issue #38's targets (C ≤
// 1.3x A, Cs ≤ 1.5x A, C below B and G).
var pairedAgainst = map[string][]string{"Cj": {"C", "Cj0"}, "Cg": {"C"}, "C": {"Cn", "C0", "A", "B", "G"}, "Cs": {"A"}, "B": {"A"}, "G": {"A"}}

// pairedRatio is one pipeline's CPU per span over its base's, run by run:
// repetition k of each ran one after the other, so a load that came and went
// on the machine touches both runs of a pair more alike than two runs far
// apart.
type pairedRatio struct {
	Phase, Pipeline, Base string
	Ratios                []float64 // sorted
	Median                float64
	// Low and High bound the median of the ratios with at least Level
	// confidence (order statistics: no assumption about their spread).
	Low, High, Level float64
	// OfMedians is the ratio of the two pipelines' median CPU per span.
	OfMedians float64
}

// runKey is one run of a pipeline in a phase.
type runKey struct {
	phase, pipeline string
	rep             int
}

// pairedRatios pairs the runs of each (phase, pipeline) of pairedAgainst
// with its bases' of the same repetition.
func pairedRatios(results []*runResult) []pairedRatio {
	cpu := map[runKey]float64{}
	var phases, order []string
	for _, r := range results {
		if r.Rep == 0 || r.Err != "" || r.cpuPerM() <= 0 {
			continue
		}
		cpu[runKey{r.Phase, r.Pipeline, r.Rep}] = r.cpuPerM()
		if !slices.Contains(phases, r.Phase) {
			phases = append(phases, r.Phase)
		}
		if !slices.Contains(order, r.Pipeline) {
			order = append(order, r.Pipeline)
		}
	}
	var out []pairedRatio
	for _, phase := range phases {
		for _, p := range order {
			for _, base := range pairedAgainst[p] {
				if pr, ok := pairRuns(cpu, phase, p, base); ok {
					out = append(out, pr)
				}
			}
		}
	}
	return out
}

// pairRuns is pipeline p's paired ratio against base in phase; false when
// no repetition ran both.
func pairRuns(cpu map[runKey]float64, phase, p, base string) (pairedRatio, bool) {
	pr := pairedRatio{Phase: phase, Pipeline: p, Base: base}
	var mine, theirs []float64
	for k, v := range cpu {
		if k.phase != phase || k.pipeline != p {
			continue
		}
		if b, ok := cpu[runKey{phase, base, k.rep}]; ok {
			pr.Ratios = append(pr.Ratios, v/b)
			mine, theirs = append(mine, v), append(theirs, b)
		}
	}
	if len(pr.Ratios) == 0 {
		return pr, false
	}
	sort.Float64s(pr.Ratios)
	pr.Median = median(pr.Ratios)
	pr.OfMedians = median(mine) / median(theirs)
	lo, hi, level := medianBounds(len(pr.Ratios))
	pr.Level = level
	if level > 0 {
		pr.Low, pr.High = pr.Ratios[lo], pr.Ratios[hi]
	}
	return pr, true
}

// medianBounds are the 0-based order statistics (lo, hi) of n values that
// bound their population median with the highest confidence level of at
// least 95% the narrowest such pair gives (level 0: n is too small for 95%).
// The median lies below the (lo+1)th smallest value with probability
// P(Binomial(n, 1/2) <= lo); the pair is symmetric.
func medianBounds(n int) (lo, hi int, level float64) {
	for k := (n - 1) / 2; k >= 0; k-- {
		// coverage of [x(k+1), x(n-k)] (1-based): 1 - 2 P(B <= k)
		c := 1 - 2*binomialCDF(n, k)
		if c >= 0.95 {
			return k, n - 1 - k, c
		}
	}
	return 0, 0, 0
}

// binomialCDF is P(Binomial(n, 1/2) <= k).
func binomialCDF(n, k int) float64 {
	p := 0.0
	lg, _ := math.Lgamma(float64(n + 1))
	for i := 0; i <= k; i++ {
		li, _ := math.Lgamma(float64(i + 1))
		lni, _ := math.Lgamma(float64(n - i + 1))
		p += math.Exp(lg - li - lni - float64(n)*math.Ln2)
	}
	return p
}

// pairedTable is the report's section of paired ratios.
func pairedTable(prs []pairedRatio) string {
	if len(prs) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("## Paired ratios (issue #26: the capture join against the pipeline without it; issue #37: C, with the time split, against Cn, without it; issue #38: C, Cs, B and G against A)\n\n")
	b.WriteString("CPU per span of a pipeline over its base's, repetition by repetition (each pair ran back to back).\n\n")
	b.WriteString("| phase | pipeline | vs | pairs | median ratio | 95% bounds of the median | ratio of medians | every ratio |\n|---|---|---|---:|---:|---|---:|---|\n")
	for _, pr := range prs {
		bounds := "too few pairs"
		if pr.Level > 0 {
			bounds = fmt.Sprintf("%.3f – %.3f (%.1f%%)", pr.Low, pr.High, 100*pr.Level)
		}
		all := make([]string, len(pr.Ratios))
		for i, r := range pr.Ratios {
			all[i] = fmt.Sprintf("%.2f", r)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %d | %.3f | %s | %.3f | %s |\n", pr.Phase, pr.Pipeline, pr.Base, len(pr.Ratios), pr.Median, bounds, pr.OfMedians, strings.Join(all, " "))
	}
	b.WriteString("\n")
	return b.String()
}
