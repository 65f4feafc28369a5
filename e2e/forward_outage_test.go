// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package e2e

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-gym/otelcol-gym/config"
)

// Forwarding is best effort (design §6): the capture dir is the record, and
// a backend that is down costs forwarded data only. The embedded default,
// forwarding to a backend that is down, takes a gymsim run bigger than the
// forward exporter's queue (shrunk to forwardQueueBytes with --set, as a
// user would): every span is once in the capture dir, the gym processor is
// never refused by its next consumer nor refuses a batch upstream, the log
// says forwarding fails and what was not forwarded, and the gymforward
// connector's metric counts it. Nothing listening until a second collector
// starts after the run (whose data then arrives there), or a server that
// answers 503 throughout. Every wait is for what a process shows (a metric,
// a file, a log line), never for a time.

// forwardQueueBytes is the forward exporter's queue in the test: a few
// hundred of gymsim's spans, a tenth of its run.
const forwardQueueBytes = 256 << 10

type forwardOutageCase struct {
	name string
	// unavailable: a server answers every export with 503; else nothing
	// listens until a second collector starts after the run.
	unavailable bool
}

func TestForwardingBackendDown(t *testing.T) {
	for _, oc := range []forwardOutageCase{
		{name: "nothing_listening_then_up"},
		{name: "unavailable_503", unavailable: true},
	} {
		t.Run(oc.name, func(t *testing.T) {
			if !inPrivateNamespaces(t) {
				return
			}
			runForwardOutage(t, oc)
		})
	}
}

func runForwardOutage(t *testing.T, oc forwardOutageCase) {
	dir := t.TempDir()
	r := &fullDiskRun{captureDir: filepath.Join(dir, "captures"), outDir: filepath.Join(dir, "out")}
	r.truth = filepath.Join(r.outDir, "truth.jsonl")
	require.NoError(t, os.Mkdir(r.outDir, 0o750))
	bp := newPorts(t) // the backend's
	var refused *atomic.Int64
	if oc.unavailable {
		refused = serveUnavailable(t, bp.HTTP)
	}
	traces := fmt.Sprintf("http://127.0.0.1:%d/v1/traces", bp.HTTP)
	col := startCollector(t, embeddedPorts, []string{
		"NEMO_GYM_CAPTURE_DIR=" + r.captureDir,
		fmt.Sprintf("%s=http://127.0.0.1:%d", config.ForwardEndpointEnv, bp.HTTP),
	}, fmt.Sprintf("--set=exporters::%s::sending_queue::queue_size=%d", config.ForwardExporter, forwardQueueBytes))

	sim := exec.Command(gymsimBinary(t), "--protocol=http", "--endpoint=127.0.0.1:4318", "--rollouts=100", "--concurrency=16",
		"--rollout-duration=200ms", "--run-id=e2efwd0001", "--batch-delay=200ms", "--blocking",
		"--capture-dir="+r.captureDir, "--truth="+r.truth)
	var simOut bytes.Buffer
	sim.Stdout, sim.Stderr = &simOut, &simOut
	require.NoError(t, sim.Run(), simOut.String())
	sent := len(truthIDs(t, r.truth))

	// The run is in the capture dir, while forwarding fails.
	inFile := 0
	defer func() {
		if t.Failed() {
			t.Logf("%d of the run's %d spans in spans.jsonl", inFile, sent)
		}
	}()
	pollUntil(t, 2*time.Minute, "every span of the run in spans.jsonl", func() bool {
		got, _ := spanLines(t, filepath.Join(r.captureDir, "spans.jsonl"))
		inFile = len(got)
		return inFile >= sent
	})
	gymProcessorNeverRefused(t)
	dropped := forwardDropped(t)
	require.Positive(t, dropped, "the connector counted spans it did not forward")
	failing := forwardLines(col.stderr.String(), traces, "fails")
	require.NotEmpty(t, failing, "an error line says forwarding fails")
	t.Logf("collector: %s", failing[0])
	require.Contains(t, failing[0], "spans not forwarded")
	require.Contains(t, failing[0], "Local capture goes on")
	if refused != nil {
		require.Positive(t, refused.Load(), "the backend was asked")
	}
	t.Logf("%d spans sent, %.0f not forwarded (otelcol_connector_gymforward_spans_dropped)", sent, dropped)

	var later int
	var receiver *collector
	if !oc.unavailable {
		receiver, later = backendComesUp(t, col, bp, dir, traces)
	}
	gymProcessorNeverRefused(t)
	dropped = forwardDropped(t)
	require.NoError(t, col.stop(), "collector exit")
	if receiver != nil {
		require.NoError(t, receiver.stop(), "the backend's exit")
	}
	checkEverySpanOnce(t, r, true)
	checkForwardLines(t, col.stderr.String(), traces, dropped, oc.unavailable)
	if later > 0 {
		markers, _ := spanLines(t, filepath.Join(r.captureDir, "spans.jsonl"))
		for i := range later {
			assert.Equal(t, 1, markers[laterSpanID(i).String()], "span %d sent after the backend came up, in the capture dir once", i)
		}
	}
}

// backendComesUp starts a second collector on bp and sends a span at a time
// until one reaches it: data sent once the backend is up arrives there
// (after the forward exporter's retries, 30 s apart at most, empty its
// queue, and the connector's backoff, 15 s at most, ends). Then the
// connector says forwarding works again, and the test waits for the forward
// exporter's queue to empty: the backend stays up until the collector has
// stopped, so what the collector hands on at shutdown (its last flush) finds
// room and is forwarded, never refused by a queue still full of the outage's
// retries (a CI run that stopped the backend first saw "failed until
// shutdown"). It returns the backend, to stop after the collector, and how
// many spans it sent.
func backendComesUp(t *testing.T, col *collector, bp ports, dir, traces string) (*collector, int) {
	t.Helper()
	tmpl, err := os.ReadFile(filepath.Join("testdata", "forward_receiver.yaml"))
	require.NoError(t, err)
	recvDir := filepath.Join(dir, "receiver")
	require.NoError(t, os.Mkdir(recvDir, 0o750))
	receiver := startCollector(t, bp, nil, "--config", writeFile(t, dir, "receiver.yaml", bp.expand(string(tmpl), recvDir)))
	sent := 0
	pollUntil(t, 3*time.Minute, "a span sent after the backend came up, at the backend", func() bool {
		postLaterSpan(t, sent)
		sent++
		b, _ := os.ReadFile(filepath.Join(recvDir, "traces.jsonl"))
		return bytes.Contains(b, []byte(`"fwd-later-`))
	})
	pollUntil(t, time.Minute, "the connector to say forwarding works again", func() bool {
		return len(forwardLines(col.stderr.String(), traces, "works again")) > 0
	})
	again := forwardLines(col.stderr.String(), traces, "works again")
	t.Logf("collector: %s (after %d spans sent a span at a time)", again[0], sent)
	queued := -1.0
	pollUntil(t, 2*time.Minute, "the forward exporter's queue to empty", func() bool {
		v, ok := scrapeMetric(t, embeddedPorts.Metrics, "otelcol_exporter_queue_size", `exporter="`+config.ForwardExporter+`"`)
		queued = v
		return ok && v == 0
	})
	t.Logf("the forward exporter's queue is empty (otelcol_exporter_queue_size %.0f)", queued)
	return receiver, sent
}

// postLaterSpan sends span i, a rollout root of its own, over OTLP/HTTP.
func postLaterSpan(t *testing.T, i int) {
	t.Helper()
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "nemo-gym/simple_agent")
	span := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	span.SetName("gym.rollout")
	span.SetTraceID(pcommon.TraceID{0xf0, byte(i >> 8), byte(i), 1})
	span.SetSpanID(laterSpanID(i))
	now := time.Now()
	span.SetStartTimestamp(pcommon.NewTimestampFromTime(now.Add(-time.Second)))
	span.SetEndTimestamp(pcommon.NewTimestampFromTime(now))
	span.Attributes().PutStr("nemo.gym.rollout.id", fmt.Sprintf("fwd-later-%d", i))
	body, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	require.NoError(t, err)
	resp, err := http.Post("http://127.0.0.1:4318/v1/traces", "application/x-protobuf", bytes.NewReader(body))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "the collector takes the span whatever the backend does")
}

func laterSpanID(i int) pcommon.SpanID {
	return pcommon.SpanID{0xf0, 0x0d, byte(i >> 8), byte(i), 1, 2, 3, 4}
}

// gymProcessorNeverRefused: the forwarding exporter's refusals never reach
// the gym processor (it would hold and redeliver the batch to every
// exporter), and it never refuses a batch upstream.
func gymProcessorNeverRefused(t *testing.T) {
	t.Helper()
	for _, m := range []string{"otelcol_processor_gym_downstream_failed_spans", "otelcol_processor_gym_redelivery_spans", "otelcol_processor_gym_batches_refused"} {
		v, ok := scrapeMetric(t, embeddedPorts.Metrics, m)
		require.True(t, ok, "the collector's metrics answer")
		require.Zero(t, v, "%s: forwarding never reaches the gym processor", m)
	}
}

// serveUnavailable answers every request on port with 503 and counts them.
func serveUnavailable(t *testing.T, port int) *atomic.Int64 {
	t.Helper()
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	require.NoError(t, err)
	var n atomic.Int64
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n.Add(1)
		http.Error(w, "backend unavailable (test)", http.StatusServiceUnavailable)
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return &n
}

// forwardDropped is the gymforward connector's count of spans not forwarded.
func forwardDropped(t *testing.T) float64 {
	t.Helper()
	v, ok := scrapeMetric(t, embeddedPorts.Metrics, "otelcol_connector_gymforward_spans_dropped")
	require.True(t, ok, "the collector's metrics answer")
	return v
}

// checkForwardLines: the connector's lines say what it did not forward.
// Still failing at shutdown, the last line gives the whole failure's count:
// the sum of every line's count, and at least what the metric counted before
// the shutdown (whose last spans may come on top). Once the backend took
// again, the info line gives it: at least what the lines before it said.
func checkForwardLines(t *testing.T, log, url string, dropped float64, stillFailing bool) {
	t.Helper()
	failing := forwardLines(log, url, "fails", "still fails", "failed until shutdown")
	var sum int64
	for _, l := range failing {
		sum += logField(t, l, "not_forwarded")
	}
	if stillFailing {
		last := failing[len(failing)-1]
		t.Logf("collector: %s", last)
		require.Contains(t, last, "failed until shutdown")
		total := logField(t, last, "not_forwarded_total")
		assert.Equal(t, sum, total, "the lines of the failure add up to its count")
		assert.GreaterOrEqual(t, float64(total), dropped, "the count at shutdown is at least the metric's before it")
		return
	}
	again := forwardLines(log, url, "works again")
	require.Len(t, again, 1)
	assert.NotContains(t, log, "failed until shutdown", "forwarding works at shutdown")
	assert.GreaterOrEqual(t, logField(t, again[0], "not_forwarded"), sum, "the failure's count, at least its lines'")
	assert.LessOrEqual(t, float64(logField(t, again[0], "not_forwarded")), dropped, "the metric counts it")
}

// forwardLines are the collector's lines that say forwarding spans to url
// one of whats (fails, still fails, failed until shutdown, works again).
func forwardLines(log, url string, whats ...string) []string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		for _, what := range whats {
			if strings.Contains(l, "forwarding spans to "+url+" "+what) {
				out = append(out, l)
				break
			}
		}
	}
	return out
}

// logField is the integer field name of a collector log line.
func logField(t *testing.T, line, name string) int64 {
	t.Helper()
	m := regexp.MustCompile(`"` + regexp.QuoteMeta(name) + `": (\d+)`).FindStringSubmatch(line)
	require.NotNil(t, m, "a %s field in %q", name, line)
	n, err := strconv.ParseInt(m[1], 10, 64)
	require.NoError(t, err)
	return n
}
