// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Crash safety (design §4.6): the built collector, with the gym processor's
// storage in file_storage, is killed with SIGKILL again and again while
// gymsim drives it, and started again at once on the same capture dir and
// storage; gymsim's OTLP exporters retry what the dead collector did not
// acknowledge. At the end, by span id against gymsim's truth, every span the
// collector acknowledged is in spans.jsonl and in its rollout's file (with
// combined_spans rest: in its rollout's file, or in spans.jsonl when it is
// in no rollout file), with the rollout id, trace id and place in its rollout's tree it gets without a
// crash (checkGymsimRun: the same checks as the runs without kills).

// crashSenderEnv gives gymsim's exporters time to retry across the
// restarts: the OTLP exporter's timeout (default 10 s) and the batch span
// processor's (default 30 s), which cut an export short before the
// exporter's own: on a loaded machine twenty restarts in a row kept the
// collector away from a sender that long, and the spans it gave up on took
// the evidence of their rollouts' other spans with them.
var crashSenderEnv = []string{"OTEL_EXPORTER_OTLP_TIMEOUT=60000", "OTEL_BSP_EXPORT_TIMEOUT=60000"}

// crashKills is how many times the collector is killed during the load
// (more after it: right after the job span arrives, and during the cuts and
// settle waves that follow).
const crashKills = 20

func TestCrashKill9UnderLoad(t *testing.T) {
	for _, mode := range combinedModes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel() // the modes share nothing: their own ports, dirs and collectors
			tmpl, err := os.ReadFile(filepath.Join("testdata", "crash_collector.yaml"))
			require.NoError(t, err)
			dir := t.TempDir()
			captureDir := filepath.Join(dir, "captures")
			p := newPorts(t)
			// The shipped wait and settle: after a kill, the senders' exporters
			// retry with backoff (5 s and more), so spans below an orchestrator span
			// may arrive seconds late, as they may after any collector outage.
			cfg := strings.NewReplacer("${WAIT}", "30s", "${SETTLE}", "5s", "${COMBINED_SPANS}", mode).Replace(p.expand(string(tmpl), captureDir))
			cfgPath := writeFile(t, dir, "collector.yaml", cfg)
			start := func() *collector { return startCollector(t, p, nil, "--config", cfgPath) }
			col := start()

			truthPath := filepath.Join(dir, "truth.jsonl")
			tc := gymsimCase{name: "crash", observability: true, job: true, httpClient: true, services: 4}
			args := []string{
				"--rollouts=700", "--concurrency=16", "--rate=25", "--rollout-duration=600ms", "--run-id=" + gymsimRunID,
				"--retry-rate=0.1", "--batch-delay=200ms", "--blocking", "--capture-dir=" + captureDir, "--truth=" + truthPath,
				fmt.Sprintf("--endpoint=127.0.0.1:%d", p.GRPC),
			}
			sim := exec.Command(gymsimBinary(t), args...)
			sim.Env = append(os.Environ(), crashSenderEnv...)
			var simOut bytes.Buffer
			sim.Stdout, sim.Stderr = &simOut, &simOut
			require.NoError(t, sim.Start())
			simDone := make(chan struct{})
			var simErr error
			go func() { simErr = sim.Wait(); close(simDone) }()

			kills := 0
			var linksMissed float64 // what each life reported before it was killed
			kill := func() {
				v, _ := scrapeMetric(t, p.Metrics, "otelcol_processor_gym_attempt_links_missed")
				linksMissed += v
				col.kill()
				kills++
				col = start()
			}
			killAtRandom(simDone, crashKills, func(int) { kill() }) // during the load
			<-simDone
			t.Logf("gymsim: %s", strings.TrimSpace(simOut.String()))
			require.GreaterOrEqual(t, kills, crashKills, "the load ended before %d kills; make it longer", crashKills)
			// gymsim returns once every span was exported or given up: the job span
			// has just arrived. Kill then, and again during the cuts and settle waves
			// that follow it.
			kill()                             // right after the job span arrived
			time.Sleep(500 * time.Millisecond) // a moment into the settle wave the job span started
			kill()                             // during the settle wave after the job span
			v, _ := scrapeMetric(t, p.Metrics, "otelcol_processor_gym_attempt_links_missed")
			linksMissed += v
			require.NoError(t, col.stop(), "collector exit")

			unacked := readUnacked(t, dir)
			if simErr != nil {
				t.Logf("gymsim exited with %v: %d spans were never acknowledged", simErr, len(unacked))
			}
			run := &gymsimRun{dir: captureDir, truthByID: map[string]truthSpan{}, truthByRollout: map[string][]truthSpan{}}
			require.Zero(t, linksMissed, "attempt roots that left without their previous attempt's link (each waits up to wait for it)")
			all := readJSONLines[truthSpan](t, truthPath)
			combined := humanSpans(t, captureDir, mode)
			written := map[string]int{}
			for _, s := range combined {
				written[s.SpanID]++
			}
			dups, unackedWritten := 0, 0
			for id, n := range written {
				dups += n - 1
				if unacked[id] {
					unackedWritten++
				}
			}
			for _, s := range all {
				if unacked[s.SpanID] && written[s.SpanID] == 0 {
					continue // the SDK never had it acknowledged, and it never arrived
				}
				run.truth = append(run.truth, s)
				run.truthByID[s.SpanID] = s
				run.truthByRollout[s.RolloutID] = append(run.truthByRollout[s.RolloutID], s)
			}
			seen := map[string]bool{}
			for _, s := range combined {
				if !seen[s.SpanID] { // the checks below look at each span's first line
					seen[s.SpanID] = true
					run.combined = append(run.combined, s)
				}
			}
			t.Logf("%d kills; %d spans created, %d never acknowledged (%d of them written anyway), %d duplicate lines in spans.jsonl (with rest: and the rollout files)",
				kills, len(all), len(unacked), unackedWritten, dups)
			checkGymsimRun(t, tc, run)
			require.Zero(t, dups, "spans written twice in spans.jsonl (a sender's retry of a batch the killed collector had taken)")
		})
	}
}

// readUnacked reads the span ids gymsim's processes could not export.
func readUnacked(t *testing.T, dir string) map[string]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.unacked"))
	require.NoError(t, err)
	out := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if id := strings.TrimSpace(sc.Text()); id != "" {
				out[id] = true
			}
		}
	}
	return out
}
