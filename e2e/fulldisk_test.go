// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package e2e

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// Issue #35: a full disk costs nothing but time (design §4.5). The built
// collector runs the embedded default (the gym journal on, in the capture
// dir) as an unprivileged user, its capture dir a 48 MiB tmpfs mounted in a
// mount namespace of the test's own; gymsim drives a Gym-shaped run through
// it over OTLP/HTTP. In the middle of the run the capture dir fails and comes
// back: filled and freed; made read-only and writable again; filled, the
// collector killed with SIGKILL, and started again once freed. Each step
// waits for what the collector shows (its metrics), never for a time. At the
// end, by span id against gymsim's truth, every span the collector
// acknowledged is once in spans.jsonl and once in its rollout's file.
//
// With the journal on the full disk too (the embedded default as it is),
// the gym processor cannot record what arrives and refuses it to the
// senders, who retry. With the journal on a file system of its own (a tmpfs
// mounted on the capture dir's .otelcol-gym: still the embedded default's
// configuration), it takes every batch and holds what gymspans refuses for
// redelivery, which is the case of issue #35's lost spans.

// fullDiskCase is how the capture dir fails in the middle of the run.
type fullDiskCase struct {
	name string
	// readOnly: the write bits are taken off instead of filling it.
	readOnly bool
	// kill: the collector is killed (SIGKILL) while it fails, and started
	// again once it is undone.
	kill bool
	// journalApart: the gym journal is on a file system of its own.
	journalApart bool
}

var fullDiskCases = []fullDiskCase{
	{name: "fill"},
	{name: "fill_journal_apart", journalApart: true},
	{name: "read_only", readOnly: true},
	{name: "fill_kill", kill: true},
	{name: "fill_kill_journal_apart", kill: true, journalApart: true},
}

// The embedded default's fixed ports (config/standalone.yaml).
var embeddedPorts = ports{GRPC: 4317, HTTP: 4318, Health: 13133, Metrics: 8888, View: 13180}

// nobody runs the collector and gymsim: root ignores a read-only mode.
var nobody = &syscall.Credential{Uid: 65534, Gid: 65534}

func TestFullDisk(t *testing.T) {
	for _, fc := range fullDiskCases {
		t.Run(fc.name, func(t *testing.T) {
			if !inPrivateNamespaces(t) {
				return
			}
			runFullDisk(t, fc)
		})
	}
}

// fullDiskRun is one run's places, in a dir the unprivileged processes can
// reach (a test's TempDir is private to root).
type fullDiskRun struct {
	base, captureDir, outDir, truth string
	env                             []string
}

func newFullDiskRun(t *testing.T) *fullDiskRun {
	t.Helper()
	base, err := os.MkdirTemp("", "otelcol-gym-fulldisk-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	require.NoError(t, os.Chmod(base, 0o755))
	r := &fullDiskRun{base: base, captureDir: filepath.Join(base, "captures"), outDir: filepath.Join(base, "out")}
	r.truth = filepath.Join(r.outDir, "truth.jsonl")
	for _, d := range []string{r.captureDir, r.outDir, filepath.Join(base, "bin")} {
		require.NoError(t, os.Mkdir(d, 0o755))
	}
	require.NoError(t, os.Chown(r.outDir, int(nobody.Uid), int(nobody.Gid)))
	// The capture dir: a small tmpfs, seen only in this mount namespace.
	mountTmpfs(t, r.captureDir, "48m")
	r.env = []string{"NEMO_GYM_CAPTURE_DIR=" + r.captureDir}
	// collectorBinary and gymsimBinary read these.
	t.Setenv("OTELCOL_GYM_BIN", r.reachable(t, collectorBinary(t)))
	t.Setenv("GYMSIM_BIN", r.reachable(t, gymsimBinary(t)))
	return r
}

// mountTmpfs mounts a tmpfs of size at dir, the unprivileged user's.
func mountTmpfs(t *testing.T, dir, size string) {
	t.Helper()
	require.NoError(t, unix.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%s,mode=0750,uid=%d,gid=%d", size, nobody.Uid, nobody.Gid)))
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
}

// reachable bind-mounts the binary at path where the unprivileged user can
// run it (a test build lives in a dir private to root).
func (r *fullDiskRun) reachable(t *testing.T, path string) string {
	t.Helper()
	dst := filepath.Join(r.base, "bin", filepath.Base(path))
	require.NoError(t, os.WriteFile(dst, nil, 0o755))
	require.NoError(t, unix.Mount(path, dst, "", unix.MS_BIND, ""))
	t.Cleanup(func() { _ = unix.Unmount(dst, unix.MNT_DETACH) })
	return dst
}

func (r *fullDiskRun) startCollector(t *testing.T) *collector {
	t.Helper()
	return startCollectorAs(t, embeddedPorts, nobody, r.env)
}

func runFullDisk(t *testing.T, fc fullDiskCase) {
	r := newFullDiskRun(t)
	if fc.journalApart {
		journal := filepath.Join(r.captureDir, ".otelcol-gym") // the embedded default's file_storage/gym
		require.NoError(t, os.Mkdir(journal, 0o750))
		mountTmpfs(t, journal, "256m")
	}
	col := r.startCollector(t)

	// OTLP/HTTP as in the issue; across a kill, gRPC: the Go SDK's HTTP
	// exporter does not retry a request the killed collector reset, and
	// gives those spans up (never acknowledged, so not the collector's).
	endpoint := "--protocol=http --endpoint=127.0.0.1:4318"
	if fc.kill {
		endpoint = "--protocol=grpc --endpoint=127.0.0.1:4317"
	}
	sim := exec.Command(gymsimBinary(t), append(strings.Fields(endpoint), "--rollouts=300", "--concurrency=32", "--rate=30", "--rollout-duration=500ms",
		"--run-id="+gymsimRunID, "--batch-delay=200ms", "--blocking", "--capture-dir="+r.captureDir, "--truth="+r.truth)...)
	sim.SysProcAttr = &syscall.SysProcAttr{Credential: nobody}
	sim.Env = append(os.Environ(), crashSenderEnv...)
	var simOut bytes.Buffer
	sim.Stdout, sim.Stderr = &simOut, &simOut
	require.NoError(t, sim.Start())
	simDone := make(chan error, 1)
	go func() { simDone <- sim.Wait() }()

	// The middle of the run: a third of its spans are in.
	pollUntil(t, 2*time.Minute, "a third of the run received", func() bool {
		v, _ := scrapeMetric(t, embeddedPorts.Metrics, "otelcol_processor_gym_spans_received")
		return v >= 4000
	})
	undo := breakCaptureDir(t, r.captureDir, fc.readOnly)
	noticed := waitUntilNoticed(t, fc)
	healthy(t)
	t.Logf("the collector met the capture dir failing: %s", noticed)
	waitUntilMetAgain(t, fc)
	healthy(t)
	logs := col.stderr.String
	if fc.kill {
		logGymMetrics(t, "before the kill")
		col.kill()
		undo()
		col = r.startCollector(t)
	} else {
		undo()
	}

	simErr := <-simDone
	t.Logf("gymsim: %s", strings.TrimSpace(simOut.String()))
	// Once the dir takes writes again, the gym processor hands on what it
	// held at its next attempt (within redeliverMaxBackoff), running.
	pollUntil(t, 2*time.Minute, "every span held for redelivery handed on", func() bool {
		held, ok := scrapeMetric(t, embeddedPorts.Metrics, "otelcol_processor_gym_redelivery_spans")
		return ok && held == 0
	})
	logGymMetrics(t, "at the end")
	require.NoError(t, col.stop(), "collector exit")
	if simErr != nil {
		t.Logf("gymsim exited with %v", simErr)
	}
	if fc.journalApart {
		checkHeldLines(t, r.captureDir, logs(), col.stderr.String(), fc.kill)
	}
	// Nothing was refused to the senders when the journal was apart from
	// the dir or only new files failed.
	checkEverySpanOnce(t, r, fc.journalApart || fc.readOnly)
}

// breakCaptureDir makes the capture dir fail and returns what undoes it:
// fill it to the last byte (a file of root's), or take the write bits off
// it and everything in it (the collector is not root).
func breakCaptureDir(t *testing.T, dir string, readOnly bool) (undo func()) {
	t.Helper()
	if readOnly {
		modes := map[string]fs.FileMode{}
		require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			modes[p] = info.Mode().Perm()
			return os.Chmod(p, info.Mode().Perm()&^0o222)
		}))
		return func() {
			for p, m := range modes {
				require.NoError(t, os.Chmod(p, m))
			}
		}
	}
	filler := filepath.Join(dir, "filler")
	f, err := os.OpenFile(filler, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o600)
	require.NoError(t, err)
	for _, chunk := range []int{1 << 20, 4 << 10, 1} {
		buf := make([]byte, chunk)
		for {
			if _, err := f.Write(buf); err != nil {
				require.ErrorIs(t, err, syscall.ENOSPC)
				break
			}
		}
	}
	require.NoError(t, f.Close())
	return func() { require.NoError(t, os.Remove(filler)) }
}

// waitUntilNoticed waits until the collector's metrics show it met the
// failing capture dir, and returns what was seen. Filled with the journal
// apart: the gym processor holds spans gymspans refused. Filled with the
// journal on it: that, or the journal could not record a batch (which is
// then refused to its sender). Read-only: gymspans could not append to a
// rollout file (its lines wait in memory; the combined file, open, still
// takes its appends).
func waitUntilNoticed(t *testing.T, fc fullDiskCase) string {
	t.Helper()
	var metrics []string
	switch {
	case fc.readOnly:
		metrics = []string{"otelcol_exporter_gymspans_write_errors"}
	case fc.journalApart:
		metrics = []string{"otelcol_processor_gym_redelivery_spans"}
	default:
		metrics = []string{"otelcol_processor_gym_redelivery_spans", "otelcol_processor_gym_storage_errors"}
	}
	var seen string
	pollUntil(t, 2*time.Minute, "the collector to meet the failing capture dir", func() bool {
		var parts []string
		for _, m := range metrics {
			if v, _ := scrapeMetric(t, embeddedPorts.Metrics, m); v > 0 {
				parts = append(parts, fmt.Sprintf("%s %.0f", m, v))
			}
		}
		seen = strings.Join(parts, ", ")
		return seen != ""
	})
	return seen
}

// waitUntilMetAgain keeps the capture dir failing until the collector met
// it twice more, each seen on a later scrape: two more attempts of the gym
// processor refused (1 s, then 2 s of backoff), two more records its journal
// could not write, or two more flushes of gymspans that failed.
func waitUntilMetAgain(t *testing.T, fc fullDiskCase) {
	t.Helper()
	m := "otelcol_processor_gym_storage_errors"
	switch {
	case fc.readOnly:
		m = "otelcol_exporter_gymspans_write_errors"
	case fc.journalApart:
		m = "otelcol_processor_gym_downstream_failed_spans"
	}
	last, _ := scrapeMetric(t, embeddedPorts.Metrics, m)
	for i := range 2 {
		pollUntil(t, 2*time.Minute, fmt.Sprintf("%s to grow (%d of 2)", m, i+1), func() bool {
			v, _ := scrapeMetric(t, embeddedPorts.Metrics, m)
			if v > last {
				last = v
				return true
			}
			return false
		})
	}
}

// healthy checks that the health check answers: a full disk is not a crash.
func healthy(t *testing.T) {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/", embeddedPorts.Health))
	require.NoError(t, err, "the health check answers while the capture dir fails")
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// checkHeldLines: the gym processor's error line names the capture dir,
// the cause and the spans it holds; once the dir takes writes again it says
// it handed them on, or, after a kill, the restart says it recovered them.
func checkHeldLines(t *testing.T, captureDir, before, after string, killed bool) {
	t.Helper()
	var held string
	for _, l := range strings.Split(before, "\n") {
		if strings.Contains(l, "spans held for redelivery") {
			held = l
			break
		}
	}
	require.NotEmpty(t, held, "an error line about the spans held for redelivery")
	t.Logf("collector: %s", held)
	require.Contains(t, held, "capture dir "+captureDir+": ")
	require.Contains(t, held, "no space left on device")
	done := "the next consumer takes spans again"
	if killed {
		done = "recovered from its storage the spans the next consumer had refused"
	}
	require.Contains(t, after, done)
}

// checkEverySpanOnce: by span id against gymsim's truth, every span the
// collector acknowledged is once in spans.jsonl and, under the rollout id it
// carries there, once in that rollout's file; none is anywhere twice. Where
// nothing was refused to the senders, every span also carries the rollout
// the truth gives it (strict). A batch the collector refused (its journal on
// the full disk) comes back after the sender's backoff (5 s and more), and
// its spans may then come after their parent's upward decision (settle,
// design §4.2): that parent leaves in no rollout, in spans.jsonl alone. They
// are counted, not lost.
func checkEverySpanOnce(t *testing.T, r *fullDiskRun, strict bool) {
	t.Helper()
	truth := readJSONLines[truthSpan](t, r.truth)
	unacked := readUnacked(t, r.outDir)
	combined := map[string][]outSpan{}
	for _, s := range combinedLines[outSpan](t, r.captureDir) {
		if !s.synthetic() {
			combined[s.SpanID] = append(combined[s.SpanID], s)
		}
	}
	files := map[string]map[string]int{}
	var lost, dup, lostInFile, dupInFile, notAcked, otherRollout []string
	for _, ts := range truth {
		lines := combined[ts.SpanID]
		if unacked[ts.SpanID] && len(lines) == 0 {
			notAcked = append(notAcked, ts.SpanID)
			continue
		}
		what := ts.RolloutID + ": " + ts.Service + " " + ts.Name + " " + ts.SpanID
		switch {
		case len(lines) == 0:
			lost = append(lost, what)
			continue
		case len(lines) > 1:
			dup = append(dup, what)
		}
		rollout := lines[0].str("nemo.gym.rollout.id")
		if rollout != ts.RolloutID {
			otherRollout = append(otherRollout, what+" as "+rollout)
			t.Logf("%s: in spans.jsonl as %+v", what, lines[0])
		}
		if rollout == "" {
			continue
		}
		if files[rollout] == nil {
			files[rollout], _ = spanLines(t, filepath.Join(r.captureDir, rollout+".spans.jsonl"))
		}
		switch n := files[rollout][ts.SpanID]; {
		case n == 0:
			lostInFile = append(lostInFile, what)
		case n > 1:
			dupInFile = append(dupInFile, what)
		}
	}
	t.Logf("%d spans sent, %d never acknowledged; lost %d, duplicated %d in spans.jsonl; lost %d, duplicated %d in the rollout files; %d in another rollout than the truth's",
		len(truth), len(notAcked), len(lost), len(dup), len(lostInFile), len(dupInFile), len(otherRollout))
	require.NotEmpty(t, truth)
	require.Empty(t, lost, "acknowledged spans missing from spans.jsonl")
	require.Empty(t, dup, "spans twice in spans.jsonl")
	require.Empty(t, lostInFile, "spans missing from the file of the rollout they carry")
	require.Empty(t, dupInFile, "spans twice in their rollout's file")
	if strict {
		require.Empty(t, notAcked, "spans the senders gave up on")
		require.Empty(t, otherRollout, "spans in another rollout than the truth's")
	} else if len(otherRollout) > 0 {
		t.Logf("in another rollout than the truth's (after the senders' backoff): %v", otherRollout[:min(len(otherRollout), 5)])
	}
}

// logGymMetrics logs the gym processor's counters that tell how spans
// left (by how, by release reason, duplicates, resent copies): what a
// failure of the rollout checks is read against.
func logGymMetrics(t *testing.T, when string) {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", embeddedPorts.Metrics))
	if err != nil {
		t.Logf("the collector's metrics %s: %v", when, err)
		return
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var kept []string
	for _, l := range strings.Split(string(b), "\n") {
		for _, m := range []string{"otelcol_processor_gym_spans_released", "otelcol_processor_gym_spans_promoted", "otelcol_processor_gym_duplicate", "otelcol_processor_gym_resent", "otelcol_processor_gym_late_parents", "otelcol_processor_gym_leaked_contexts", "otelcol_processor_gym_spans_redelivered"} {
			if strings.HasPrefix(l, m) {
				kept = append(kept, l)
			}
		}
	}
	t.Logf("the collector's metrics %s:\n%s", when, strings.Join(kept, "\n"))
}
