// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"
)

// summary is the medians of one (phase, pipeline) over its repetitions.
type summary struct {
	Phase, Pipeline string
	Runs            int
	Errors          []string
	Spans           int
	Rate            float64 // spans/s during the load
	CPUPerM         float64 // collector CPU seconds per million spans
	PeakRSS         float64 // MiB
	Drain           float64 // s
	Lost            int     // summed over runs
	Incomplete      int     // runs whose output was incomplete -drain-max after the load
	Duplicates      int
	KnownP50        float64 // s
	KnownP99        float64
	UpwardP50       float64
	UpwardP99       float64
	RolloutP50      float64 // known spans into their rollout's file (C, paced)
	RolloutP99      float64
	HasRollout      bool
	HasLatency      bool
	HasUpward       bool
	Retries         int64
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func summarize(results []*runResult) []*summary {
	var out []*summary
	index := map[string]*summary{}
	cols := map[string]map[string][]float64{}
	for _, r := range results {
		if r.Rep == 0 { // the profiling run
			continue
		}
		k := r.Phase + "/" + r.Pipeline
		s, ok := index[k]
		if !ok {
			s = &summary{Phase: r.Phase, Pipeline: r.Pipeline}
			index[k] = s
			cols[k] = map[string][]float64{}
			out = append(out, s)
		}
		s.Runs++
		if r.Err != "" {
			s.Errors = append(s.Errors, fmt.Sprintf("rep %d: %s", r.Rep, r.Err))
		}
		s.Lost += r.Lost
		if !r.Drained {
			s.Incomplete++
		}
		s.Duplicates += r.Duplicates
		s.Retries += r.Retries
		c := cols[k]
		c["spans"] = append(c["spans"], float64(r.Spans))
		c["rate"] = append(c["rate"], r.rate())
		c["cpu"] = append(c["cpu"], r.cpuPerM())
		c["rss"] = append(c["rss"], float64(r.PeakRSS)/(1<<20))
		c["drain"] = append(c["drain"], r.Drain)
		if l, ok := r.Lat["known"]; ok {
			c["k50"] = append(c["k50"], l.P50)
			c["k99"] = append(c["k99"], l.P99)
		}
		if l, ok := r.Lat["upward"]; ok {
			c["u50"] = append(c["u50"], l.P50)
			c["u99"] = append(c["u99"], l.P99)
		}
		if l, ok := r.Lat["rollout"]; ok {
			c["r50"] = append(c["r50"], l.P50)
			c["r99"] = append(c["r99"], l.P99)
		}
	}
	for k, s := range index {
		c := cols[k]
		s.Spans = int(median(c["spans"]))
		s.Rate, s.CPUPerM, s.PeakRSS, s.Drain = median(c["rate"]), median(c["cpu"]), median(c["rss"]), median(c["drain"])
		if len(c["k50"]) > 0 {
			s.HasLatency = true
			s.KnownP50, s.KnownP99 = median(c["k50"]), median(c["k99"])
		}
		if len(c["u50"]) > 0 {
			s.HasUpward = true
			s.UpwardP50, s.UpwardP99 = median(c["u50"]), median(c["u99"])
		}
		if len(c["r50"]) > 0 {
			s.HasRollout = true
			s.RolloutP50, s.RolloutP99 = median(c["r50"]), median(c["r99"])
		}
	}
	return out
}

func ratio(v, base float64) string {
	if base <= 0 || v <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.2fx", v/base)
}

// table renders one phase as Markdown.
func table(phase string, sums []*summary) string {
	var base *summary
	for _, s := range sums {
		if s.Phase == phase && s.Pipeline == "A" {
			base = s
		}
	}
	var b strings.Builder
	b.WriteString("| pipeline | spans/s | vs A | CPU s / M spans | vs A | spans/s per core | peak RSS MiB | latency p50 / p99 (rollout known) | upward roots p50 / p99 | drain s | lost |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, s := range sums {
		if s.Phase != phase {
			continue
		}
		rateA, cpuA := "–", "–"
		if base != nil {
			rateA, cpuA = ratio(s.Rate, base.Rate), ratio(s.CPUPerM, base.CPUPerM)
		}
		perCore := "–"
		if s.CPUPerM > 0 {
			perCore = fmt.Sprintf("%.0f", 1e6/s.CPUPerM)
		}
		lat, up := "–", "–"
		if s.HasLatency {
			lat = fmt.Sprintf("%s / %s", ms(s.KnownP50), ms(s.KnownP99))
		}
		if s.HasRollout {
			lat += fmt.Sprintf("; rollout file %s / %s", ms(s.RolloutP50), ms(s.RolloutP99))
		}
		if s.HasUpward {
			up = fmt.Sprintf("%.2f s / %.2f s", s.UpwardP50, s.UpwardP99)
		}
		lost := fmt.Sprintf("%d", s.Lost)
		if s.Duplicates > 0 {
			lost += fmt.Sprintf(" (+%d dup)", s.Duplicates)
		}
		if s.Incomplete > 0 {
			lost += fmt.Sprintf(" (%d/%d runs held spans past the drain)", s.Incomplete, s.Runs)
		}
		if len(s.Errors) > 0 {
			lost += " ⚠ error"
		}
		fmt.Fprintf(&b, "| %s %s | %.0f | %s | %.1f | %s | %s | %.0f | %s | %s | %.1f | %s |\n",
			s.Pipeline, pipelineLabel[s.Pipeline], s.Rate, rateA, s.CPUPerM, cpuA, perCore, s.PeakRSS, lat, up, s.Drain, lost)
	}
	return b.String()
}

var pipelineLabel = map[string]string{
	"A":   "(otlp→batch→file)",
	"B":   "(otlp→groupbytrace→batch→file)",
	"C":   "(otlp→memory_limiter→gym→gymspans console)",
	"Cs":  "(C with the gym journal in file_storage)",
	"Cr":  "(C with gymspans combined_spans: rest)",
	"Csr": "(Cs with gymspans combined_spans: rest)",
	"Cg":  "(C with gymcapture, gymgenai, span_metrics)",
	"Cj":  "(C with gymcapture)",
	"Cj0": "(Cj, -baseline-collector's binary)",
	"C0":  "(C, -baseline-collector's binary)",
	"Cn":  "(C with gymspans time_split off)",
	"C'":  "(…→gym→gymspans otlp_json, no combined)",
	"D":   "(otlp→gym→otlp→sink)",
	"G":   "(otlp→groupbyattrs→batch→file group_by)",
}

// lossesReported says whether a pipeline's losses are what its stock
// components do (reported, not a failure of the run): B's groupbytrace, G's
// file exporter dropping spans without the rollout id.
func lossesReported(pipeline string) bool { return pipeline == "B" || pipeline == "G" }

func ms(s float64) string {
	if s >= 1 {
		return fmt.Sprintf("%.2f s", s)
	}
	return fmt.Sprintf("%.0f ms", s*1e3)
}

// targets checks issue #7's targets: CPU per span and throughput on the
// replay phase (collector bound), RSS and latency at 20,000 spans/s on the
// paced phase when it ran (else on the replay phase, a harder load).
func targets(sums []*summary, pacedRate int) string {
	get := func(phase, p string) *summary {
		for _, s := range sums {
			if s.Phase == phase && s.Pipeline == p {
				return s
			}
		}
		return nil
	}
	a, b, c, cp := get(phaseReplay, "A"), get(phaseReplay, "B"), get(phaseReplay, "C"), get(phaseReplay, "C'")
	var out strings.Builder
	check := func(ok bool, format string, args ...any) {
		mark := "MISS"
		if ok {
			mark = "ok  "
		}
		fmt.Fprintf(&out, "- [%s] %s\n", mark, fmt.Sprintf(format, args...))
	}
	if a == nil || c == nil || cp == nil {
		return "- (issue #7's targets need the replay phase with pipelines A, C and C')\n" + costTargets(get)
	}
	check(cp.CPUPerM <= 1.2*a.CPUPerM, "C' CPU per span ≤ 1.2x A: %.2fx (%.1f vs %.1f s/M)", cp.CPUPerM/a.CPUPerM, cp.CPUPerM, a.CPUPerM)
	check(c.CPUPerM <= 1.5*a.CPUPerM, "C CPU per span ≤ 1.5x A: %.2fx (%.1f vs %.1f s/M)", c.CPUPerM/a.CPUPerM, c.CPUPerM, a.CPUPerM)
	for _, phase := range []string{phaseReplay, phaseGymsim} {
		if pa, pc := get(phase, "A"), get(phase, "C"); pa != nil && pc != nil && pa.CPUPerM > 0 {
			check(pc.CPUPerM <= 1.3*pa.CPUPerM, "C CPU per span ≤ 1.3x A under %s (issue #19; moonshot 1.0x): %.2fx (%.1f vs %.1f s/M)", phase, pc.CPUPerM/pa.CPUPerM, pc.CPUPerM, pa.CPUPerM)
		}
	}
	if b != nil {
		check(c.CPUPerM < b.CPUPerM && cp.CPUPerM < b.CPUPerM, "C and C' below B: C %.1f, C' %.1f, B %.1f s/M", c.CPUPerM, cp.CPUPerM, b.CPUPerM)
	}
	check(c.CPUPerM > 0 && 1e6/c.CPUPerM >= 50000, "C ≥ 50,000 spans/s per core under replay: %.0f", 1e6/c.CPUPerM)
	for _, p := range []*summary{c, cp} {
		if pc := get(phasePaced, p.Pipeline); pc != nil {
			check(pc.Rate >= 0.95*float64(pacedRate) && pc.PeakRSS < 300, "%s at %d spans/s (paced): sustained %.0f spans/s with peak RSS %.1f MiB (target: < 300 MiB)",
				p.Pipeline, pacedRate, pc.Rate, pc.PeakRSS)
			check(pc.HasLatency && pc.KnownP99 < 1, "%s p99 receipt→disk < 1 s for spans whose rollout is known, at %d spans/s: %s", p.Pipeline, pacedRate, ms(pc.KnownP99))
			if pc.HasRollout {
				// Issue #19: configs/C.yaml keeps gymspans' flush_interval of 1 s.
				check(pc.RolloutP99 < 1.1, "%s p99 receipt→rollout file < flush_interval + 100 ms (1.1 s) for spans whose rollout is known, at %d spans/s: %s (issue #19)", p.Pipeline, pacedRate, ms(pc.RolloutP99))
			}
		}
		check(p.Rate >= 20000 && p.PeakRSS < 300, "%s as fast as accepted: %.0f spans/s with peak RSS %.1f MiB (target: ≥ 20,000 spans/s, < 300 MiB)", p.Pipeline, p.Rate, p.PeakRSS)
		check(p.HasLatency && p.KnownP99 < 1, "%s p99 receipt→disk < 1 s for spans whose rollout is known, as fast as accepted: %s", p.Pipeline, ms(p.KnownP99))
	}
	lost := 0
	for _, s := range sums {
		if !lossesReported(s.Pipeline) {
			lost += s.Lost
		}
	}
	check(lost == 0, "no span lost by A, C, C' or D in any phase (%d lost)", lost)
	out.WriteString(costTargets(get))
	return out.String()
}

// costTargets checks the spec's cost budget (issue #29) on every phase that ran A: C
// at most 1.3x A and Cs at most 1.5x A in CPU per span, both below B and G.
func costTargets(get func(phase, p string) *summary) string {
	var out strings.Builder
	for _, phase := range []string{phaseGymsim, phaseReplay, phaseShort} {
		a := get(phase, "A")
		if a == nil || a.CPUPerM <= 0 {
			continue
		}
		for _, t := range []struct {
			p     string
			bound float64
		}{{"C", 1.3}, {"Cs", 1.5}, {"Cr", 1.3}, {"Csr", 1.5}} {
			c := get(phase, t.p)
			if c == nil {
				continue
			}
			mark := "MISS"
			if c.CPUPerM <= t.bound*a.CPUPerM {
				mark = "ok  "
			}
			fmt.Fprintf(&out, "- [%s] %s CPU per span ≤ %.1fx A under %s (issue #29, the spec's cost budget; moonshot 1.0x): %.2fx (%.1f vs %.1f s/M)\n", mark, t.p, t.bound, phase, c.CPUPerM/a.CPUPerM, c.CPUPerM, a.CPUPerM)
			for _, peer := range []string{"B", "G"} {
				if pr := get(phase, peer); pr != nil {
					mark = "MISS"
					if c.CPUPerM < pr.CPUPerM {
						mark = "ok  "
					}
					fmt.Fprintf(&out, "- [%s] %s below %s under %s: %.1f vs %.1f s/M\n", mark, t.p, peer, phase, c.CPUPerM, pr.CPUPerM)
				}
			}
		}
	}
	return out.String()
}

func (h *harness) report() error {
	sums := summarize(h.results)
	var b strings.Builder
	host, _ := os.Hostname()
	fmt.Fprintf(&b, "# otelcol-gym benchmark (%s)\n\n", time.Now().UTC().Format(time.RFC3339))
	fmt.Fprintf(&b, "Machine: %s, %d cores (%s), %s; %s/%s. Collector: %s. Medians of %d repetitions; pipelines alternate within each, in reverse order every other one.\n\n",
		cpuModel(), runtime.NumCPU(), host, memTotal(), runtime.GOOS, runtime.GOARCH, filepath.Base(h.collector), h.o.reps)
	fmt.Fprintf(&b, "Collector binary built %s; repository at %s when the run started.\n\n", binaryTime(h.collector), h.head)
	fmt.Fprintf(&b, "Load average (1/5/15 min) at start %s, at end %s: other work on the machine shares the cores.\n\n", h.loadStart, h.loadEnd)
	for _, phase := range []string{phaseGymsim, phaseTelemetrygen, phaseReplay, phaseShort, phaseCapture, phasePaced} {
		has := false
		for _, s := range sums {
			if s.Phase == phase {
				has = true
			}
		}
		if !has {
			continue
		}
		fmt.Fprintf(&b, "## %s\n\n%s\n", phaseTitle[phase], table(phase, sums))
	}
	b.WriteString(pairedTable(pairedRatios(h.results)))
	b.WriteString("## Targets\n\n")
	b.WriteString(targets(sums, h.o.pacedRate))
	for _, r := range h.results {
		if r.SendFailed > 0 || r.Refused > 0 {
			h.note("%s %s rep %d: the collector's exporter failed to send %.0f spans and its receiver refused %.0f (see %s/%s/collector.log)",
				r.Phase, r.Pipeline, r.Rep, r.SendFailed, r.Refused, r.Phase, runDirName(r))
		}
		if !r.Drained && r.Err == "" {
			h.note("%s %s rep %d: spans still missing %s after the load; %d were not written even after SIGTERM",
				r.Phase, r.Pipeline, r.Rep, h.o.drainMax, r.Lost)
		}
	}
	var errs []string
	for _, s := range sums {
		for _, e := range s.Errors {
			errs = append(errs, fmt.Sprintf("%s %s %s", s.Phase, s.Pipeline, e))
		}
	}
	if len(errs) > 0 {
		b.WriteString("\n## Errors\n\n")
		for _, e := range errs {
			fmt.Fprintf(&b, "- %s\n", e)
		}
	}
	if len(h.notes) > 0 {
		b.WriteString("\n## Notes\n\n")
		for _, n := range h.notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
	}
	if h.profile != "" {
		fmt.Fprintf(&b, "\n## Profile of %s under %s (go tool pprof -top)\n\n```\n%s```\n", h.o.profilePipeline, h.o.profilePhase, h.profile)
	}
	fmt.Fprint(h.stdout, "\n"+b.String())
	if err := os.WriteFile(filepath.Join(h.out, "report.md"), []byte(b.String()), 0o640); err != nil {
		return err
	}
	raw, err := json.MarshalIndent(h.results, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(h.out, "results.json"), raw, 0o640); err != nil {
		return err
	}
	if len(errs) > 0 {
		return fmt.Errorf("%d runs failed (see the report)", len(errs))
	}
	for _, s := range sums {
		if !lossesReported(s.Pipeline) && s.Lost > 0 {
			return fmt.Errorf("pipeline %s lost %d spans in the %s phase", s.Pipeline, s.Lost, s.Phase)
		}
	}
	return nil
}

var phaseTitle = map[string]string{
	phaseGymsim:       "gymsim (default preset, real OTel Go SDK, OTLP gRPC, --blocking; load-generator bound)",
	phaseTelemetrygen: "telemetrygen (traces of 10 spans, OTLP gRPC, 2 workers paced at 3,500 spans/s each: its SDK queue drops beyond ~7,000 spans/s)",
	phaseReplay:       "replay (recorded gymsim run, pre-encoded OTLP/HTTP protobuf, as fast as accepted; collector bound)",
	phaseShort:        "short (many short rollouts of about 20 spans, 512-span OTLP/HTTP protobuf requests from four processes, sent once as fast as accepted; issue #29's input)",
	phaseCapture:      "capture (a recorded gymsim run, pre-encoded OTLP/HTTP protobuf, sent once as fast as accepted, its capture files in the capture dir before the collector starts; collector bound; issue #26's input)",
	phasePaced:        "paced replay (the same requests at a fixed rate: RSS and latency at the target's load)",
}

func cpuModel() string {
	raw, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "model name") {
			if i := strings.IndexByte(line, ':'); i >= 0 {
				return strings.TrimSpace(line[i+1:])
			}
		}
	}
	return "unknown CPU"
}

func memTotal() string {
	raw, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return "? RAM"
	}
	kb := parseStatusKB(string(raw), "MemTotal:")
	return fmt.Sprintf("%.1f GiB RAM", float64(kb)/(1<<20))
}

func binaryTime(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return "?"
	}
	return fi.ModTime().UTC().Format(time.RFC3339)
}

// gitHead names the commit the harness ran at, and whether the tree had
// uncommitted changes (the binary may hold them).
func gitHead(root string) string {
	out, err := exec.Command("git", "-C", root, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "?"
	}
	head := strings.TrimSpace(string(out))
	st, err := exec.Command("git", "-C", root, "status", "--porcelain", "--untracked-files=no").Output()
	if err == nil && len(strings.TrimSpace(string(st))) > 0 {
		head += " (with uncommitted changes)"
	}
	return head
}
