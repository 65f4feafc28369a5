// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package instrument

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/otelcol-gym/otelcol-gym/internal/timesplit"
)

// The run summary instrument prints when the command ended and the
// collector it started is drained: from the lines the run added to the
// capture dir's rollouts.jsonl (gymspans, design §5.1), and the files the
// run wrote there.

const rolloutsName = "rollouts.jsonl"

// rolloutLine is what the summary reads of a rollouts.jsonl line.
type rolloutLine struct {
	RolloutID string             `json:"rollout_id"`
	Start     time.Time          `json:"start_time"`
	End       time.Time          `json:"end_time"`
	Status    string             `json:"status"`
	Split     map[string]float64 `json:"time_split_ms"`
}

// runSummary sums up the rollouts of one run.
type runSummary struct {
	rollouts, failed int
	durations        []time.Duration // sorted
	splitMS          [timesplit.Categories]float64
	unreadable       int // lines that are no rollout
}

// rolloutsSize is rollouts.jsonl's size before the run: the run's rollouts
// are the lines after it.
func rolloutsSize(captureDir string) int64 {
	st, err := os.Stat(filepath.Join(captureDir, rolloutsName))
	if err != nil {
		return 0
	}
	return st.Size()
}

// readRuns reads the lines of captureDir's rollouts.jsonl after offset.
func readRuns(captureDir string, offset int64) (runSummary, error) {
	var s runSummary
	f, err := os.Open(filepath.Join(captureDir, rolloutsName))
	if os.IsNotExist(err) {
		return s, nil
	}
	if err != nil {
		return s, err
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return s, err
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var l rolloutLine
		if json.Unmarshal(sc.Bytes(), &l) != nil || l.RolloutID == "" {
			s.unreadable++
			continue
		}
		s.rollouts++
		if l.Status == "ERROR" {
			s.failed++
		}
		if !l.End.Before(l.Start) {
			s.durations = append(s.durations, l.End.Sub(l.Start))
		}
		for c := range timesplit.Categories {
			s.splitMS[c] += l.Split[c.String()]
		}
	}
	slices.Sort(s.durations)
	return s, sc.Err()
}

// quantile is the nearest-rank q-quantile of the sorted durations.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.999999) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// writtenFiles names the files of captureDir modified since since (not the
// hidden ones: locks, the journal), the per-rollout files counted by kind.
func writtenFiles(captureDir string, since time.Time) []string {
	entries, err := os.ReadDir(captureDir)
	if err != nil {
		return nil
	}
	var names []string
	perRollout := map[string]int{}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil || !info.Mode().IsRegular() || info.ModTime().Before(since) || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		switch name := e.Name(); {
		case strings.HasSuffix(name, ".spans.jsonl"):
			perRollout["<rollout>.spans.jsonl"]++
		case strings.HasSuffix(name, ".capture.jsonl"):
			perRollout["<rollout>.capture.jsonl"]++
		default:
			names = append(names, name)
		}
	}
	for _, kind := range []string{"<rollout>.spans.jsonl", "<rollout>.capture.jsonl"} {
		if n := perRollout[kind]; n > 0 {
			names = append(names, fmt.Sprintf("%d %s", n, kind))
		}
	}
	return names
}

// viewCommand is the command that shows the run.
func viewCommand(plan runPlan) string {
	cmd := "otelcol-gym view --capture-dir " + shellQuote(plan.captureDir)
	if plan.gymOutput != "" {
		cmd += " --gym-output " + shellQuote(plan.gymOutput)
	}
	return cmd
}

// write prints the summary, each line starting with instrument's prefix.
func (s runSummary) write(w io.Writer, plan runPlan, files []string) {
	p := "otelcol-gym " + CommandName + ": "
	if s.rollouts == 0 {
		fmt.Fprintf(w, "%sno rollout reached %s (Gym writes rollouts only with %s=true and its telemetry on)\n", p, filepath.Join(plan.captureDir, rolloutsName), observabilityKey)
	} else {
		fmt.Fprintf(w, "%s%d rollouts, %d failed; duration p50 %s, p90 %s\n", p, s.rollouts, s.failed,
			quantile(s.durations, 0.5).Round(time.Millisecond), quantile(s.durations, 0.9).Round(time.Millisecond))
		var total float64
		for _, v := range s.splitMS {
			total += v
		}
		if total > 0 {
			parts := make([]string, 0, timesplit.Categories)
			for c := range timesplit.Categories {
				parts = append(parts, fmt.Sprintf("%s %.0f%%", c, 100*s.splitMS[c]/total))
			}
			fmt.Fprintf(w, "%swhere the time went: %s\n", p, strings.Join(parts, ", "))
		}
	}
	if s.unreadable > 0 {
		fmt.Fprintf(w, "%s%d lines of %s are no rollout\n", p, s.unreadable, rolloutsName)
	}
	if len(files) > 0 {
		fmt.Fprintf(w, "%swritten to %s: %s\n", p, plan.captureDir, strings.Join(files, ", "))
	}
	fmt.Fprintf(w, "%sto see the run: %s\n", p, viewCommand(plan))
}
