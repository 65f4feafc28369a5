// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// Issue #8, overload. TestSoak drives the shipped standalone pipeline
// (memory_limiter → gym → gymspans) with gymsim in blocking mode at 20,000
// spans/s offered: 3 s of rollouts by default, 10 minutes with
// OTELCOL_GYM_SOAK=1 (OTELCOL_GYM_SOAK_DURATION overrides, e.g. 2m). The
// full run writes about 12 M spans: ~17 GB under the capture dir.

const (
	soakSpansPerRollout = 32  // the default preset's spans per rollout (gymsim README)
	soakRolloutsPerSec  = 625 // 625 × 32 = 20,000 spans/s offered
	standaloneLimitMiB  = 2048
)

// procStatusKiB reads a "Vm...:  N kB" field of /proc/<pid>/status.
func procStatusKiB(pid int, field string) (int64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// sampleRSS records the collector's VmRSS every 250ms until finish, for
// the report (the bound asserted is VmHWM, the kernel's own peak).
func sampleRSS(pid int) *valueSampler {
	return sampleValues(250*time.Millisecond, func() (int64, bool) { return procStatusKiB(pid, "VmRSS") })
}

// countCombinedLines counts non-synthetic span lines in spans.jsonl and its
// rotated backups.
func countCombinedLines(t *testing.T, captureDir string) (spans, synthetic int) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(captureDir, "spans*.jsonl"))
	require.NoError(t, err)
	for _, f := range files {
		fh, err := os.Open(f)
		require.NoError(t, err)
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			// Console lines carry attributes as plain JSON; the marker is
			// written exactly so by the encoder.
			if bytes.Contains(sc.Bytes(), []byte(`"nemo.gym.synthetic":true`)) {
				synthetic++
			} else {
				spans++
			}
		}
		require.NoError(t, sc.Err())
		fh.Close()
	}
	return spans, synthetic
}

// metricPeak records the highest value a gauge of the collector showed,
// scraped every 500ms until finish.
type metricPeak struct {
	peak float64
	stop chan struct{}
	done chan struct{}
}

func sampleMetricPeak(t testing.TB, port int, name string) *metricPeak {
	m := &metricPeak{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(m.done)
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-m.stop:
				return
			case <-tick.C:
				if v, ok := scrapeMetric(t, port, name); ok {
					m.peak = max(m.peak, v)
				}
			}
		}
	}()
	return m
}

func (m *metricPeak) finish() float64 {
	close(m.stop)
	<-m.done
	return m.peak
}

var gymsimRateLine = regexp.MustCompile(`(\d+) spans in ([0-9.]+m?s).*?: (\d+) spans/s`)

func soakDuration() time.Duration {
	if os.Getenv("OTELCOL_GYM_SOAK") != "1" {
		return 3 * time.Second
	}
	if d, err := time.ParseDuration(os.Getenv("OTELCOL_GYM_SOAK_DURATION")); err == nil && d > 0 {
		return d
	}
	return 10 * time.Minute
}

func TestSoak(t *testing.T) {
	dur := soakDuration()
	rollouts := int(dur.Seconds() * soakRolloutsPerSec)
	p := newPorts(t)
	captureDir := filepath.Join(t.TempDir(), "captures")
	// The shipped standalone config, with the combined file's backups kept so
	// every line can be counted.
	// (The gymview extension's section has a capture_dir line too: the
	// rotation goes under gymspans's.)
	const gymspans = "  gymspans:\n    capture_dir: ${env:NEMO_GYM_CAPTURE_DIR:-./captures}\n"
	cfg := standaloneOnPorts(t, p)
	require.Contains(t, cfg, gymspans)
	cfg = strings.Replace(cfg, gymspans, gymspans+"    rotation: {max_megabytes: 1024, max_backups: 1000}\n", 1)
	col := startCollector(t, p, []string{"NEMO_GYM_CAPTURE_DIR=" + captureDir},
		"--config", writeFile(t, t.TempDir(), "soak.yaml", cfg))
	pid := col.cmd.Process.Pid
	rss := sampleRSS(pid)
	// What the resident set is made of: anonymous memory (the Go heap, the
	// pending store's chunks) and mapped files (the journal's bbolt file),
	// and the Go heap as the collector reports it.
	rssAnon := sampleValues(time.Second, func() (int64, bool) { return procStatusKiB(pid, "RssAnon") })
	rssFile := sampleValues(time.Second, func() (int64, bool) { return procStatusKiB(pid, "RssFile") })
	heap := sampleValues(time.Second, func() (int64, bool) {
		v, ok := scrapeMetric(t, p.Metrics, "otelcol_process_runtime_heap_alloc_bytes")
		return int64(v), ok
	})
	pending := sampleMetricPeak(t, p.Metrics, "otelcol_processor_gym_pending_spans")
	stored := sampleMetricPeak(t, p.Metrics, "otelcol_processor_gym_storage_bytes")
	storeDir := filepath.Join(captureDir, ".otelcol-gym")
	storeSize := sampleDirSize(storeDir)

	args := []string{
		"--rollouts=" + strconv.Itoa(rollouts), "--concurrency=64", "--rate=" + strconv.Itoa(soakRolloutsPerSec),
		"--blocking", "--batch-delay=1s", "--run-id=soak-run", fmt.Sprintf("--endpoint=127.0.0.1:%d", p.GRPC),
	}
	out, err := runCmd(t, dur+10*time.Minute, nil, gymsimBinary(t), args...)
	require.NoError(t, err, "gymsim %v (blocking: it exits 1 on any span not exported):\n%s", args, out)
	samples := rss.finish()
	pendingPeak := pending.finish()
	storedPeak := stored.finish()
	storeSizes := storeSize.finish()
	anonSizes, fileSizes, heapSizes := rssAnon.finish(), rssFile.finish(), heap.finish()
	hwm, ok := procStatusKiB(pid, "VmHWM")
	require.True(t, ok)
	accepted, ok := scrapeMetric(t, p.Metrics, "otelcol_receiver_accepted_spans", `transport="grpc"`)
	require.True(t, ok)
	refused, _ := scrapeMetric(t, p.Metrics, "otelcol_receiver_refused_spans")
	require.NoError(t, col.stop())

	written, synthetic := countCombinedLines(t, captureDir)
	rate := "?"
	created := 0
	if m := gymsimRateLine.FindStringSubmatch(out); m != nil {
		created, _ = strconv.Atoi(m[1])
		rate = m[3] + " spans/s over " + m[2]
	}
	var maxRSS, lastRSS int64
	var quarters []int64 // RSS at each quarter of the run: a leak shows as a trend
	for i, v := range samples {
		maxRSS = max(maxRSS, v)
		lastRSS = v
		if len(samples) >= 4 && (i+1)%(len(samples)/4) == 0 && len(quarters) < 4 {
			quarters = append(quarters, v>>10)
		}
	}
	t.Logf("soak %v: %d rollouts, gymsim created %d spans, %s; accepted %.0f, refused %.0f, written %d (+%d synthetic); "+
		"collector RSS max sampled %d MiB, at each quarter %v MiB, last %d MiB, VmHWM %d MiB (%d samples); pending spans peak %.0f; "+
		"gym journal: storage_bytes peak %.0f MiB, file_storage dir at each quarter %v MiB (max %d MiB); "+
		"at each quarter RssAnon %v MiB, RssFile %v MiB, Go heap in use %v MiB",
		dur, rollouts, created, rate, accepted, refused, written, synthetic, maxRSS>>10, quarters, lastRSS>>10, hwm>>10, len(samples), pendingPeak,
		storedPeak/(1<<20), quarterValues(storeSizes, 20), maxOf(storeSizes)>>20,
		quarterValues(anonSizes, 10), quarterValues(fileSizes, 10), quarterValues(heapSizes, 20))

	assert.Equal(t, int(accepted), written, "spans accepted by the receiver == non-synthetic spans written")
	if created > 0 {
		assert.Equal(t, created, int(accepted), "blocking gymsim: every span created was accepted")
	}
	// memory_limiter's hard limit in standalone.yaml bounds the heap; the
	// resident set stays below it.
	assert.Less(t, hwm>>10, int64(standaloneLimitMiB), "peak RSS (VmHWM) in MiB")
	// The journal keeps the last checkpoint and the records after it: its
	// size does not grow with the length of the run.
	require.NotEmpty(t, storeSizes, "the gym processor's file_storage dir %s", storeDir)
	if len(storeSizes) >= 8 {
		firstHalf, secondHalf := maxOf(storeSizes[:len(storeSizes)/2]), maxOf(storeSizes[len(storeSizes)/2:])
		assert.LessOrEqual(t, secondHalf, 2*firstHalf+64<<20, "the journal's store does not keep growing (first half max %d MiB, second %d MiB)", firstHalf>>20, secondHalf>>20)
	}
}

// sampleDirSize records the total size of the files under dir every second.
func sampleDirSize(dir string) *valueSampler {
	return sampleValues(time.Second, func() (int64, bool) {
		var n int64
		err := filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
			return nil
		})
		return n, err == nil && n > 0
	})
}

// valueSampler calls a probe at a period until finish, keeping its values.
type valueSampler struct {
	mu     sync.Mutex
	values []int64
	stop   chan struct{}
	done   chan struct{}
}

func sampleValues(period time.Duration, probe func() (int64, bool)) *valueSampler {
	s := &valueSampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(period)
		defer tick.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-tick.C:
				if v, ok := probe(); ok {
					s.mu.Lock()
					s.values = append(s.values, v)
					s.mu.Unlock()
				}
			}
		}
	}()
	return s
}

func (s *valueSampler) finish() []int64 {
	close(s.stop)
	<-s.done
	return s.values
}

func maxOf(v []int64) int64 {
	var m int64
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

// quarterValues are the values at each quarter of v, shifted right by shift.
func quarterValues(v []int64, shift uint) []int64 {
	var out []int64
	for q := 1; q <= 4 && len(v) >= 4; q++ {
		out = append(out, v[q*len(v)/4-1]>>shift)
	}
	return out
}

// TestMemoryLimiterRefusalIsRetryable: a collector whose memory_limiter is
// always over its (tiny) limit refuses exports with what OTLP clients retry:
// gRPC codes.Unavailable, HTTP 503 (design §4.5, OTLP "Failures"). The
// collector sends Retry-After only when the refusal carries gRPC RetryInfo,
// which memory_limiter's does not; the test logs what it saw.
func TestMemoryLimiterRefusalIsRetryable(t *testing.T) {
	p := newPorts(t)
	captureDir := filepath.Join(t.TempDir(), "captures")
	cfg := p.expand(`
extensions:
  health_check:
    endpoint: 127.0.0.1:${HEALTH}
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:${GRPC}
      http:
        endpoint: 127.0.0.1:${HTTP}
processors:
  memory_limiter:
    check_interval: 100ms
    limit_mib: 2
    spike_limit_mib: 1
  gym:
exporters:
  gymspans:
    capture_dir: ${CAPTURE_DIR}
service:
  extensions: [health_check]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [memory_limiter, gym]
      exporters: [gymspans]
  telemetry:
    metrics:
      readers:
        - pull:
            exporter:
              prometheus:
                host: 127.0.0.1
                port: ${METRICS}
`, captureDir)
	col := startCollector(t, p, nil, "--config", writeFile(t, t.TempDir(), "limited.yaml", cfg))
	conn, err := grpc.NewClient(fmt.Sprintf("127.0.0.1:%d", p.GRPC), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	client := ptraceotlp.NewGRPCClient(conn)

	// The limiter's first check may come after the first export: send until
	// one is refused (each attempt is a new span; accepted ones are counted).
	var grpcErr error
	n := 100
	pollUntil(t, 30*time.Second, "a refusal from memory_limiter", func() bool {
		n++
		req, _ := secRequest(n)
		_, grpcErr = client.Export(t.Context(), req)
		return grpcErr != nil
	})
	assert.Equal(t, codes.Unavailable, status.Code(grpcErr), "gRPC refusal: %v", grpcErr)

	n++
	req, _ := secRequest(n)
	body, err := req.MarshalProto()
	require.NoError(t, err)
	resp, err := http.Post(fmt.Sprintf("http://127.0.0.1:%d/v1/traces", p.HTTP), "application/x-protobuf", bytes.NewReader(body))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Contains(t, []int{http.StatusServiceUnavailable, http.StatusTooManyRequests}, resp.StatusCode, "HTTP refusal")
	t.Logf("gRPC: %v; HTTP: %d, Retry-After %q", grpcErr, resp.StatusCode, resp.Header.Get("Retry-After"))

	accepted, _ := scrapeMetric(t, p.Metrics, "otelcol_receiver_accepted_spans")
	refused, _ := scrapeMetric(t, p.Metrics, "otelcol_receiver_refused_spans")
	assert.GreaterOrEqual(t, refused, 2.0, "refusals counted")
	require.NoError(t, col.stop())
	written, _ := countCombinedLines(t, captureDir)
	assert.Equal(t, int(accepted), written, "what was refused was not written; what was accepted was")
}
