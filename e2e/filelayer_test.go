// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue #19, the gymspans file layer, with the built collector under gymsim
// load: each rollout's file opened about once and appended once per
// flush_interval (read from the exporter's own counters), and the crash
// tests of its journal (the combined file) with the gym processor's storage
// on: kills under load while the combined file rotates (with torn tails
// left behind), and two collectors sharing the capture dir, one of them
// killed again and again.

// fileLayerCollector renders testdata/filelayer_collector.yaml for one
// collector and starts it.
type fileLayerCollector struct {
	t       *testing.T
	p       ports
	cfgPath string
	col     *collector
}

// shared is its shared_capture_dir: on for collectors that share the
// capture dir (on a local disk the default is off); mode its gymspans
// combined_spans.
func newFileLayerCollector(t *testing.T, dir, captureDir, name, pathTemplate string, rotateMB int, settle string, shared bool, mode string) *fileLayerCollector {
	t.Helper()
	tmpl, err := os.ReadFile(filepath.Join("testdata", "filelayer_collector.yaml"))
	require.NoError(t, err)
	p := newPorts(t)
	cfg := strings.NewReplacer(
		"${WAIT}", "30s", "${SETTLE}", settle, "${STORAGE_DIR}", filepath.Join(dir, name+"-storage"),
		"${PATH_TEMPLATE}", pathTemplate, "${ROTATE_MB}", fmt.Sprint(rotateMB), "${SHARED}", fmt.Sprint(shared),
		"${COMBINED_SPANS}", mode,
	).Replace(p.expand(string(tmpl), captureDir))
	c := &fileLayerCollector{t: t, p: p, cfgPath: writeFile(t, dir, name+".yaml", cfg)}
	c.start()
	return c
}

func (c *fileLayerCollector) start() { c.col = startCollector(c.t, c.p, nil, "--config", c.cfgPath) }

func (c *fileLayerCollector) metric(name string, labels ...string) float64 {
	v, _ := scrapeMetric(c.t, c.p.Metrics, name, labels...)
	return v
}

// crashTally adds up, over a collector's lives, what each reported just
// before it was killed (its counters start again at every start).
type crashTally struct {
	kills                                 int
	pending, dups, torn, recovered, rotns float64
	linksMissed                           float64
}

func (k *crashTally) note(c *fileLayerCollector) {
	k.pending += c.metric("otelcol_processor_gym_pending_spans")
	k.dups += c.metric("otelcol_exporter_gymspans_duplicate_spans")
	k.torn += c.metric("otelcol_exporter_gymspans_torn_tails_cut")
	k.recovered += c.metric("otelcol_exporter_gymspans_recovered_lines")
	k.rotns += c.metric("otelcol_exporter_gymspans_rotations")
	k.linksMissed += c.metric("otelcol_processor_gym_attempt_links_missed")
}

// kill scrapes c, kills it with SIGKILL and starts it again.
func (k *crashTally) kill(c *fileLayerCollector, tornTail string) {
	k.note(c)
	c.col.kill()
	k.kills++
	if tornTail != "" {
		// A write cut short by a crash: half a line at the end of the
		// combined file (what the kill itself leaves when it falls inside a
		// write(2)); the next append cuts it. The kill may have fallen
		// between a rotation's rename and the create of the new file: then
		// the half line is all the new file holds (the first write after
		// the create was cut), hence O_CREATE.
		f, err := os.OpenFile(tornTail, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
		require.NoError(c.t, err)
		_, err = f.WriteString(`{"name":"torn by a crash","context":{"trace_id":"0x`)
		require.NoError(c.t, err)
		require.NoError(c.t, f.Close())
	}
	c.start()
}

func (k *crashTally) String() string {
	return fmt.Sprintf("%d kills; summed over the collector's lives: %.0f spans held undecided by the gym processor at the kills, %.0f duplicates dropped, %.0f lines completed at starts, %.0f torn tails cut, %.0f rotations of spans.jsonl, %.0f attempt roots without their previous attempt's link",
		k.kills, k.pending, k.dups, k.recovered, k.torn, k.rotns, k.linksMissed)
}

// runGymsim starts gymsim against endpoint; wait returns its output and error.
func runGymsim(t *testing.T, endpoint string, args ...string) (wait func() (string, error)) {
	t.Helper()
	sim := exec.Command(gymsimBinary(t), append(args, "--endpoint="+endpoint)...)
	sim.Env = append(os.Environ(), crashSenderEnv...)
	var out bytes.Buffer
	sim.Stdout, sim.Stderr = &out, &out
	require.NoError(t, sim.Start())
	done := make(chan error, 1)
	go func() { done <- sim.Wait() }()
	var err error
	finished := false
	return func() (string, error) {
		if !finished {
			err, finished = <-done, true
		}
		return strings.TrimSpace(out.String()), err
	}
}

// combinedModes are the values of gymspans' combined_spans the crash tests
// run with.
var combinedModes = []string{"all", "rest"}

// humanSpans reads the files where each span is once in human form:
// spans.jsonl and its rotated backups, oldest first, and with combined_spans
// rest (where spans.jsonl holds only the spans in no rollout file) the
// rollout files after them.
func humanSpans(t *testing.T, captureDir, mode string) []outSpan {
	t.Helper()
	out := combinedLines[outSpan](t, captureDir)
	if mode == "rest" {
		files, err := filepath.Glob(filepath.Join(captureDir, "*.spans.jsonl"))
		require.NoError(t, err)
		for _, f := range files {
			out = append(out, readJSONLines[outSpan](t, f)...)
		}
	}
	return out
}

// combinedLines reads spans.jsonl and its rotated backups, oldest first,
// each line into a T.
func combinedLines[T any](t *testing.T, captureDir string) []T {
	t.Helper()
	backups, err := filepath.Glob(filepath.Join(captureDir, "spans-*.jsonl"))
	require.NoError(t, err)
	sort.Strings(backups) // the time layout sorts
	var out []T
	for _, f := range append(backups, filepath.Join(captureDir, "spans.jsonl")) {
		out = append(out, readJSONLines[T](t, f)...)
	}
	return out
}

// crashRun builds the gymsimRun of a run with crashes: the truth without
// the spans the SDK never had acknowledged and that never arrived, and the
// first line of each span of the combined file, with combined_spans rest
// also of the rollout files (the duplicates are counted apart and returned).
func crashRun(t *testing.T, captureDir, truthDir, runID, pathTemplate, mode string) (*gymsimRun, int) {
	t.Helper()
	run := &gymsimRun{dir: captureDir, truthByID: map[string]truthSpan{}, truthByRollout: map[string][]truthSpan{}, runID: runID, pathTemplate: pathTemplate}
	unacked := readUnacked(t, truthDir)
	written := map[string]int{}
	var combined []outSpan
	for _, s := range humanSpans(t, captureDir, mode) {
		if v, _ := s.Resource.Attributes["nemo.run.id"].(string); runID != "" && v != runID {
			continue
		}
		written[s.SpanID]++
		if written[s.SpanID] == 1 {
			combined = append(combined, s)
		}
	}
	dups := 0
	for _, n := range written {
		dups += n - 1
	}
	for _, s := range readJSONLines[truthSpan](t, filepath.Join(truthDir, "truth.jsonl")) {
		if unacked[s.SpanID] && written[s.SpanID] == 0 {
			continue // the SDK never had it acknowledged, and it never arrived
		}
		run.truth = append(run.truth, s)
		run.truthByID[s.SpanID] = s
		run.truthByRollout[s.RolloutID] = append(run.truthByRollout[s.RolloutID], s)
	}
	run.combined = combined
	return run, dups
}

// TestCrashKill9RotatingJournal: the crash test of TestCrashKill9UnderLoad
// with a combined file that rotates every megabyte (about every second of
// the load), so that kills fall between a rotation and the next flush, and
// with half a line left at the end of spans.jsonl after every fourth kill.
// Every span that reached the exporter is once in spans.jsonl and its
// backups and once in its rollout's file; with the processor's storage on
// none is missing; the service map counts every call once.
func TestCrashKill9RotatingJournal(t *testing.T) {
	for _, mode := range combinedModes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel() // the modes share nothing: their own ports, dirs and collectors
			dir := t.TempDir()
			captureDir := filepath.Join(dir, "captures")
			col := newFileLayerCollector(t, dir, captureDir, "collector", "{rollout_id}.spans.jsonl", 1, "5s", false, mode)
			truthDir := filepath.Join(dir, "truth")
			require.NoError(t, os.MkdirAll(truthDir, 0o755))
			wait := runGymsim(t, fmt.Sprintf("127.0.0.1:%d", col.p.GRPC),
				"--rollouts=700", "--concurrency=16", "--rate=25", "--rollout-duration=600ms", "--run-id="+gymsimRunID,
				"--retry-rate=0.1", "--batch-delay=200ms", "--blocking", "--capture-dir="+captureDir,
				"--truth="+filepath.Join(truthDir, "truth.jsonl"))
			simDone := make(chan struct{})
			go func() { _, _ = wait(); close(simDone) }()

			k := &crashTally{}
			killAtRandom(simDone, crashKills, func(i int) {
				torn := ""
				if i%4 == 3 {
					torn = filepath.Join(captureDir, "spans.jsonl")
				}
				k.kill(col, torn)
			})
			<-simDone
			out, simErr := wait()
			t.Logf("gymsim: %s", out)
			require.GreaterOrEqual(t, k.kills, crashKills, "the load ended before %d kills; make it longer", crashKills)
			k.kill(col, "")                    // right after the job span arrived
			time.Sleep(500 * time.Millisecond) // a moment into the settle wave the job span started
			k.kill(col, "")
			k.note(col)
			require.NoError(t, col.col.stop(), "collector exit")
			if simErr != nil {
				t.Logf("gymsim exited with %v", simErr)
			}

			run, dups := crashRun(t, captureDir, truthDir, "", "", mode)
			assert.Zero(t, k.linksMissed, "attempt roots that left without their previous attempt's link (each waits up to wait for it)")
			t.Logf("%s; %d spans acknowledged or written, %d duplicate lines in spans.jsonl and its backups", k, len(run.truth), dups)
			if mode == "all" {
				// With rest spans.jsonl holds only the few spans in no rollout
				// file: it neither rotates, nor is it appended in every life,
				// so a tail torn there may stay until a later life's append (the
				// checks below read every line of it).
				assert.Positive(t, k.rotns, "spans.jsonl rotated during the load")
				assert.Positive(t, k.torn, "the torn tails were cut")
			}
			tc := gymsimCase{name: "crash", observability: true, job: true, httpClient: true, services: 4}
			checkGymsimRun(t, tc, run)
			require.Zero(t, dups, "spans written twice in the combined file")
		})
	}
}

// TestCrashSharedCaptureDir: two collectors, each with its own gym
// processor storage and its own gymsim run, write one capture dir (rollout
// files named {run_id}.{rollout_id}.spans.jsonl, one spans.jsonl, one
// rollouts.jsonl and service map); one of them is killed again and again.
// Each run's spans are once in spans.jsonl and once in their rollout's
// file, as without kills, and the service map counts each run's calls once.
func TestCrashSharedCaptureDir(t *testing.T) {
	for _, mode := range combinedModes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel() // the modes share nothing: their own ports, dirs and collectors
			dir := t.TempDir()
			captureDir := filepath.Join(dir, "captures")
			const tmpl = "{run_id}.{rollout_id}.spans.jsonl"
			killed := newFileLayerCollector(t, dir, captureDir, "killed", tmpl, 100, "5s", true, mode)
			steady := newFileLayerCollector(t, dir, captureDir, "steady", tmpl, 100, "5s", true, mode)
			runs := map[string]*fileLayerCollector{"e2erunkill": killed, "e2erunstay": steady}
			waits := map[string]func() (string, error){}
			for id, c := range runs {
				truthDir := filepath.Join(dir, id)
				require.NoError(t, os.MkdirAll(truthDir, 0o755))
				waits[id] = runGymsim(t, fmt.Sprintf("127.0.0.1:%d", c.p.GRPC),
					"--rollouts=500", "--concurrency=12", "--rate=20", "--rollout-duration=600ms", "--run-id="+id, "--seed=7",
					"--retry-rate=0.1", "--batch-delay=200ms", "--blocking", "--capture-dir="+captureDir, "--truth="+filepath.Join(truthDir, "truth.jsonl"))
			}
			simDone := make(chan struct{})
			go func() { _, _ = waits["e2erunkill"](); close(simDone) }()
			k := &crashTally{}
			killAtRandom(simDone, crashKills, func(int) { k.kill(killed, "") })
			<-simDone
			require.GreaterOrEqual(t, k.kills, crashKills, "the load ended before %d kills; make it longer", crashKills)
			k.kill(killed, "")
			for id := range runs {
				out, err := waits[id]()
				t.Logf("gymsim %s: %s (%v)", id, out, err)
			}
			k.note(killed)
			require.NoError(t, killed.col.stop(), "killed collector's last exit")
			require.NoError(t, steady.col.stop(), "steady collector exit")
			t.Logf("the killed collector: %s", k)

			for id := range runs {
				t.Run(id, func(t *testing.T) {
					run, dups := crashRun(t, captureDir, filepath.Join(dir, id), id, tmpl, mode)
					if id == "e2erunkill" {
						assert.Zero(t, k.linksMissed, "attempt roots that left without their previous attempt's link (each waits up to wait for it)")
					}
					t.Logf("%d spans acknowledged or written, %d duplicate lines", len(run.truth), dups)
					tc := gymsimCase{name: id, observability: true, job: true, httpClient: true, services: 4}
					checkGymsimRun(t, tc, run)
					require.Zero(t, dups, "spans written twice in the combined file")
				})
			}
		})
	}
}

// TestFileLayerCounters (issue #19, acceptance 1; issue #29, acceptance 2):
// a gymsim run of 2,000 rollouts, read in the exporter's counters once
// every rollout's root is in rollouts.jsonl: each rollout's file was opened
// at most 1.1 times on average (once, unless the descriptor cache evicted
// it), created once, and appended at most 2 + (its lifetime /
// flush_interval) times: one append per flush tick (one sweep per
// interval) that finds new lines, and the ticks that catch a lifetime
// number at most that. Alone in the capture dir (issue #29) no append
// took a lock, the files were fstat'ed once per open and never per append,
// and no tail was read (a reopened file's size is where our last append
// ended). A span arrives no earlier than
// its end and, being decided at once or after settle, at most settle and
// the SDK's batch delay (plus 1 s of slack) after it, so a file's lifetime
// is bounded by its spans' ends.
//
// A file stays open from its first append to its root's, so the default
// 256 descriptors hold the rollouts in flight when they number fewer than
// about 250 / (1 + (settle + flush_interval) / rollout duration): 48 at once
// lasting 1 s here. (The same 2,000 rollouts run as fast as gymsim goes,
// about 700 a second of 50 ms each, keep some 1,800 files open at once: with
// 256 descriptors each file is then opened twice, once for its lines and
// once for its root; bench/RESULTS.md has the figures.)
func TestFileLayerCounters(t *testing.T) {
	dir := t.TempDir()
	captureDir := filepath.Join(dir, "captures")
	const settle, batchDelay, flush = time.Second, 200 * time.Millisecond, time.Second
	col := newFileLayerCollector(t, dir, captureDir, "collector", "{rollout_id}.spans.jsonl", 100, settle.String(), false, "all")
	truth := filepath.Join(dir, "truth.jsonl")
	out, err := runGymsim(t, fmt.Sprintf("127.0.0.1:%d", col.p.GRPC),
		"--rollouts=2000", "--concurrency=48", "--rollout-duration=1s", "--run-id="+gymsimRunID, "--retry-rate=0.04",
		"--batch-delay="+batchDelay.String(), "--blocking", "--capture-dir="+captureDir, "--truth="+truth)()
	require.NoError(t, err, out)
	t.Logf("gymsim: %s", out)
	rollouts := map[string]bool{}
	for _, s := range readJSONLines[truthSpan](t, truth) {
		if s.RolloutID != "" {
			rollouts[s.RolloutID] = true
		}
	}
	pollUntil(t, time.Minute, "every rollout's root in rollouts.jsonl and nothing pending", func() bool {
		b, err := os.ReadFile(filepath.Join(captureDir, "rollouts.jsonl"))
		return err == nil && bytes.Count(b, []byte("\n")) >= len(rollouts) &&
			col.metric("otelcol_exporter_gymspans_pending_bytes") == 0
	})
	counter := func(name, kind string) float64 {
		return col.metric("otelcol_exporter_gymspans_"+name, `file="`+kind+`"`)
	}
	opens, creates, locks, appends := counter("file_opens", "rollout"), counter("file_creates", "rollout"), counter("file_locks", "rollout"), counter("file_appends", "rollout")
	stats, tailReads := counter("file_stats", "rollout"), col.metric("otelcol_exporter_gymspans_tail_reads")
	bytesWritten := counter("bytes_written", "rollout")

	files, bound, lifetimes := 0, 0.0, 0.0
	for r := range rollouts {
		var ends []float64
		for _, l := range readJSONLines[struct {
			End float64 `json:"end_time_unix_nano"`
		}](t, filepath.Join(captureDir, r+".spans.jsonl")) {
			ends = append(ends, l.End)
		}
		require.NotEmpty(t, ends, r)
		sort.Float64s(ends)
		life := time.Duration(ends[len(ends)-1]-ends[0]) + settle + batchDelay + time.Second
		lifetimes += life.Seconds()
		bound += 2 + math.Floor(float64(life)/float64(flush))
		files++
	}
	t.Logf("%.0f fstats, %.0f tail reads", stats, tailReads)
	t.Logf("%d rollout files: %.0f opens (%.3f a file), %.0f creates, %.0f locks, %.0f appends (%.2f a file; bound %.0f, %.2f a file, mean lifetime bound %.2fs), %.1f MiB; combined file: %.0f opens, %.0f locks, %.0f appends; rollouts.jsonl: %.0f appends",
		files, opens, opens/float64(files), creates, locks, appends, appends/float64(files), bound, bound/float64(files), lifetimes/float64(files), bytesWritten/(1<<20),
		counter("file_opens", "combined"), counter("file_locks", "combined"), counter("file_appends", "combined"), counter("file_appends", "rollouts"))
	require.Positive(t, files)
	assert.LessOrEqual(t, opens, 1.1*float64(files), "opens per rollout file")
	assert.Equal(t, float64(files), creates, "each rollout file created once")
	assert.Zero(t, locks, "no lock alone in the capture dir")
	assert.LessOrEqual(t, stats, opens, "at most one fstat per open, none per append")
	assert.Zero(t, tailReads, "no tail read")
	assert.LessOrEqual(t, appends, bound, "appends: at most 1 + lifetime/flush_interval + 1 per file")
	require.NoError(t, col.col.stop())

	// The counters are of what is on disk: every span in its file.
	var perFile map[string]int
	data, err := os.ReadFile(filepath.Join(captureDir, "rollouts.jsonl"))
	require.NoError(t, err)
	perFile = map[string]int{}
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var l struct {
			RolloutID string `json:"rollout_id"`
		}
		require.NoError(t, json.Unmarshal(line, &l))
		perFile[l.RolloutID]++
	}
	assert.Len(t, perFile, len(rollouts), "one rollouts.jsonl line per rollout")
}

// killAtRandom calls kill (with how many kills came before) every 300 to
// 900 ms, at random, until the load is done or it has killed n times.
func killAtRandom(done <-chan struct{}, n int, kill func(i int)) {
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	for i := 0; i < n; i++ {
		select {
		case <-done:
			return
		case <-time.After(time.Duration(300+rng.IntN(600)) * time.Millisecond):
			kill(i)
		}
	}
}
