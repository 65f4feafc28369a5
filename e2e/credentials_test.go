// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/otelcol-gym/otelcol-gym/config"
)

// The credentials suite (design §6, SECURITY.md): a secret given to the
// collector as a header, or sent to it as an attribute that carries
// credentials, reaches the backend only as the header it was meant to be:
// in no file the collector writes, no body it forwards, no line it logs.

// newSecret is a value no other test or file holds.
func newSecret(t *testing.T, what string) string {
	b := make([]byte, 12)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return what + "-" + hex.EncodeToString(b)
}

// otlpBackend is a local OTLP/HTTP endpoint (127.0.0.1) standing in for a
// backend: it answers every export with 200 and records what it got.
type otlpBackend struct {
	*httptest.Server
	mu       sync.Mutex
	requests []backendRequest
}

type backendRequest struct {
	path   string
	header http.Header
	body   []byte // decompressed
}

func newOTLPBackend(t *testing.T) *otlpBackend {
	b := &otlpBackend{}
	b.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		raw, err := io.ReadAll(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		b.mu.Lock()
		b.requests = append(b.requests, backendRequest{path: r.URL.Path, header: r.Header.Clone(), body: raw})
		b.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(b.Close)
	return b
}

func (b *otlpBackend) all() []backendRequest {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]backendRequest(nil), b.requests...)
}

// got reports whether a request to path holds s.
func (b *otlpBackend) got(path, s string) func() bool {
	return func() bool {
		for _, r := range b.all() {
			if r.path == path && bytes.Contains(r.body, []byte(s)) {
				return true
			}
		}
		return false
	}
}

// spanIDs counts the span ids of the trace exports received.
func (b *otlpBackend) spanIDs(t *testing.T) map[string]int {
	ids := map[string]int{}
	for _, r := range b.all() {
		if r.path != "/v1/traces" {
			continue
		}
		req := ptraceotlp.NewExportRequest()
		require.NoError(t, req.UnmarshalProto(r.body))
		forEachSpan(req.Traces(), func(s ptrace.Span) {
			if v, _ := s.Attributes().Get("nemo.gym.synthetic"); !v.Bool() {
				ids[s.SpanID().String()]++
			}
		})
	}
	return ids
}

func forEachSpan(td ptrace.Traces, f func(ptrace.Span)) {
	for _, rs := range td.ResourceSpans().All() {
		for _, ss := range rs.ScopeSpans().All() {
			for _, s := range ss.Spans().All() {
				f(s)
			}
		}
	}
}

// filesHolding lists the files under dirs that hold s, and how many files
// there are.
func filesHolding(t *testing.T, s string, dirs ...string) (hits []string, files int) {
	for _, dir := range dirs {
		require.NoError(t, filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
			if err != nil || !fi.Mode().IsRegular() {
				return err
			}
			files++
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if bytes.Contains(b, []byte(s)) {
				hits = append(hits, p)
			}
			return nil
		}))
	}
	return hits, files
}

// linesHolding counts the lines of out that hold s.
func linesHolding(out, s string) int {
	n := 0
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, s) {
			n++
		}
	}
	return n
}

// postOTLP posts an OTLP/JSON request to the collector's HTTP receiver.
func postOTLP(t *testing.T, port int, path string, body []byte, err error) {
	t.Helper()
	require.NoError(t, err)
	resp, err := http.Post(fmt.Sprintf("http://127.0.0.1:%d%s", port, path), "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, path)
}

// postResourceSecrets sends one metric and one log whose resources carry
// secret under keys of the default rule.
func postResourceSecrets(t *testing.T, port int, secret, marker string) {
	t.Helper()
	now := pcommon.NewTimestampFromTime(time.Now())
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr("service.name", "nemo-gym/policy_model")
	rm.Resource().Attributes().PutStr("Authorization", "Bearer "+secret)
	rm.Resource().Attributes().PutStr("openai.api_key", secret)
	m := rm.ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	m.SetName(marker)
	dp := m.SetEmptyGauge().DataPoints().AppendEmpty()
	dp.SetTimestamp(now)
	dp.SetIntValue(7)
	body, err := (&pmetric.JSONMarshaler{}).MarshalMetrics(md)
	postOTLP(t, port, "/v1/metrics", body, err)

	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("service.name", "nemo-gym/simple_agent")
	rl.Resource().Attributes().PutStr("api_key", secret)
	lr := rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	lr.Body().SetStr(marker)
	lr.SetTimestamp(now)
	body, err = (&plog.JSONMarshaler{}).MarshalLogs(ld)
	postOTLP(t, port, "/v1/logs", body, err)
}

// TestCredentialsEvalSubmit (design §6, issue #54): config/eval-submit.yaml
// with Gym's variables and a secret GYM_OTEL_TOKEN, Gym-shaped traffic from
// gymsim whose processes also carry the token in resource attributes, and a
// local endpoint for the managed backend: the token is the Authorization
// header of every request and nowhere else (no file under the job dir or
// the capture dir, no body, no line of the collector's log, at debug
// level); every span gymsim sent is written once to spans.jsonl and
// file/traces and forwarded once.
func TestCredentialsEvalSubmit(t *testing.T) {
	token := newSecret(t, "gym-ingest-token")
	managed := newOTLPBackend(t)
	p := newPorts(t)
	env := append(shippedEnv(t, managed.URL), "GYM_OTEL_TOKEN="+token) // the last one wins
	var jobDir, captureDir string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GYM_JOB_DIR="); ok {
			jobDir = v
		}
		if v, ok := strings.CutPrefix(kv, "NEMO_GYM_CAPTURE_DIR="); ok {
			captureDir = v
		}
	}
	col := startCollector(t, p, env, "--config", onFreePorts(t, "eval-submit.yaml", p),
		"--set=service::telemetry::logs::level=debug")

	truthPath := filepath.Join(t.TempDir(), "truth.jsonl")
	out, err := runCmd(t, 2*time.Minute,
		[]string{"OTEL_RESOURCE_ATTRIBUTES=authorization=Bearer%20" + token + ",gym.api_key=" + token},
		gymsimBinary(t), "--rollouts=20", "--concurrency=4", "--run-id=e2ecreds01", "--blocking",
		"--batch-delay=200ms", "--preset=all", "--capture-dir="+captureDir, "--truth="+truthPath,
		fmt.Sprintf("--endpoint=127.0.0.1:%d", p.GRPC))
	require.NoError(t, err, "gymsim:\n%s", out)
	postResourceSecrets(t, p.HTTP, token, "gym_e2e_credentials_marker")
	require.NoError(t, col.stop(), "collector exit")
	log := col.stderr.String()

	truth := readJSONLines[truthSpan](t, truthPath)
	require.NotEmpty(t, truth)

	// The token: the header of every request, and nowhere else.
	hits, files := filesHolding(t, token, jobDir, captureDir)
	assert.Empty(t, hits, "files under the job dir and the capture dir that hold the token")
	assert.Positive(t, files)
	reqs := managed.all()
	require.NotEmpty(t, reqs)
	paths := map[string]int{}
	for _, r := range reqs {
		paths[r.path]++
		assert.Equal(t, "Bearer "+token, r.header.Get("Authorization"), "the header of a request to %s", r.path)
		assert.False(t, bytes.Contains(r.body, []byte(token)), "a body sent to %s holds the token", r.path)
	}
	assert.Positive(t, paths["/v1/traces"])
	assert.Positive(t, paths["/v1/metrics"])
	assert.Positive(t, paths["/v1/logs"])
	assert.Equal(t, 0, linesHolding(log, token), "lines of the collector's log that hold the token")
	assert.Contains(t, log, `"key": "authorization"`, "the key removed is logged")

	// Spans written = spans accepted.
	byID := map[string]int{}
	for _, s := range readJSONLines[outSpan](t, filepath.Join(captureDir, "spans.jsonl")) {
		if !s.synthetic() {
			byID[s.SpanID]++
		}
	}
	fileTraces := map[string]int{}
	b, err := os.ReadFile(filepath.Join(jobDir, "otel", "traces.jsonl"))
	require.NoError(t, err)
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(line)
		require.NoError(t, err)
		forEachSpan(td, func(s ptrace.Span) {
			if v, _ := s.Attributes().Get("nemo.gym.synthetic"); !v.Bool() {
				fileTraces[s.SpanID().String()]++
			}
		})
	}
	forwarded := managed.spanIDs(t)
	for name, got := range map[string]map[string]int{"spans.jsonl": byID, "otel/traces.jsonl": fileTraces, "the managed endpoint": forwarded} {
		assert.Len(t, got, len(truth), "spans in %s", name)
		for _, s := range truth {
			assert.Equal(t, 1, got[s.SpanID], "span %s in %s", s.SpanID, name)
		}
	}
	t.Logf("gymsim: %d spans; spans.jsonl %d, otel/traces.jsonl %d, managed %d; %d requests %v; %d files; log %d lines",
		len(truth), len(byID), len(fileTraces), len(forwarded), len(reqs), paths, files, strings.Count(log, "\n"))

	// The metric and the log with the token in their resources arrived without it.
	for _, f := range []string{"metrics.jsonl", "logs.jsonl"} {
		b, err := os.ReadFile(filepath.Join(jobDir, "otel", f))
		require.NoError(t, err)
		assert.Contains(t, string(b), "gym_e2e_credentials_marker", f)
	}
	assert.True(t, managed.got("/v1/metrics", "gym_e2e_credentials_marker")())
	assert.True(t, managed.got("/v1/logs", "gym_e2e_credentials_marker")())
}

// TestCredentialsStandaloneForwarding (design §6, issue #54): the embedded
// default forwarding with OTELCOL_GYM_EXPORTER_OTLP_HEADERS=authorization=<secret>,
// and a span, a metric and a log that carry another secret as api_key (and
// kin): the header secret is the header of every forwarded request and
// nowhere else; the attribute secret reaches no file, no body, no log line;
// neither is shown by `otelcol-gym validate` (at debug level) or by the
// refusal of a malformed header.
func TestCredentialsStandaloneForwarding(t *testing.T) {
	header := newSecret(t, "fwd-header")
	attr := newSecret(t, "span-api-key")
	backend := newOTLPBackend(t)
	dir := t.TempDir()
	captureDir := filepath.Join(dir, "captures")
	env := []string{
		"NEMO_GYM_CAPTURE_DIR=" + captureDir,
		config.ForwardEndpointEnv + "=" + backend.URL,
		config.ForwardHeadersEnv + "=authorization=" + header,
	}
	debug := "--set=service::telemetry::logs::level=debug"
	// validate alone checks the embedded default with its forwarding.
	out, err := runCmd(t, time.Minute, env, collectorBinary(t), "validate", debug)
	require.NoError(t, err, out)
	assert.NotContains(t, out, header, "validate shows the header")
	out, err = runCmd(t, time.Minute, append(env, config.ForwardHeadersEnv+"=Bearer "+header), collectorBinary(t), "validate", debug)
	require.Error(t, err, "a malformed header is refused")
	assert.Contains(t, out, config.ForwardHeadersEnv)
	assert.NotContains(t, out, header, "the refusal shows the header")

	p := newPorts(t)
	col := startCollector(t, p, env, append(embeddedDefaultOn(p), debug)...)
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "nemo-gym/simple_agent")
	rs.Resource().Attributes().PutStr("x-api-key", attr)
	span := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	span.SetName("gym.rollout")
	span.SetTraceID(pcommon.TraceID{9, 8, 7})
	span.SetSpanID(pcommon.SpanID{1, 2, 3, 4, 5, 6, 7, 8})
	now := time.Now()
	span.SetStartTimestamp(pcommon.NewTimestampFromTime(now.Add(-time.Second)))
	span.SetEndTimestamp(pcommon.NewTimestampFromTime(now))
	span.Attributes().PutStr("nemo.gym.rollout.id", "cred-0")
	span.Attributes().PutStr("api_key", attr)
	span.Attributes().PutInt("gen_ai.usage.input_tokens", 42)
	ev := span.Events().AppendEmpty()
	ev.SetName("login")
	ev.Attributes().PutStr("db.password", attr)
	link := span.Links().AppendEmpty()
	link.SetTraceID(pcommon.TraceID{1})
	link.SetSpanID(pcommon.SpanID{1})
	link.Attributes().PutStr("Proxy-Authorization", attr)
	body, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
	postOTLP(t, p.HTTP, "/v1/traces", body, err)
	postResourceSecrets(t, p.HTTP, attr, "gym_e2e_standalone_marker")

	pollUntil(t, 30*time.Second, "the span at the backend", func() bool { return backend.spanIDs(t)["0102030405060708"] > 0 })
	pollUntil(t, 30*time.Second, "the metric at the backend", backend.got("/v1/metrics", "gym_e2e_standalone_marker"))
	pollUntil(t, 30*time.Second, "the log at the backend", backend.got("/v1/logs", "gym_e2e_standalone_marker"))
	pollUntil(t, 30*time.Second, "the span in its rollout file", func() bool {
		_, err := os.Stat(filepath.Join(captureDir, "cred-0.spans.jsonl"))
		return err == nil
	})
	require.NoError(t, col.stop())
	log := col.stderr.String()

	for _, secret := range []string{header, attr} {
		hits, files := filesHolding(t, secret, captureDir)
		assert.Empty(t, hits, "files under the capture dir that hold %s", secret)
		assert.Positive(t, files)
		assert.Equal(t, 0, linesHolding(log, secret), "lines of the collector's log that hold %s", secret)
	}
	reqs := backend.all()
	for _, r := range reqs {
		assert.Equal(t, header, r.header.Get("Authorization"), "the header of a request to %s", r.path)
		for _, secret := range []string{header, attr} {
			assert.False(t, bytes.Contains(r.body, []byte(secret)), "a body sent to %s holds %s", r.path, secret)
		}
	}
	written := readJSONLines[outSpan](t, filepath.Join(captureDir, "spans.jsonl"))
	if assert.Len(t, written, 1, "the span written once") {
		assert.Equal(t, "0102030405060708", written[0].SpanID)
		assert.Contains(t, written[0].Attributes, "gen_ai.usage.input_tokens", "the token count stays")
	}
	for _, k := range []string{"x-api-key", "api_key", "db.password", "Proxy-Authorization", "Authorization", "openai.api_key"} {
		assert.Contains(t, log, fmt.Sprintf("%q", k), "the removal of %s is logged", k)
	}
	t.Logf("%d requests at the backend; log %d lines", len(reqs), strings.Count(log, "\n"))
}
