// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-gym/otelcol-gym/internal/gymview/gymviewtest"
)

// The viewer's scale figures (issue #18, acceptance 5), as benchmarks of the
// built binary:
//
//	go test -run '^$' -bench 'Viewer' -benchtime 20x ./e2e/
//
// The capture dirs are synthetic (internal/gymview/gymviewtest), written on
// tmpfs (/dev/shm) when there is one.

func benchCaptureDir(b *testing.B) string {
	b.Helper()
	parent := ""
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		parent = "/dev/shm"
	}
	dir, err := os.MkdirTemp(parent, "otelcol-gym-viewer-bench-")
	require.NoError(b, err)
	b.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// procStatusMiB reads a VmRSS-like line of /proc/<pid>/status, in MiB.
func procStatusMiB(b *testing.B, pid int, key string) float64 {
	b.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(b, err)
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			require.NoError(b, err)
			return kb / 1024
		}
	}
	b.Fatalf("no %s in /proc/%d/status", key, pid)
	return 0
}

func getBody(b *testing.B, url string) []byte {
	b.Helper()
	resp, err := http.Get(url)
	require.NoError(b, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(b, err)
	require.Equal(b, http.StatusOK, resp.StatusCode, "%s", body)
	return body
}

// BenchmarkViewerFirstPage100k: `otelcol-gym view` on a run of 100,000
// rollouts (rollouts.jsonl of 100,000 lines and 200,000 rollout files). The
// first request of a fresh process (cold-ms: indexing, the directory scan,
// the sort) is timed once; ns/op is the first page asked again, as the
// polling page does; rss-MiB and hwm-MiB are the viewer's resident memory
// after the run and at its peak.
func BenchmarkViewerFirstPage100k(b *testing.B) {
	dir := benchCaptureDir(b)
	require.NoError(b, gymviewtest.WriteRun(dir, gymviewtest.Run{ID: "bench", Rollouts: 100_000, FailedEvery: 7, InFlight: 8}))
	v := startViewer(b, dir)
	url := v.base + "/api/rollouts?run=bench"
	start := time.Now()
	body := getBody(b, url)
	cold := time.Since(start)
	require.Contains(b, string(body), `"all":100000`)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		getBody(b, url)
	}
	b.StopTimer()
	b.ReportMetric(float64(cold.Microseconds())/1000, "cold-ms")
	b.ReportMetric(procStatusMiB(b, v.cmd.Process.Pid, "VmRSS"), "rss-MiB")
	b.ReportMetric(procStatusMiB(b, v.cmd.Process.Pid, "VmHWM"), "hwm-MiB")
}

// BenchmarkViewerRender10kSpans: Chromium opens the page of a rollout of
// 10,000 spans and 2,000 model exchanges; render-ms is the time from the
// navigation's start to the first frame after the waterfall is in the DOM
// (the page's own performance.now()), averaged over the loads; fetched-ms is
// when the API's answer was parsed, build-ms the DOM's construction after it.
func BenchmarkViewerRender10kSpans(b *testing.B) {
	dir := benchCaptureDir(b)
	spans, err := gymviewtest.WriteRollout(dir, "bench", "big-0", 10_000)
	require.NoError(b, err)
	v := startViewer(b, dir)
	br := newBrowser(b, v.base)
	var total, fetched, built float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		br.open("/rollout?run=bench&id=big-0", `document.getElementById('main').dataset.rendered`)
		b.StopTimer()
		require.Equal(b, spans, evalJS[int](br, `document.querySelectorAll('#waterfall .span-row').length`))
		ms, err := strconv.ParseFloat(evalJS[string](br, `document.getElementById('main').dataset.renderMs`), 64)
		require.NoError(b, err)
		total += ms
		fetched += evalJS[float64](br, `performance.getEntriesByName('viewer:fetched')[0].startTime`)
		built += evalJS[float64](br, `performance.getEntriesByName('viewer:built')[0].startTime`)
		b.StartTimer()
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(total/n, "render-ms")
	b.ReportMetric(fetched/n, "fetched-ms")
	b.ReportMetric((built-fetched)/n, "build-ms")
	b.ReportMetric(float64(spans), "spans")
	br.clean()
}
