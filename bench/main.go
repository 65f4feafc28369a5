// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

// Command bench compares otelcol-gym's pipelines with a stock collector's
// (issue #7). One otelcol-gym binary holds every component; the harness runs
// it once per (phase, pipeline, repetition) with the matching config from
// bench/configs on free loopback ports, drives it with the same load, reads
// the collector's CPU time and peak RSS from /proc, counts the spans it wrote
// (so a lost span shows), and prints the medians as a table.
//
//	go run ./bench            # full run, about 8 minutes on 2 cores
//	go run ./bench -quick     # smoke run, about 1 minute
//
// Phases: gymsim (the Gym-shaped load generator, default preset, real OTel Go
// SDK), telemetrygen (contrib's generator, a realism check capped near 7,000
// spans/s by its SDK queue) and replay (pre-encoded OTLP/HTTP requests of a
// recorded gymsim run posted as fast as the collector accepts them, so the
// collector is the bottleneck). See bench/README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// gomaxprocs, when positive, is passed to every collector as GOMAXPROCS.
var gomaxprocs int

type options struct {
	quick        bool
	reps         int
	phases       string
	pipelines    string
	collector    string
	baseline     string // the binary pipelines C0 and Cj0 run (byBaseline)
	gymsim       string
	telemetrygen string
	build        string
	out          string
	keep         bool

	gymsimRollouts    int
	gymsimConcurrency int
	recordRollouts    int
	tgRate            int
	tgDuration        time.Duration
	tgWorkers         int
	replaySpans       int
	replayWorkers     int
	drainMax          time.Duration
	pacedRate         int
	pacedReps         int
	pacedWorkers      int
	pacedPipelines    string
	profile           bool
	profileSeconds    int
	profilePipeline   string
	profilePhase      string
	shortRollouts     int
	captureRollouts   int
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func parseOptions(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.BoolVar(&o.quick, "quick", false, "smoke run: one repetition and small loads (flags set explicitly still win)")
	fs.IntVar(&o.reps, "reps", 3, "repetitions; pipelines alternate within each")
	fs.StringVar(&o.phases, "phases", "gymsim,telemetrygen,replay,short,paced", "phases to run, comma-separated")
	fs.StringVar(&o.pipelines, "pipelines", "A,B,C,C',D", "pipelines to run, comma-separated")
	fs.StringVar(&o.collector, "collector", "bin/otelcol-gym", "otelcol-gym binary (relative to the repository root)")
	fs.StringVar(&o.baseline, "baseline-collector", "", "a second otelcol-gym binary (e.g. main's, relative to the repository root) that pipelines C0 and Cj0 run: C and Cj before a change, paired against them")
	fs.StringVar(&o.gymsim, "gymsim", "bin/gymsim", "gymsim binary (relative to the repository root)")
	fs.StringVar(&o.telemetrygen, "telemetrygen", "", "telemetrygen binary (default: from PATH or $(go env GOPATH)/bin)")
	fs.StringVar(&o.build, "build", "missing", "build bin/otelcol-gym and bin/gymsim: missing, always or never")
	fs.StringVar(&o.out, "out", "", "output directory (default bench/out/<UTC time>)")
	fs.BoolVar(&o.keep, "keep", false, "keep each run's span files (default: deleted once counted)")
	fs.IntVar(&o.gymsimRollouts, "gymsim-rollouts", 500, "rollouts per gymsim run")
	fs.IntVar(&o.gymsimConcurrency, "gymsim-concurrency", 64, "gymsim --concurrency")
	fs.IntVar(&o.recordRollouts, "record-rollouts", 1000, "rollouts of the recorded gymsim run the replay sends")
	fs.IntVar(&o.tgRate, "telemetrygen-rate", 3500, "telemetrygen --rate: spans/s per worker (its SDK queue drops beyond ~7,000 spans/s in all)")
	fs.DurationVar(&o.tgDuration, "telemetrygen-duration", 5*time.Second, "telemetrygen --duration")
	fs.IntVar(&o.tgWorkers, "telemetrygen-workers", 2, "telemetrygen --workers")
	fs.IntVar(&o.replaySpans, "replay-spans", 150000, "spans per replay run")
	fs.IntVar(&o.replayWorkers, "replay-workers", 4, "concurrent replay senders")
	fs.DurationVar(&o.drainMax, "drain-max", 12*time.Second, "longest wait for the output to complete after the load stops")
	fs.IntVar(&o.pacedRate, "paced-rate", 20000, "spans/s of the paced replay phase (the RSS and latency target's load)")
	fs.IntVar(&o.pacedReps, "paced-reps", 1, "repetitions of the paced replay phase")
	fs.IntVar(&o.pacedWorkers, "paced-workers", 16, "concurrent senders of the paced replay phase (enough to keep the pace when a request is slow)")
	fs.StringVar(&o.pacedPipelines, "paced-pipelines", "A,C,C'", "pipelines of the paced replay phase")
	fs.BoolVar(&o.profile, "profile", true, "profile a pipeline (-profile-pipeline) under replay (pprof extension) after the measured runs")
	fs.StringVar(&o.profilePipeline, "profile-pipeline", "C", "the pipeline -profile profiles")
	fs.StringVar(&o.profilePhase, "profile-phase", phaseReplay, "the phase -profile runs under: replay, short, gymsim or capture")
	fs.IntVar(&o.shortRollouts, "short-rollouts", 3000, "rollouts of the short phase (about 20 spans each, 512-span requests)")
	fs.IntVar(&o.captureRollouts, "capture-rollouts", 3000, "rollouts of the recorded gymsim run, with its capture files, that the capture phase sends")
	fs.IntVar(&o.profileSeconds, "profile-seconds", 5, "CPU profile length")
	fs.IntVar(&gomaxprocs, "gomaxprocs", 0, "GOMAXPROCS for the collectors (0: the Go default, all cores)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.quick {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		def := func(name string, apply func()) {
			if !set[name] {
				apply()
			}
		}
		def("reps", func() { o.reps = 1 })
		def("gymsim-rollouts", func() { o.gymsimRollouts = 150 })
		def("record-rollouts", func() { o.recordRollouts = 300 })
		def("telemetrygen-duration", func() { o.tgDuration = 2 * time.Second })
		def("replay-spans", func() { o.replaySpans = 20000 })
		def("profile", func() { o.profile = false })
		def("short-rollouts", func() { o.shortRollouts = 500 })
		def("capture-rollouts", func() { o.captureRollouts = 300 })
	}
	switch o.profilePhase {
	case phaseReplay, phaseShort, phaseGymsim, phaseCapture:
	default:
		return nil, fmt.Errorf("-profile-phase: %q is not replay, short, gymsim or capture", o.profilePhase)
	}
	if o.shortRollouts < 1 || o.captureRollouts < 1 {
		return nil, errors.New("-short-rollouts and -capture-rollouts must be positive")
	}
	switch o.build {
	case "missing", "always", "never":
	default:
		return nil, fmt.Errorf("-build: %q is not missing, always or never", o.build)
	}
	if o.pacedRate < 1 || o.pacedReps < 1 || o.pacedWorkers < 1 {
		return nil, errors.New("-paced-rate, -paced-reps and -paced-workers must be positive")
	}
	if o.reps < 1 || o.replaySpans < 1 || o.replayWorkers < 1 || o.tgWorkers < 1 || o.tgRate < 1 || o.tgDuration <= 0 {
		return nil, errors.New("-reps, -replay-spans, -replay-workers, -telemetrygen-workers, -telemetrygen-rate and -telemetrygen-duration must be positive")
	}
	for _, p := range splitList(o.pipelines) {
		if _, ok := pipelineConfig[p]; !ok {
			return nil, fmt.Errorf("-pipelines: unknown pipeline %q", p)
		}
	}
	if slices.ContainsFunc(splitList(o.pipelines), byBaseline) && o.baseline == "" {
		return nil, errors.New("-pipelines: C0 and Cj0 run -baseline-collector, which is not set")
	}
	if _, ok := pipelineConfig[o.profilePipeline]; !ok {
		return nil, fmt.Errorf("-profile-pipeline: unknown pipeline %q", o.profilePipeline)
	}
	for _, p := range splitList(o.phases) {
		switch p {
		case phaseGymsim, phaseTelemetrygen, phaseReplay, phasePaced, phaseShort, phaseCapture:
		default:
			return nil, fmt.Errorf("-phases: unknown phase %q", p)
		}
	}
	return o, nil
}

const (
	phaseGymsim       = "gymsim"
	phaseTelemetrygen = "telemetrygen"
	phaseReplay       = "replay"
	phasePaced        = "paced"
	phaseShort        = "short"
	// phaseCapture replays a recorded gymsim run once, its capture files
	// in the collector's capture dir: the capture join's load without a
	// load generator on the cores (not in the default -phases).
	phaseCapture = "capture"
)

// pipelineConfig maps a pipeline to its template in bench/configs.
// byBaseline says whether -baseline-collector's binary runs pipeline p: C0
// and Cj0, C and Cj before a change.
func byBaseline(p string) bool { return p == "C0" || p == "Cj0" }

var pipelineConfig = map[string]string{"A": "A", "B": "B", "C": "C", "Cs": "Cstorage", "Cr": "Crest", "Csr": "Cstoragerest", "C'": "Cprime", "Cg": "Cgenai", "Cj": "Cjoin", "Cj0": "Cjoin", "C0": "C", "Cn": "Cnosplit", "D": "D", "G": "G"}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func run(args []string, stdout, stderr io.Writer) int {
	o, err := parseOptions(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "bench: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	h, err := newHarness(ctx, o, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "bench: %v\n", err)
		return 1
	}
	if err := h.runAll(ctx); err != nil {
		fmt.Fprintf(stderr, "bench: %v\n", err)
		return 1
	}
	return 0
}

// repoRoot finds the directory holding go.mod, upward from the working directory.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory: run from the repository")
		}
		dir = parent
	}
}

// ensureBinary builds pkg into path when asked to (or when it is missing).
func ensureBinary(ctx context.Context, root, path, pkg, mode string, log io.Writer) error {
	_, statErr := os.Stat(path)
	if mode == "never" || (mode == "missing" && statErr == nil) {
		return statErr
	}
	if _, err := os.Stat(filepath.Join(root, pkg)); err != nil {
		return fmt.Errorf("%s does not exist yet", pkg)
	}
	fmt.Fprintf(log, "building %s (a cold build of the collector takes ~10 min on 2 cores)\n", path)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", path, "./"+pkg)
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build ./%s: %w", pkg, err)
	}
	return nil
}

// findTelemetrygen returns the telemetrygen binary, or "" when there is none.
func findTelemetrygen(explicit string) string {
	if explicit != "" {
		if _, err := os.Stat(explicit); err == nil {
			return explicit
		}
		return ""
	}
	if p, err := exec.LookPath("telemetrygen"); err == nil {
		return p
	}
	out, err := exec.Command("go", "env", "GOPATH").Output()
	if err == nil {
		for _, dir := range filepath.SplitList(strings.TrimSpace(string(out))) {
			p := filepath.Join(dir, "bin", "telemetrygen")
			if _, err := os.Stat(p); err == nil {
				return p
			}
		}
	}
	return ""
}
