// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package main

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

type harness struct {
	o         *options
	root      string
	out       string
	collector string
	baseline  string // -baseline-collector, "" when not set
	gymsim    string // "" when unavailable
	tgen      string // "" when unavailable
	log       io.Writer
	stdout    io.Writer
	replay    *replaySet
	short     *replaySet // the short phase's requests (shortRun)
	// capture is the capture phase's requests, captureDir the capture
	// files gymsim wrote beside them.
	capture    *replaySet
	captureDir string
	results    []*runResult
	notes      []string
	profile    string // pprof -top output

	loadStart, loadEnd string // /proc/loadavg
	head               string // git HEAD when the harness started
}

func loadavg() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(raw))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func intersect(a, b []string) []string {
	var out []string
	for _, x := range a {
		for _, y := range b {
			if x == y {
				out = append(out, x)
			}
		}
	}
	return out
}

func newHarness(ctx context.Context, o *options, stdout io.Writer) (*harness, error) {
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	h := &harness{o: o, root: root, stdout: stdout}
	h.out = o.out
	if h.out == "" {
		h.out = filepath.Join(root, "bench", "out", time.Now().UTC().Format("20060102T150405Z"))
	}
	if err := os.MkdirAll(h.out, 0o750); err != nil {
		return nil, err
	}
	lf, err := os.Create(filepath.Join(h.out, "bench.log"))
	if err != nil {
		return nil, err
	}
	h.log = io.MultiWriter(stdout, lf)
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(root, p)
	}
	h.collector = abs(o.collector)
	if err := ensureBinary(ctx, root, h.collector, "cmd/otelcol-gym", o.build, h.log); err != nil {
		return nil, fmt.Errorf("collector binary %s: %w", h.collector, err)
	}
	if o.baseline != "" {
		h.baseline = abs(o.baseline)
		if _, err := os.Stat(h.baseline); err != nil {
			return nil, fmt.Errorf("-baseline-collector: %w", err)
		}
	}
	if p := abs(o.gymsim); ensureBinary(ctx, root, p, "cmd/gymsim", o.build, h.log) == nil {
		h.gymsim = p
	} else {
		h.note("gymsim is not available (%s): the gymsim phase is skipped and the replay records the built-in Gym-shaped generator instead", p)
	}
	h.tgen = findTelemetrygen(o.telemetrygen)
	if h.tgen == "" {
		h.note("telemetrygen not found: the telemetrygen phase is skipped (install: go install github.com/open-telemetry/opentelemetry-collector-contrib/cmd/telemetrygen@v0.161.0)")
	}
	h.head = gitHead(root)
	h.logf("bench: output in %s; collector %s; %d cores; reps %d; repository at %s", h.out, h.collector, runtime.NumCPU(), o.reps, h.head)
	return h, nil
}

func (h *harness) logf(format string, args ...any) {
	fmt.Fprintf(h.log, "%s "+format+"\n", append([]any{time.Now().UTC().Format("15:04:05")}, args...)...)
}

func (h *harness) note(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	h.notes = append(h.notes, s)
	if h.log != nil {
		h.logf("note: %s", s)
	}
}

// runResult is one (phase, pipeline, repetition).
type runResult struct {
	Phase, Pipeline string
	Rep             int
	Spans           int     // spans the collector's receiver accepted
	Sent            int     // span ids the load says it sent (replay, gymsim's truth file), 0 when unknown
	Load            float64 // seconds the load took
	Drain           float64 // seconds from the load's end until every span was out
	Drained         bool    // false: the output was still incomplete -drain-max after the load
	CPU             float64 // collector CPU seconds over load + drain
	PeakRSS         int64   // bytes, VmHWM
	Lost            int
	Duplicates      int
	Synthetic       int
	Unexpected      int
	CountedBy       string
	Retries         int64
	Refused         float64
	SendFailed      float64
	Lat             map[string]latency // by class group: "known", "upward"; "rollout": known spans into their rollout's file (C, paced)
	Timing          map[string]float64 // seconds the harness spent: start, stop, tail, count, cleanup
	Err             string
}

type latency struct {
	N             int
	P50, P99, Max float64 // seconds
}

func (r *runResult) rate() float64 {
	if r.Load <= 0 {
		return 0
	}
	return float64(r.Spans) / r.Load
}

func (r *runResult) cpuPerM() float64 {
	if r.Spans == 0 {
		return 0
	}
	return r.CPU / float64(r.Spans) * 1e6
}

func (h *harness) runAll(ctx context.Context) error {
	started := time.Now()
	phases := splitList(h.o.phases)
	needReplay := false
	for _, p := range phases {
		if p == phaseReplay || p == phasePaced {
			needReplay = true
		}
	}
	h.loadStart = loadavg()
	if slices.Contains(phases, phaseShort) || (h.o.profile && h.o.profilePhase == phaseShort) {
		if err := h.prepareShort(); err != nil {
			return err
		}
	}
	if needReplay {
		if err := h.prepareReplay(ctx); err != nil {
			return err
		}
	}
	if h.gymsim != "" && (slices.Contains(phases, phaseCapture) || (h.o.profile && h.o.profilePhase == phaseCapture)) {
		if err := h.prepareCapture(ctx); err != nil {
			return err
		}
	}
	for _, phase := range phases {
		if phase == phaseGymsim && h.gymsim == "" {
			continue
		}
		if phase == phaseTelemetrygen && h.tgen == "" {
			continue
		}
		if phase == phaseCapture && h.capture == nil {
			h.note("the capture phase needs gymsim: skipped")
			continue
		}
		reps, pipelines := h.o.reps, splitList(h.o.pipelines)
		if phase == phasePaced {
			reps, pipelines = h.o.pacedReps, intersect(pipelines, splitList(h.o.pacedPipelines))
		}
		for rep := 1; rep <= reps; rep++ {
			for _, pl := range repOrder(pipelines, rep) {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				r := h.runOne(ctx, phase, pl, rep, 0)
				h.results = append(h.results, r)
				h.logRun(r)
			}
		}
	}
	if h.o.profile && h.canRun(h.o.profilePhase) && ctx.Err() == nil {
		h.runProfile(ctx)
	}
	h.loadEnd = loadavg()
	h.logf("bench: done in %s", time.Since(started).Round(time.Second))
	return h.report()
}

// repOrder is the order the pipelines run in repetition rep: as given in odd
// repetitions, reversed in even ones, so that a drift of the machine's speed
// over an invocation falls alike on each (A B, B A, A B, ...).
func repOrder(pipelines []string, rep int) []string {
	if rep%2 == 1 {
		return pipelines
	}
	out := slices.Clone(pipelines)
	slices.Reverse(out)
	return out
}

func (h *harness) logRun(r *runResult) {
	msg := fmt.Sprintf("%-12s %-2s rep %d: %d spans, load %.2fs (%.0f spans/s), drain %.2fs, CPU %.2fs (%.1f s/M spans), peak RSS %.0f MiB, lost %d, dup %d",
		r.Phase, r.Pipeline, r.Rep, r.Spans, r.Load, r.rate(), r.Drain, r.CPU, r.cpuPerM(), float64(r.PeakRSS)/(1<<20), r.Lost, r.Duplicates)
	if l, ok := r.Lat["known"]; ok {
		msg += fmt.Sprintf(", latency known p50 %.0fms p99 %.0fms (n %d)", l.P50*1e3, l.P99*1e3, l.N)
	}
	if l, ok := r.Lat["upward"]; ok {
		msg += fmt.Sprintf(", upward p50 %.2fs p99 %.2fs (n %d)", l.P50, l.P99, l.N)
	}
	if l, ok := r.Lat["peer"]; ok {
		msg += fmt.Sprintf(", peer unknown p50 %.2fs p99 %.2fs (n %d)", l.P50, l.P99, l.N)
	}
	if l, ok := r.Lat["rollout"]; ok {
		msg += fmt.Sprintf(", known into the rollout file p50 %.0fms p99 %.0fms (n %d)", l.P50*1e3, l.P99*1e3, l.N)
	}
	if len(r.Timing) > 0 {
		msg += fmt.Sprintf(" [harness: start %.1fs, stop %.1fs, tail %.1fs, count %.1fs, cleanup %.1fs]",
			r.Timing["start"], r.Timing["stop"], r.Timing["tail"], r.Timing["count"], r.Timing["cleanup"])
	}
	if !r.Drained && r.Err == "" {
		msg += fmt.Sprintf("; output still incomplete %s after the load (counted again after shutdown)", h.o.drainMax)
	}
	if r.Err != "" {
		msg += "; ERROR: " + r.Err
	}
	h.logf("%s", msg)
}

// prepareReplay records one gymsim run (or the built-in generator's) and
// encodes the replay set.
func (h *harness) prepareReplay(ctx context.Context) error {
	t0 := time.Now()
	var reqs []ptrace.Traces
	if h.gymsim != "" {
		rec, err := startRecorder()
		if err != nil {
			return err
		}
		args := []string{"--preset", "default", "--rollouts", strconv.Itoa(h.o.recordRollouts),
			"--concurrency", strconv.Itoa(h.o.gymsimConcurrency), "--protocol", "http",
			"--endpoint", "http://" + rec.addr, "--blocking", "--run-id", "recorded"}
		err = h.runTool(ctx, "record-gymsim", h.gymsim, args)
		reqs = rec.stop()
		if err != nil {
			h.note("recording gymsim failed (%v): the replay uses the built-in Gym-shaped generator", err)
			reqs = nil
		}
	}
	source := "gymsim --preset default"
	if len(reqs) == 0 {
		reqs = synthesize(h.o.recordRollouts)
		source = "the built-in Gym-shaped generator (default preset shape)"
	}
	liveTimes(reqs, recordedAhead)
	rs, err := buildReplay(reqs, h.o.replaySpans)
	if err != nil {
		return err
	}
	h.replay = rs
	recorded := 0
	for _, td := range reqs {
		recorded += td.SpanCount()
	}
	h.logf("replay: recorded %d requests / %d spans from %s; replaying %d requests / %d spans per run (%s) [%s]",
		len(reqs), recorded, source, len(rs.bodies), rs.total, classCounts(rs.class), time.Since(t0).Round(time.Millisecond))
	h.note("replay load: %d spans per run in %d OTLP/HTTP protobuf requests, re-encoded from %d spans recorded from %s, %d senders",
		rs.total, len(rs.bodies), recorded, source, h.o.replayWorkers)
	return nil
}

// prepareCapture records one gymsim run with its capture files: the capture
// phase sends its requests once, each run with the capture files copied into
// the collector's capture dir before it starts, as Gym writes a line before
// the spans of its call are exported.
func (h *harness) prepareCapture(ctx context.Context) error {
	t0 := time.Now()
	h.captureDir = filepath.Join(h.out, "capture-recording")
	rs, err := recordCapture(h.o.captureRollouts, h.o.gymsimConcurrency, h.captureDir, func(args []string) error {
		return h.runTool(ctx, "record-gymsim-capture", h.gymsim, args)
	})
	if err != nil {
		return err
	}
	h.capture = rs
	files, err := os.ReadDir(h.captureDir)
	if err != nil {
		return fmt.Errorf("the recorded capture files: %w", err)
	}
	h.logf("capture: recorded %d requests / %d spans and %d capture files from gymsim --preset default [%s]",
		len(rs.bodies), rs.total, len(files), time.Since(t0).Round(time.Millisecond))
	h.note("capture load: %d spans in %d OTLP/HTTP protobuf requests recorded from gymsim --preset default --rollouts %d, sent once by %d senders, its %d capture files in the capture dir before the collector starts",
		rs.total, len(rs.bodies), h.o.captureRollouts, h.o.replayWorkers, len(files))
	return nil
}

// recordCapture records, through the recorder, the gymsim run that runGymsim
// runs with the arguments given (rollouts of the default preset over
// OTLP/HTTP, their capture files written into dir), encoded to be sent once.
func recordCapture(rollouts, concurrency int, dir string, runGymsim func(args []string) error) (*replaySet, error) {
	rec, err := startRecorder()
	if err != nil {
		return nil, err
	}
	err = runGymsim([]string{"--preset", "default", "--rollouts", strconv.Itoa(rollouts),
		"--concurrency", strconv.Itoa(concurrency), "--protocol", "http",
		"--endpoint", "http://" + rec.addr, "--blocking", "--run-id", "recorded", "--capture-dir", dir})
	reqs := rec.stop()
	if err != nil {
		return nil, fmt.Errorf("recording gymsim with its capture files: %w", err)
	}
	return replayOnce(reqs)
}

// copyFiles copies every file of src into dst.
func copyFiles(src, dst string) error {
	files, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(src, f.Name()))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dst, f.Name()), b, 0o640); err != nil {
			return err
		}
	}
	return nil
}

// prepareShort builds the short phase's requests: shortRun's many short
// rollouts, sent once.
func (h *harness) prepareShort() error {
	reqs := shortRun(h.o.shortRollouts)
	liveTimes(reqs, recordedAhead)
	rs, err := replayOnce(reqs)
	if err != nil {
		return err
	}
	h.short = rs
	h.note("short load: %d rollouts, %d spans in %d OTLP/HTTP protobuf requests of at most 512 spans from four processes, sent once by %d senders",
		h.o.shortRollouts, rs.total, len(rs.bodies), h.o.replayWorkers)
	return nil
}

// replayFor is the request set a phase sends, nil for the phases that run
// a load generator.
func (h *harness) replayFor(phase string) *replaySet {
	switch phase {
	case phaseReplay, phasePaced:
		return h.replay
	case phaseShort:
		return h.short
	case phaseCapture:
		return h.capture
	}
	return nil
}

// canRun says whether phase has its load: a recorded replay set, or the
// gymsim binary.
func (h *harness) canRun(phase string) bool {
	if phase == phaseGymsim {
		return h.gymsim != ""
	}
	return h.replayFor(phase) != nil
}

// runTool runs a load generator, its output to <out>/<name>.log.
func (h *harness) runTool(ctx context.Context, name, bin string, args []string) error {
	lp := filepath.Join(h.out, name+".log")
	lf, err := os.Create(lp)
	if err != nil {
		return err
	}
	defer lf.Close()
	cmd := exec.CommandContext(ctx, bin, args...) //nolint:gosec // the harness runs the tools it was given
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w; log %s:\n%s", filepath.Base(bin), strings.Join(args, " "), err, lp, tail(lp, 10))
	}
	return nil
}

// load is what a phase's load generator reports.
type load struct {
	start, end time.Time
	expected   map[uint64]uint8 // span id -> class; nil when unknown
	sentAt     []int64          // replay only
	retries    int64
}

func (h *harness) runOne(ctx context.Context, phase, pipeline string, rep int, pprofPort int) *runResult {
	r := &runResult{Phase: phase, Pipeline: pipeline, Rep: rep}
	if err := h.measure(ctx, r, pprofPort); err != nil {
		r.Err = err.Error()
	}
	return r
}

// runDirName is a run's directory under <out>/<phase>.
func runDirName(r *runResult) string {
	return fmt.Sprintf("%s-%d", strings.ReplaceAll(r.Pipeline, "'", "prime"), r.Rep)
}

// prepareRun makes a run's dirs (its capture files copied in, for the
// capture phase) and picks its ports; sink are the ports of pipeline D's
// second collector.
func (h *harness) prepareRun(r *runResult, pprofPort int) (dir string, p, sink ports, err error) {
	dir = filepath.Join(h.out, r.Phase, runDirName(r))
	outDir := filepath.Join(dir, "out")
	if err := os.MkdirAll(outDir, 0o750); err != nil {
		return "", p, sink, err
	}
	pp, err := freePorts(6)
	if err != nil {
		return "", p, sink, err
	}
	if r.Phase == phaseCapture {
		if err := copyFiles(h.captureDir, outDir); err != nil {
			return "", p, sink, fmt.Errorf("copying the capture files: %w", err)
		}
	}
	return dir, ports{GRPC: pp[0], HTTP: pp[1], Metrics: pp[2], Pprof: pprofPort, SinkGRPC: pp[3], Out: outDir},
		ports{GRPC: pp[3], Metrics: pp[4], Out: outDir}, nil
}

// drainTarget is how many spans must come out once the load ended: the
// expected set's spans in a rollout when the load knows its span ids (a job
// span may be held by the gym processor until shutdown; the final count
// covers it), else as many distinct spans as the receiver accepted. It
// records the accepted and sent spans in r and tells the tailer what to
// expect.
func drainTarget(ctx context.Context, r *runResult, col *collector, tl *tailer, expected map[uint64]uint8) (accepted, target, inRollout int, err error) {
	m, err := scrape(ctx, col.metrics)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("reading the collector's metrics: %w", err)
	}
	accepted = int(m[mAccepted])
	r.Spans = accepted
	target = accepted
	if expected != nil {
		r.Sent = len(expected)
		inRollout = countInRollout(expected)
		target = inRollout
		if tl != nil {
			tl.want(expected)
		}
	}
	return accepted, target, inRollout, nil
}

func (h *harness) measure(ctx context.Context, r *runResult, pprofPort int) error {
	dir, p, sp, err := h.prepareRun(r, pprofPort)
	if err != nil {
		return err
	}
	outDir := p.Out

	sinkMetrics := ""
	if r.Pipeline == "D" {
		sink, err := h.startSink(ctx, dir, sp)
		if err != nil {
			return err
		}
		defer func() { _ = sink.stop() }()
		sinkMetrics = sink.metrics
	}
	col, err := h.startMeasured(ctx, r, dir, p)
	if err != nil {
		return err
	}
	stopped := false
	defer func() {
		if !stopped {
			col.kill()
		}
	}()

	fileOutput := r.Pipeline != "D"
	var expected map[uint64]uint8
	if rs := h.replayFor(r.Phase); rs != nil {
		expected = rs.class
	}
	var tl *tailer
	if fileOutput {
		// The per-rollout files too in the paced phase (the rollout-file
		// latency target's load); the replay has more files than is worth
		// following.
		if tl, err = startTailer(outDir, r.Pipeline, r.Phase == phasePaced); err != nil {
			return err
		}
	}
	tailing := tl != nil
	defer func() {
		if tailing {
			_ = tl.close()
		}
	}()
	before, err := readProc(col.pid)
	if err != nil {
		return err
	}
	profDone := h.startProfile(ctx, pprofPort)

	ld, loadErr := h.drive(ctx, r, p, dir)
	if loadErr != nil {
		return loadErr
	}
	r.Load = ld.end.Sub(ld.start).Seconds()
	r.Retries = ld.retries
	if ld.expected != nil {
		expected = ld.expected
	}

	accepted, target, inRollout, err := drainTarget(ctx, r, col, tl, expected)
	if err != nil {
		return err
	}

	// Drain: wait until the output holds every span (or, for D, the exporter
	// has sent them), polling every 50ms, at most -drain-max.
	drainStart := time.Now()
	r.Drained = h.drain(ctx, col, tl, r.Pipeline, expected != nil, target, accepted)
	r.Drain = time.Since(drainStart).Seconds()
	if err := h.readAfter(ctx, r, col, before, dir, profDone); err != nil {
		return err
	}
	stopped, tailing = true, false
	return h.stopAndCount(ctx, r, col, tl, outDir, sinkMetrics, expected, accepted, inRollout, ld)
}

// startMeasured renders the run's collector config into dir and starts the
// collector, timing its start.
func (h *harness) startMeasured(ctx context.Context, r *runResult, dir string, p ports) (*collector, error) {
	cfg := filepath.Join(dir, "config.yaml")
	if err := renderConfig(pipelineConfig[r.Pipeline], p, cfg); err != nil {
		return nil, err
	}
	bin := h.collector
	if byBaseline(r.Pipeline) {
		bin = h.baseline
	}
	t0 := time.Now()
	col, err := startCollector(ctx, bin, cfg, filepath.Join(dir, "collector.log"), p.Metrics, p.GRPC, p.HTTP)
	if err != nil {
		return nil, err
	}
	r.Timing = map[string]float64{"start": time.Since(t0).Seconds()}
	return col, nil
}

// stopAndCount stops the collector (its shutdown flushes whatever was still
// pending) and closes the tailer, counts what is on disk then (countLost),
// and removes the output unless -keep.
func (h *harness) stopAndCount(ctx context.Context, r *runResult, col *collector, tl *tailer, outDir, sinkMetrics string, expected map[uint64]uint8, accepted, inRollout int, ld *load) error {
	t0 := time.Now()
	stopErr := col.stop()
	r.Timing["stop"] = time.Since(t0).Seconds()
	if tl != nil {
		t0 = time.Now()
		_ = tl.close()
		r.Timing["tail"] = time.Since(t0).Seconds()
	}
	if err := countLost(ctx, r, outDir, sinkMetrics, expected, accepted, inRollout, tl, ld, h.replayFor(r.Phase)); err != nil {
		return err
	}
	if !h.o.keep {
		t0 = time.Now()
		_ = os.RemoveAll(outDir)
		r.Timing["cleanup"] = time.Since(t0).Seconds()
	}
	if stopErr != nil {
		return fmt.Errorf("stopping the collector: %w", stopErr)
	}
	return nil
}

// startProfile fetches a CPU profile of the collector while the load runs,
// when pprofPort is set; the channel tells when it is written.
func (h *harness) startProfile(ctx context.Context, pprofPort int) chan error {
	if pprofPort <= 0 {
		return nil
	}
	done := make(chan error, 1)
	go func() {
		done <- fetchProfile(ctx, fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/profile?seconds=%d", pprofPort, h.o.profileSeconds),
			filepath.Join(h.out, "profile-"+h.o.profilePipeline+".pb.gz"))
	}()
	return done
}

// readAfter records, once the output drained, the collector's CPU and peak
// RSS since before, its refusals and send failures, saves its metrics, and
// waits for the profile.
func (h *harness) readAfter(ctx context.Context, r *runResult, col *collector, before procStat, dir string, profDone chan error) error {
	after, err := readProc(col.pid)
	if err != nil {
		return err
	}
	r.CPU = (after.CPU - before.CPU).Seconds()
	r.PeakRSS = after.PeakRSS
	if m, err := scrape(ctx, col.metrics); err == nil {
		r.Refused = m[mRefused]
		r.SendFailed = m[mSendFailed]
	}
	saveMetrics(ctx, col.metrics, filepath.Join(dir, "metrics.prom"))
	if profDone != nil {
		if err := <-profDone; err != nil {
			h.note("profile: %v", err)
		}
	}
	return nil
}

// startSink starts pipeline D's second collector, the one the first exports to.
func (h *harness) startSink(ctx context.Context, dir string, sp ports) (*collector, error) {
	cfg := filepath.Join(dir, "sink.yaml")
	if err := renderConfig("sink", sp, cfg); err != nil {
		return nil, err
	}
	sink, err := startCollector(ctx, h.collector, cfg, filepath.Join(dir, "sink.log"), sp.Metrics, sp.GRPC)
	if err != nil {
		return nil, fmt.Errorf("sink: %w", err)
	}
	return sink, nil
}

// countInRollout is how many of the expected spans belong to a rollout.
func countInRollout(expected map[uint64]uint8) int {
	n := 0
	for _, c := range expected {
		if c != classNone {
			n++
		}
	}
	return n
}

// drain waits until the output holds target spans (the tailer's count; of
// those in a rollout when the load knows them), or, without file output
// (tl nil), until the exporter has sent the accepted spans; it polls every
// 50ms, at most -drain-max, and reports whether the output got there.
func (h *harness) drain(ctx context.Context, col *collector, tl *tailer, pipeline string, byRollout bool, target, accepted int) bool {
	deadline := time.Now().Add(h.o.drainMax)
	var lastSeen int64
	lastChange := time.Now()
	for {
		done := false
		switch {
		case pipeline == "G":
			// G drops the spans that do not carry the rollout id themselves,
			// so no count is its target: its output is complete once it has
			// not grown for longer than the file exporter's flush interval (1 s).
			if seen := tl.distinct.Load(); seen != lastSeen {
				lastSeen, lastChange = seen, time.Now()
			}
			done = lastSeen > 0 && time.Since(lastChange) > 1200*time.Millisecond
		case tl != nil:
			seen := tl.distinct.Load()
			if byRollout {
				seen = tl.inRollout.Load()
			}
			done = int(seen) >= target
		default:
			mm, err := scrape(ctx, col.metrics)
			done = err == nil && mm[mSent]+mm[mSendFailed] >= float64(accepted) && mm[mAccepted] >= float64(accepted)
		}
		if done {
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(50 * time.Millisecond) // polling the output in a harness program
	}
}

// countLost counts, after the collector exited (its shutdown flushes
// whatever was still pending), what reached the output and what was lost:
// the spans in the output files, or for pipeline D the sink's receiver.
func countLost(ctx context.Context, r *runResult, outDir, sinkMetrics string, expected map[uint64]uint8, accepted, inRollout int, tl *tailer, ld *load, replay *replaySet) error {
	switch {
	case r.Pipeline != "D":
		t0 := time.Now()
		c, err := countOutput(r.Pipeline, outDir, expected)
		r.Timing["count"] = time.Since(t0).Seconds()
		if err != nil {
			return err
		}
		r.Duplicates, r.Synthetic, r.Unexpected = c.Duplicates, c.Synthetic, c.Unexpected
		// Lost: accepted spans missing from the output, and spans the load
		// says it sent (by id) that are not there; the larger of the two.
		r.Lost = max(0, accepted-c.Distinct)
		if expected != nil {
			r.Lost = max(r.Lost, len(expected)-c.Found)
		}
		r.CountedBy = "span ids in the output files"
		if r.Pipeline == "C'" {
			// C' writes no span that is in no rollout: count those in one.
			r.CountedBy = "span ids in the per-rollout files (C' writes no span that is in no rollout)"
			if expected != nil {
				r.Lost = max(0, inRollout-c.FoundInRollout)
			}
		}
		if tl != nil && replay != nil {
			r.Lat = latencies(tl.seen(), ld.sentAt, replay)
			if rl := latencies(tl.seenInRollout(), ld.sentAt, replay)["known"]; rl.N > 0 {
				r.Lat["rollout"] = rl
			}
		}
	default:
		sm, err := scrape(ctx, sinkMetrics)
		if err != nil {
			return fmt.Errorf("reading the sink's metrics: %w", err)
		}
		// The sink may also receive synthesized spans, so it must have at
		// least as many as the first collector accepted.
		r.Lost = accepted - int(sm[mAccepted])
		if r.Lost < 0 {
			r.Lost = 0
		}
		r.CountedBy = "receiver accepted_spans of the sink vs of the collector"
	}
	return nil
}

// drive runs the phase's load against the collector.
func (h *harness) drive(ctx context.Context, r *runResult, p ports, dir string) (*load, error) {
	ld := &load{}
	switch r.Phase {
	case phaseReplay, phasePaced, phaseShort, phaseCapture:
		rate := 0.0
		if r.Phase == phasePaced {
			rate = float64(h.o.pacedRate)
		}
		workers := h.o.replayWorkers
		if r.Phase == phasePaced {
			workers = h.o.pacedWorkers
		}
		rs := h.replayFor(r.Phase)
		res, err := replay(ctx, fmt.Sprintf("http://127.0.0.1:%d/v1/traces", p.HTTP), rs, workers, rate)
		if err != nil {
			return nil, err
		}
		ld.start, ld.end, ld.sentAt, ld.retries = res.start, res.end, res.sentAt, res.retries
		ld.expected = rs.class
	case phaseGymsim:
		truth := filepath.Join(dir, "truth.jsonl")
		args := []string{"--preset", "default", "--rollouts", strconv.Itoa(h.o.gymsimRollouts),
			"--concurrency", strconv.Itoa(h.o.gymsimConcurrency), "--protocol", "grpc",
			"--endpoint", fmt.Sprintf("127.0.0.1:%d", p.GRPC), "--blocking",
			"--run-id", fmt.Sprintf("bench-%s-%d", strings.ReplaceAll(r.Pipeline, "'", "p"), r.Rep), "--truth", truth}
		if r.Pipeline == "C" || r.Pipeline == "Cr" || r.Pipeline == "Cg" || r.Pipeline == "Cj" || r.Pipeline == "Cj0" || r.Pipeline == "Cn" || r.Pipeline == "C0" {
			// Gym's capture lines beside the spans, for Cg's join (C gets
			// them too, so that the two differ only in the collector).
			args = append(args, "--capture-dir", p.Out)
		}
		ld.start = time.Now()
		err := h.runTool(ctx, filepath.Join(r.Phase, fmt.Sprintf("gymsim-%s-%d", strings.ReplaceAll(r.Pipeline, "'", "prime"), r.Rep)), h.gymsim, args)
		ld.end = time.Now()
		if err != nil {
			return nil, err
		}
		exp, err := readTruth(truth)
		if err != nil {
			return nil, err
		}
		ld.expected = exp
	case phaseTelemetrygen:
		args := []string{"traces", "--otlp-insecure", "--otlp-endpoint", fmt.Sprintf("127.0.0.1:%d", p.GRPC),
			"--workers", strconv.Itoa(h.o.tgWorkers), "--rate", strconv.Itoa(h.o.tgRate), "--duration", h.o.tgDuration.String(), "--child-spans", "9",
			"--service", "telemetrygen",
			"--telemetry-attributes", fmt.Sprintf("nemo.gym.rollout.id=%q", fmt.Sprintf("tg-%d", r.Rep)),
			"--otlp-attributes", fmt.Sprintf("nemo.run.id=%q", "bench-telemetrygen")}
		ld.start = time.Now()
		err := h.runTool(ctx, filepath.Join(r.Phase, fmt.Sprintf("telemetrygen-%s-%d", strings.ReplaceAll(r.Pipeline, "'", "prime"), r.Rep)), h.tgen, args)
		ld.end = time.Now()
		if err != nil {
			return nil, err
		}
	}
	return ld, nil
}

// readTruth reads gymsim's truth file: every span id, classDirect for spans
// in a rollout (gymsim does not say how the rollout is known) and classNone
// for the others.
func readTruth(path string) (map[uint64]uint8, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("gymsim truth: %w", err)
	}
	defer f.Close()
	out := map[uint64]uint8{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var l struct {
			SpanID    string `json:"span_id"`
			RolloutID string `json:"rollout_id"`
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return nil, fmt.Errorf("gymsim truth %s: %w", path, err)
		}
		raw, err := hex.DecodeString(strings.TrimPrefix(l.SpanID, "0x"))
		if err != nil || len(raw) != 8 {
			return nil, fmt.Errorf("gymsim truth %s: bad span id %q", path, l.SpanID)
		}
		id := uint64(0)
		for _, b := range raw {
			id = id<<8 | uint64(b)
		}
		c := classNone
		if l.RolloutID != "" {
			c = classDirect
		}
		out[id] = c
	}
	return out, sc.Err()
}

// latencies turns first-seen times into receipt-to-disk latency by class:
// "known" (direct or downward: the processor can know the rollout at once),
// "upward" (rollout roots, decided settle after arrival) and "peer" (known
// CLIENT spans whose callee sends no SERVER span: the first wait settle).
func latencies(seen map[uint64]int64, sentAt []int64, rs *replaySet) map[string]latency {
	groups := map[string][]float64{}
	for i, ids := range rs.ids {
		if i >= len(sentAt) || sentAt[i] == 0 {
			continue
		}
		for _, id := range ids {
			at, ok := seen[id]
			if !ok {
				continue
			}
			g := ""
			switch rs.class[id] {
			case classDirect, classDownward:
				g = "known"
			case classUpward:
				g = "upward"
			case classPeer:
				g = "peer"
			default:
				continue
			}
			groups[g] = append(groups[g], float64(at-sentAt[i])/1e9)
		}
	}
	out := map[string]latency{}
	for g, v := range groups {
		sort.Float64s(v)
		out[g] = latency{N: len(v), P50: quantile(v, 0.50), P99: quantile(v, 0.99), Max: v[len(v)-1]}
	}
	return out
}

// quantile of sorted values (nearest rank).
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	if i < 0 {
		i = 0
	}
	if i >= len(sorted) {
		i = len(sorted) - 1
	}
	return sorted[i]
}

// runProfile runs the profiled pipeline (C unless -profile-pipeline) once
// more under its phase (-profile-phase) with the pprof extension and keeps the top of its CPU
// profile. It is not part of the table.
func (h *harness) runProfile(ctx context.Context) {
	pp, err := freePorts(1)
	if err != nil {
		h.note("profile: %v", err)
		return
	}
	name := h.o.profilePipeline
	h.logf("profile: pipeline %s under %s, %ds CPU profile", name, h.o.profilePhase, h.o.profileSeconds)
	r := h.runOne(ctx, h.o.profilePhase, name, 0, pp[0])
	h.logRun(r)
	prof := filepath.Join(h.out, "profile-"+name+".pb.gz")
	if _, err := os.Stat(prof); err != nil {
		h.note("profile: no profile was written")
		return
	}
	var parts []string
	// Flat, then cumulative restricted to this project's frames and system
	// calls (the receiver and exporterhelper frames above them say little).
	for _, mode := range [][]string{{"-top", "-nodecount=20"}, {"-top", "-cum", "-nodecount=40", `-show=github.com/otelcol-gym|^syscall\.|unix\.`}} {
		args := append([]string{"tool", "pprof"}, mode...)
		args = append(args, h.collector, prof)
		out, err := exec.CommandContext(ctx, "go", args...).CombinedOutput()
		if err != nil {
			h.note("profile: go tool pprof: %v", err)
			return
		}
		parts = append(parts, string(out))
	}
	h.profile = strings.Join(parts, "\n")
	_ = os.WriteFile(filepath.Join(h.out, "profile-"+name+".txt"), []byte(h.profile), 0o640)
}

func fetchProfile(ctx context.Context, url, path string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return errors.New("GET " + url + ": " + resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
