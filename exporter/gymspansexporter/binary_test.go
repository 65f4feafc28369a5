// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter

// Subprocess tests of the built collector (design §5.1 durability): a
// pipeline otlp → gymspans without gym, driven over OTLP/gRPC on loopback.
// The binary is OTELCOL_GYM_BIN when that names a file, else built once per
// test process on first use.

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/otelcol-gym/otelcol-gym/internal/testbin"
)

// collectorBinary returns the otelcol-gym binary (OTELCOL_GYM_BIN, else
// built once per test process).
func collectorBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the collector binary")
	}
	p, err := testbin.Path("otelcol-gym", "OTELCOL_GYM_BIN")
	require.NoError(t, err)
	return p
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// collector is one running otelcol-gym process.
type collector struct {
	cmd    *exec.Cmd
	out    *strings.Builder
	client ptraceotlp.GRPCClient
	conn   *grpc.ClientConn
}

func startCollector(t *testing.T, captureDir string, gymspansKeys ...string) *collector {
	t.Helper()
	extra := ""
	for _, k := range gymspansKeys {
		extra += "\n    " + k
	}
	bin := collectorBinary(t)
	port := freePort(t)
	cfg := fmt.Sprintf(`receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:%d
exporters:
  gymspans:
    capture_dir: %q%s
    flush_interval: 1h
    rotation:
      max_megabytes: 1
      max_backups: 1000
    service_map:
      enabled: false
service:
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [gymspans]
`, port, captureDir, extra)
	cfgPath := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(cfg), 0o600))
	c := &collector{cmd: exec.Command(bin, "--config", cfgPath), out: &strings.Builder{}}
	c.cmd.Stdout, c.cmd.Stderr = c.out, c.out
	require.NoError(t, c.cmd.Start())
	t.Cleanup(func() {
		if c.cmd.ProcessState == nil {
			_ = c.cmd.Process.Kill()
			_ = c.cmd.Wait()
		}
	})
	conn, err := grpc.NewClient(fmt.Sprintf("127.0.0.1:%d", port), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	c.conn, c.client = conn, ptraceotlp.NewGRPCClient(conn)
	return c
}

// export sends td and waits for the collector to answer (WaitForReady
// covers the start-up).
func (c *collector) export(td ptrace.Traces) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := c.client.Export(ctx, ptraceotlp.NewExportRequestFromTraces(td), grpc.WaitForReady(true))
	return err
}

func (c *collector) kill(t *testing.T) {
	require.NoError(t, c.cmd.Process.Signal(syscall.SIGKILL))
	_ = c.cmd.Wait()
}

func (c *collector) stop(t *testing.T) {
	require.NoError(t, c.cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, c.cmd.Wait(), c.out.String())
}

// allLines counts span ids over the combined file and its backups.
func combinedIDs(t *testing.T, dir string) map[string]int {
	got := map[string]int{}
	for _, f := range append(backupsOf(t, dir), "spans.jsonl") {
		for id, n := range spanIDsIn(t, filepath.Join(dir, f)) {
			got[id] += n
		}
	}
	return got
}

func rolloutIDs(t *testing.T, dir string) map[string]int {
	got := map[string]int{}
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".spans.jsonl") {
			for id, n := range spanIDsIn(t, filepath.Join(dir, e.Name())) {
				got[id] += n
			}
		}
	}
	return got
}

func onceEach(tds ...ptrace.Traces) map[string]int {
	out := map[string]int{}
	for _, td := range tds {
		for id := range countSpans(td) {
			out[id]++
		}
	}
	return out
}

// TestBinaryKillRestartAppend: a torn line left by an earlier crash is cut
// on the first append; SIGKILL right after exports returned loses nothing
// (the combined file has every span; the rollout files, written once per
// flush_interval, are completed by the next start); a restarted collector
// appends to the same files.
func TestBinaryKillRestartAppend(t *testing.T) {
	dir := t.TempDir()
	// An earlier crash left torn lines.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "spans.jsonl"), []byte(`{"name":"torn`), 0o640))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "0-0.spans.jsonl"), []byte(`{"name":"torn`), 0o640))

	var sent []ptrace.Traces
	c := startCollector(t, dir)
	for i := 0; i < 20; i++ {
		td := gymTraces(uint64(100+i), 8, 10)
		require.NoError(t, c.export(td))
		sent = append(sent, td)
	}
	c.kill(t)
	want := onceEach(sent...)
	assert.Equal(t, want, combinedIDs(t, dir), "every span that was acknowledged survives SIGKILL")

	c = startCollector(t, dir)
	for i := 0; i < 5; i++ {
		td := gymTraces(uint64(200+i), 8, 10)
		require.NoError(t, c.export(td))
		sent = append(sent, td)
	}
	c.stop(t)
	want = onceEach(sent...)
	assert.Equal(t, want, combinedIDs(t, dir), "the restart appended")
	assert.Equal(t, want, rolloutIDs(t, dir))
	assert.Len(t, spanIDsIn(t, filepath.Join(dir, "rollouts.jsonl")), 25*8)
}

// TestBinaryTwoCollectorsShareDir runs two collectors on one capture dir,
// both sending the same rollouts at once.
func TestBinaryTwoCollectorsShareDir(t *testing.T) {
	dir := t.TempDir()
	// Two collectors on a local disk share it only when told so: without
	// shared_capture_dir they append, and rotate, without taking locks.
	a, b := startCollector(t, dir, "shared_capture_dir: true"), startCollector(t, dir, "shared_capture_dir: true")
	var mu sync.Mutex
	var sent []ptrace.Traces
	var wg sync.WaitGroup
	for p, c := range []*collector{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 30; i++ {
				td := gymTraces(uint64(1000*(p+1)+i), 6, 12)
				if !assert.NoError(t, c.export(td)) {
					return
				}
				mu.Lock()
				sent = append(sent, td)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	a.stop(t)
	b.stop(t)
	want := onceEach(sent...)
	assert.Equal(t, want, combinedIDs(t, dir))
	assert.Equal(t, want, rolloutIDs(t, dir))
}

// TestBinaryDiskFull runs the collector on a small tmpfs: exports fail while
// the disk is full, the sender re-sends whole batches (as an SDK does), and
// once there is room every span is in every file exactly once.
func TestBinaryDiskFull(t *testing.T) {
	mnt := t.TempDir()
	if err := mountTmpfs(t, mnt, "8m", false); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	dir := filepath.Join(mnt, "capture")
	require.NoError(t, os.Mkdir(dir, 0o750))
	filler := filepath.Join(mnt, "filler")
	c := startCollector(t, dir)

	var batches []ptrace.Traces
	for i := 0; i < 24; i++ {
		batches = append(batches, gymTraces(uint64(500+i), 10, 10)) // ~100 spans, ~0.2 MiB of lines
	}
	// Leave room for about half of them.
	require.NoError(t, os.WriteFile(filler, make([]byte, 6<<20), 0o600))
	var failed []ptrace.Traces
	for _, td := range batches {
		if err := c.export(td); err != nil {
			failed = append(failed, td)
		}
	}
	t.Logf("%d of %d batches failed while the disk was full", len(failed), len(batches))
	require.NotEmpty(t, failed, "the disk filled up")
	require.Less(t, len(failed), len(batches), "some batches fit")
	require.NoError(t, os.Remove(filler))
	for _, td := range failed {
		require.NoError(t, c.export(td))
	}
	c.stop(t)
	want := onceEach(batches...)
	assert.Equal(t, want, combinedIDs(t, dir))
	assert.Equal(t, want, rolloutIDs(t, dir))
	for _, f := range append(backupsOf(t, dir), "spans.jsonl") {
		data, err := os.ReadFile(filepath.Join(dir, f))
		require.NoError(t, err)
		assert.True(t, len(data) == 0 || data[len(data)-1] == '\n', "%s has no partial line", f)
	}
}

// TestBinaryValidateWritesNothing: `otelcol-gym validate` on a config with
// gymspans writes nowhere (issue #20): an existing capture dir gains no file
// and keeps its mtime, a missing one is not created.
func TestBinaryValidateWritesNothing(t *testing.T) {
	bin := collectorBinary(t)
	existing := t.TempDir()
	require.NoError(t, os.Chtimes(existing, oldTime, oldTime))
	missing := filepath.Join(t.TempDir(), "captures")
	cfg := fmt.Sprintf(`receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:0
exporters:
  gymspans:
    capture_dir: %q
  gymspans/missing:
    capture_dir: %q
service:
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [gymspans, gymspans/missing]
`, existing, missing)
	cfgPath := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(cfg), 0o600))
	out, err := exec.Command(bin, "validate", "--config", cfgPath).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assertUntouched(t, existing)
	_, err = os.Stat(missing)
	assert.ErrorIs(t, err, os.ErrNotExist, "validate created the missing capture dir")
}
