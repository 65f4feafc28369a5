// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/capturedir"
	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"golang.org/x/sys/unix"
)

// faultyDisk is the write seam of the tests: writes to the files in full
// fail with ENOSPC; to the files in short, half the bytes are written and
// the write reports it.
type faultyDisk struct {
	mu    sync.Mutex
	full  map[string]bool
	short map[string]bool
}

func (d *faultyDisk) write(name string, fd int, iovs [][]byte) (int, error) {
	d.mu.Lock()
	full, short := d.full[name], d.short[name]
	d.mu.Unlock()
	switch {
	case full:
		return 0, unix.ENOSPC
	case short:
		var p []byte
		for _, b := range iovs {
			p = append(p, b...)
		}
		n, err := unix.Write(fd, p[:len(p)/2])
		if err != nil {
			return n, err
		}
		return n, nil
	}
	return capturedir.Writev(name, fd, iovs)
}

func (d *faultyDisk) set(full, short []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.full, d.short = map[string]bool{}, map[string]bool{}
	for _, n := range full {
		d.full[n] = true
	}
	for _, n := range short {
		d.short[n] = true
	}
}

// spanIDsIn returns how many times each span id occurs in a console file
// (missing files hold none).
func spanIDsIn(t testing.TB, path string) map[string]int {
	t.Helper()
	out := map[string]int{}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return out
	}
	for _, l := range readLines(t, path) {
		var m struct {
			SpanID     string `json:"span_id"`
			RootSpanID string `json:"root_span_id"`
		}
		require.NoError(t, json.Unmarshal([]byte(l), &m), l)
		out[m.SpanID+m.RootSpanID]++
	}
	return out
}

// expectedFiles maps every file of a gymTraces stream to the span ids it
// must hold once.
func expectedFiles(td ptrace.Traces) map[string]map[string]int {
	want := map[string]map[string]int{"spans.jsonl": {}, "rollouts.jsonl": {}}
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		ss := td.ResourceSpans().At(i).ScopeSpans().At(0).Spans()
		for k := 0; k < ss.Len(); k++ {
			s := ss.At(k)
			sid := s.SpanID().String()
			want["spans.jsonl"][sid] = 1
			rid := strAttr(s.Attributes(), gymconv.RolloutAttribute)
			f := rid + ".spans.jsonl"
			if want[f] == nil {
				want[f] = map[string]int{}
			}
			want[f][sid] = 1
			if s.ParentSpanID().IsEmpty() {
				want["rollouts.jsonl"][sid] = 1
			}
		}
	}
	return want
}

func assertExactlyOnce(t *testing.T, dir string, want map[string]map[string]int) {
	t.Helper()
	for f, ids := range want {
		assert.Equal(t, ids, spanIDsIn(t, filepath.Join(dir, f)), f)
	}
}

func countSpans(td ptrace.Traces) map[string]bool {
	out := map[string]bool{}
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		for j := 0; j < td.ResourceSpans().At(i).ScopeSpans().Len(); j++ {
			ss := td.ResourceSpans().At(i).ScopeSpans().At(j).Spans()
			for k := 0; k < ss.Len(); k++ {
				out[ss.At(k).SpanID().String()] = true
			}
		}
	}
	return out
}

// TestDiskFullOnOneFile fails files a push writes (with the combined file,
// only it; with combined_file "", the rollout files and rollouts.jsonl),
// checks that the error carries exactly the spans with an unwritten line,
// and that retrying (the returned data, or the whole batch as an SDK
// would) leaves every span once in every file.
func TestDiskFullOnOneFile(t *testing.T) {
	for _, tc := range []struct {
		name      string
		combined  string
		full      []string
		wholeBack bool // retry with the whole batch instead of the error's data
	}{
		{name: "combined file", combined: "spans.jsonl", full: []string{"spans.jsonl"}},
		{name: "combined file, whole batch resent", combined: "spans.jsonl", full: []string{"spans.jsonl"}, wholeBack: true},
		{name: "write-through/rollout file", full: []string{"0-1.spans.jsonl"}},
		{name: "write-through/rollouts file", full: []string{"rollouts.jsonl"}},
		{name: "write-through/two files, whole batch resent", full: []string{"0-2.spans.jsonl", "rollouts.jsonl"}, wholeBack: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			disk := &faultyDisk{}
			e, tel := newTestExporter(t, func(c *Config) { c.CombinedFile = tc.combined })
			e.write = disk.write
			startExporter(t, e)
			td := gymTraces(7, 4, 6)
			want := expectedFiles(td)
			if tc.combined == "" {
				delete(want, "spans.jsonl")
			}

			disk.set(tc.full, nil)
			err := e.pushTraces(context.Background(), td)
			require.Error(t, err)
			assert.ErrorIs(t, err, unix.ENOSPC)
			// The capture dir and the cause lead the message (the gym
			// processor's line about the spans it holds is this error).
			assert.True(t, strings.HasPrefix(err.Error(), "capture dir "+e.cfg.CaptureDir+": "), err.Error())
			assert.NotContains(t, err.Error(), "\n", "one line")
			var perr consumererror.Traces
			require.ErrorAs(t, err, &perr)
			// The error carries exactly the spans that lack a line in a full file.
			wantBack := map[string]bool{}
			for _, f := range tc.full {
				for sid := range want[f] {
					wantBack[sid] = true
				}
			}
			assert.Equal(t, wantBack, countSpans(perr.Data()))
			assert.Equal(t, int64(len(tc.full)), sum(metricByAttr(t, tel, metricWriteErrors, "file")))

			// A second failure of the retry changes nothing.
			retry := perr.Data()
			if tc.wholeBack {
				retry = td
			}
			err = e.pushTraces(context.Background(), retry)
			require.Error(t, err)
			require.ErrorAs(t, err, &perr)
			assert.Equal(t, wantBack, countSpans(perr.Data()))

			disk.set(nil, nil)
			require.NoError(t, e.pushTraces(context.Background(), retry))
			if tc.combined != "" {
				flushFiles(t, e)
			}
			assertExactlyOnce(t, e.cfg.CaptureDir, want)
			assert.Zero(t, e.retry.Len(), "the retry table empties once everything is written")
		})
	}
}

// TestRolloutFileFullWithJournal: with the combined file, a rollout file
// or rollouts.jsonl that cannot be written fails no push: its lines stay
// pending (counted in the gauge, the failure in write_errors) and the next
// flush with room writes them, once.
func TestRolloutFileFullWithJournal(t *testing.T) {
	for _, full := range []string{"0-1.spans.jsonl", "rollouts.jsonl"} {
		t.Run(full, func(t *testing.T) {
			disk := &faultyDisk{}
			e, tel := newTestExporter(t, func(c *Config) { c.FlushInterval = time.Hour })
			e.write = disk.write
			startExporter(t, e)
			td := gymTraces(7, 4, 6)
			want := expectedFiles(td)
			disk.set([]string{full}, nil)
			require.NoError(t, e.pushTraces(context.Background(), td))
			flushFiles(t, e)
			assert.Positive(t, sum(metricByAttr(t, tel, metricWriteErrors, "file")))
			assert.Positive(t, sum(metricByAttr(t, tel, metricPendingBytes, "")), "the lines wait in memory")
			assert.Empty(t, spanIDsIn(t, filepath.Join(e.cfg.CaptureDir, full)))
			// rollouts.jsonl waits for its rollouts' files, never the reverse.
			if full == "0-1.spans.jsonl" {
				assert.NotContains(t, spanIDsIn(t, filepath.Join(e.cfg.CaptureDir, "rollouts.jsonl")), rootOf(t, td, "0-1"))
			}

			disk.set(nil, nil)
			flushFiles(t, e)
			assertExactlyOnce(t, e.cfg.CaptureDir, want)
			assert.Zero(t, sum(metricByAttr(t, tel, metricPendingBytes, "")))
		})
	}
}

// rootOf is the span id of rollout's parentless span in td.
func rootOf(t *testing.T, td ptrace.Traces, rollout string) string {
	t.Helper()
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		ss := td.ResourceSpans().At(i).ScopeSpans().At(0).Spans()
		for k := 0; k < ss.Len(); k++ {
			if s := ss.At(k); s.ParentSpanID().IsEmpty() && strAttr(s.Attributes(), gymconv.RolloutAttribute) == rollout {
				return s.SpanID().String()
			}
		}
	}
	t.Fatalf("no root of %s", rollout)
	return ""
}

// TestShortWriteLeavesNoPartialLine makes write(2) stop halfway: the file is
// cut back to its size before, and the next append is clean.
func TestShortWriteLeavesNoPartialLine(t *testing.T) {
	disk := &faultyDisk{}
	e, tel := newTestExporter(t, nil)
	e.write = disk.write
	startExporter(t, e)
	require.NoError(t, e.pushTraces(context.Background(), gymTraces(1, 2, 4)))
	path := filepath.Join(e.cfg.CaptureDir, "spans.jsonl")
	before, err := os.ReadFile(path)
	require.NoError(t, err)

	disk.set(nil, []string{"spans.jsonl"})
	td := gymTraces(2, 2, 4)
	err = e.pushTraces(context.Background(), td)
	require.Error(t, err)
	var perr consumererror.Traces
	require.ErrorAs(t, err, &perr)
	assert.Equal(t, countSpans(td), countSpans(perr.Data()))
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, before, after, "the half-written batch was cut off")

	disk.set(nil, nil)
	require.NoError(t, e.pushTraces(context.Background(), perr.Data()))
	assert.Len(t, readLines(t, path), 16)
	assert.Zero(t, sum(metricByAttr(t, tel, metricTornTails, "")), "nothing torn was left behind")
}

// TestShortWriteIsContinued: a write that comes short is continued; when
// the disk then takes nothing more, the error names why (ENOSPC), and the
// file is cut back; when it takes the rest, the append succeeds.
func TestShortWriteIsContinued(t *testing.T) {
	for _, full := range []bool{true, false} {
		t.Run(fmt.Sprintf("full=%v", full), func(t *testing.T) {
			e, _ := newTestExporter(t, nil)
			var calls int
			e.write = func(name string, fd int, iovs [][]byte) (int, error) {
				if name != "spans.jsonl" {
					return capturedir.Writev(name, fd, iovs)
				}
				if calls++; calls == 1 {
					return capturedir.Writev(name, fd, [][]byte{iovs[0][:len(iovs[0])/2]})
				}
				if full {
					return 0, unix.ENOSPC
				}
				return capturedir.Writev(name, fd, iovs)
			}
			startExporter(t, e)
			td := gymTraces(1, 2, 4)
			err := e.pushTraces(context.Background(), td)
			path := filepath.Join(e.cfg.CaptureDir, "spans.jsonl")
			if !full {
				require.NoError(t, err)
				assert.Len(t, readLines(t, path), 8)
				return
			}
			require.ErrorIs(t, err, unix.ENOSPC)
			assert.Contains(t, err.Error(), "no space left on device")
			b, rerr := os.ReadFile(path)
			require.NoError(t, rerr)
			assert.Empty(t, b, "the half-written batch was cut off")
		})
	}
}

// TestRetryThroughExporterHelper runs the factory's exporter with
// retry_on_failure on: the helper retries the error's data and every span
// lands once.
func TestRetryThroughExporterHelper(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.CaptureDir = t.TempDir()
	cfg.ServiceMap.Enabled = false
	cfg.RetryConfig.Enabled = true
	cfg.RetryConfig.InitialInterval = time.Millisecond
	cfg.RetryConfig.MaxInterval = time.Millisecond
	cfg.RetryConfig.MaxElapsedTime = time.Minute
	disk := &faultyDisk{}
	failures := 0
	disk.set([]string{"spans.jsonl"}, nil)
	seam := func(name string, fd int, iovs [][]byte) (int, error) {
		n, err := disk.write(name, fd, iovs)
		if err != nil {
			failures++
			if failures == 3 {
				disk.set(nil, nil) // the disk has room again
			}
		}
		return n, err
	}
	testSeam = seam
	t.Cleanup(func() { testSeam = nil })

	exp, err := NewFactory().CreateTraces(context.Background(), exportertest.NewNopSettings(componentType), cfg)
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	td := gymTraces(3, 3, 5)
	want := expectedFiles(td)
	require.NoError(t, exp.ConsumeTraces(context.Background(), td))
	require.NoError(t, exp.Shutdown(context.Background()))
	assert.Equal(t, 3, failures)
	assertExactlyOnce(t, cfg.CaptureDir, want)
}

func sum(m map[string]int64) int64 {
	var s int64
	for _, v := range m {
		s += v
	}
	return s
}
