// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The golden replay of real NeMo Gym traffic (issue #17), in `make test`, no
// Python: ../testdata/real_gym_<mode>/requests.jsonl.gz holds every OTLP
// request one real run of TestRealGym sent, as it reached the collector
// (before the gym processor: the recording pipeline of
// testdata/realgym_collector.yaml), one ExportTraceServiceRequest in OTLP/JSON
// a line, in arrival order; run.json what the run was (its run id, the
// rollouts Gym ran, the model exchanges Gym captured for each). The replay
// posts the requests in order to the built collector over OTLP/HTTP, stops
// it, runs the checks of the live test on the output (checkRealGym) and
// compares the whole output with collector_expected.json (not expected.json:
// the processor's TestGolden takes every testdata dir that has one): every
// span of spans.jsonl (its ids, trace, parent, rollout, links and the
// attributes the processor adds), the lines of every rollout file,
// rollouts.jsonl and service_map.json.
//
// real_gym_generic_otel_context_leak is a run of TestRealGymGenericSlow in
// which Gym's agent server parented one rollout's POST /run under the
// previous rollout's (trace context reused across requests in one process):
// that rollout's root is cut with a parent link, and its callers' spans stay
// in no rollout, since nothing of the rollout is below them.
//
// Re-record with `OTELCOL_GYM_REALGYM_RECORD=$PWD/testdata make test-realgym`,
// then `go test ./e2e -run TestRealGymReplay -update-realgym` and read the
// diff of collector_expected.json.

var updateRealGym = flag.Bool("update-realgym", false, "rewrite testdata/real_gym_*/collector_expected.json from the collector's output (inspect the diff by eye)")

const realGymGoldenDir = "../testdata"

// realGymRecording is run.json.
type realGymRecording struct {
	Mode      string         `json:"mode"`
	RunID     string         `json:"run_id"`
	Rollouts  []string       `json:"rollouts"`
	Exchanges map[string]int `json:"model_exchanges"`
	Requests  int            `json:"requests"`
	Spans     int            `json:"spans"`
	Versions  []string       `json:"recorded_with"`
	// LeakedContext names each rollout whose agent took another rollout's
	// trace context in this run (rollout → the other rollout): the checks
	// find them by structure (leakedContextRollouts), and this says they must.
	LeakedContext map[string]string `json:"leaked_context,omitempty"`
}

// recordRealGym writes a live run's requests and run.json into dst.
func recordRealGym(t *testing.T, m realGymMode, run *realGymRun, dst string) {
	require.NoError(t, os.MkdirAll(dst, 0o750))
	raw, err := os.ReadFile(filepath.Join(run.dir, "otlp-requests.jsonl"))
	require.NoError(t, err)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz) // no name, no mtime: the same requests give the same bytes
	_, err = zw.Write(raw)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	require.NoError(t, os.WriteFile(filepath.Join(dst, "requests.jsonl.gz"), gz.Bytes(), 0o600))
	rec := realGymRecording{
		Mode: m.name, RunID: m.runID, Rollouts: run.rollouts, Exchanges: run.exchanges,
		Requests: bytes.Count(raw, []byte("\n")), Spans: int(run.accepted),
		Versions: []string{"nemo-gym 0.7.0", "opentelemetry-sdk 1.45.1", "opentelemetry-instrumentation-fastapi 0.66b1", "opentelemetry-instrumentation-aiohttp-client 0.66b1", "fastapi 0.165.0"},
	}
	b, err := json.MarshalIndent(rec, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dst, "run.json"), append(b, '\n'), 0o600))
	t.Logf("recorded %d requests (%d spans) into %s", rec.Requests, rec.Spans, dst)
}

func realGymRecordings(t *testing.T) []string {
	dirs, err := filepath.Glob(filepath.Join(realGymGoldenDir, "real_gym_*", "run.json"))
	require.NoError(t, err)
	require.NotEmpty(t, dirs, "recorded real-Gym runs under %s", realGymGoldenDir)
	for i := range dirs {
		dirs[i] = filepath.Dir(dirs[i])
	}
	return dirs
}

func TestRealGymReplay(t *testing.T) {
	for _, dir := range realGymRecordings(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			t.Parallel()
			rec, m, requests := readRealGymRecording(t, dir)
			run := replayRealGym(t, rec, requests)
			checkRealGym(t, m, run)
			leaked := leakedContextRollouts(run.combined)
			if len(rec.LeakedContext) == 0 {
				assert.Empty(t, leaked, "rollouts whose agent took another rollout's trace context")
			} else {
				assert.Equal(t, rec.LeakedContext, leaked, "rollouts whose agent took another rollout's trace context")
			}

			got := realGymGolden(t, run)
			path := filepath.Join(dir, "collector_expected.json")
			if *updateRealGym {
				require.NoError(t, os.WriteFile(path, got, 0o600))
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, string(want), string(got), "the whole output of the replay (-update-realgym rewrites it)")
		})
	}
}

func readRealGymRecording(t *testing.T, dir string) (realGymRecording, realGymMode, [][]byte) {
	var rec realGymRecording
	b, err := os.ReadFile(filepath.Join(dir, "run.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &rec))
	var mode realGymMode
	for _, m := range realGymModes() {
		if m.name == rec.Mode {
			mode = m
		}
	}
	require.NotEmpty(t, mode.name, "mode %q of %s", rec.Mode, dir)
	require.Equal(t, mode.runID, rec.RunID)

	f, err := os.Open(filepath.Join(dir, "requests.jsonl.gz"))
	require.NoError(t, err)
	defer f.Close()
	zr, err := gzip.NewReader(f)
	require.NoError(t, err)
	raw, err := io.ReadAll(zr)
	require.NoError(t, err)
	var requests [][]byte
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		requests = append(requests, append([]byte(nil), sc.Bytes()...))
	}
	require.NoError(t, sc.Err())
	require.Len(t, requests, rec.Requests)
	return rec, mode, requests
}

// replayRealGym posts the requests in order to a fresh collector and stops it.
func replayRealGym(t *testing.T, rec realGymRecording, requests [][]byte) *realGymRun {
	dir := t.TempDir()
	run := &realGymRun{dir: dir, captureDir: filepath.Join(dir, "captures"), rollouts: rec.Rollouts, exchanges: rec.Exchanges}
	col, p := startRealGymCollector(t, run, nil)
	postOTLPJSON(t, p.HTTP, requests)
	run.accepted, _ = scrapeMetric(t, p.Metrics, "otelcol_receiver_accepted_spans")
	require.EqualValues(t, rec.Spans, run.accepted, "spans the collector accepted = spans the real run sent")
	require.NoError(t, col.stop())
	run.collectorLog = col.stderr.String()
	run.combined = readJSONLines[outSpan](t, filepath.Join(run.captureDir, "spans.jsonl"))
	return run
}

// startRealGymCollector starts the collector of
// testdata/realgym_collector.yaml on free ports for run, with edit (when
// given) applied to the config's text.
func startRealGymCollector(t *testing.T, run *realGymRun, edit func(string) string) (*collector, ports) {
	p := newPorts(t)
	tmpl, err := os.ReadFile(filepath.Join("testdata", "realgym_collector.yaml"))
	require.NoError(t, err)
	cfg := strings.ReplaceAll(p.expand(string(tmpl), run.captureDir), "${RECORD_FILE}", filepath.Join(run.dir, "otlp-requests.jsonl"))
	if edit != nil {
		cfg = edit(cfg)
	}
	args, env := phoenixForwarding(t, run, cfg) // realgym_phoenix_test.go
	return startCollector(t, p, env, append([]string{"--config", writeFile(t, run.dir, "collector.yaml", cfg)}, args...)...), p
}

func postOTLPJSON(t *testing.T, port int, requests [][]byte) {
	client := &http.Client{Timeout: 30 * time.Second}
	url := fmt.Sprintf("http://127.0.0.1:%d/v1/traces", port)
	for i, body := range requests {
		resp, err := client.Post(url, "application/json", bytes.NewReader(body))
		require.NoError(t, err, "request %d", i)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, "request %d", i)
	}
}

// goldenSpan is what the golden keeps of a console line: the ids and what
// the gym processor decides (trace, parent, rollout, links, the attributes
// it adds); the rest of the line is the span as it came, which the
// console-format tests cover.
type goldenSpan struct {
	SpanID  string         `json:"span_id"`
	Service string         `json:"service"`
	Kind    string         `json:"kind"`
	Name    string         `json:"name"`
	TraceID string         `json:"trace_id"`
	Parent  string         `json:"parent_span_id"`
	Rollout string         `json:"rollout,omitempty"`
	Added   map[string]any `json:"attrs,omitempty"`
	Links   []string       `json:"links,omitempty"`
}

// realGymGolden renders a run's whole output as collector_expected.json: one span a
// line, sorted by span id, then the rollout files' line counts,
// rollouts.jsonl sorted and service_map.json.
func realGymGolden(t *testing.T, run *realGymRun) []byte {
	spans := make([]goldenSpan, 0, len(run.combined))
	for _, s := range run.combined {
		g := goldenSpan{SpanID: s.SpanID, Service: s.service(), Kind: s.Kind, Name: s.Name, TraceID: s.TraceID,
			Parent: s.ParentSpanID, Rollout: s.str("nemo.gym.rollout.id")}
		for k, v := range s.Attributes {
			if k == "peer.service" || (strings.HasPrefix(k, "nemo.gym.") && k != "nemo.gym.rollout.id" && k != "nemo.gym.server.name") {
				if g.Added == nil {
					g.Added = map[string]any{}
				}
				g.Added[k] = v
			}
		}
		for _, l := range s.Links {
			tid, sid := l.ids()
			g.Links = append(g.Links, tid+"/"+sid+" "+l.linkType())
		}
		spans = append(spans, g)
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].SpanID < spans[j].SpanID })

	var b bytes.Buffer
	b.WriteString("{\n\"spans\": [\n")
	for i, s := range spans {
		line, err := json.Marshal(s)
		require.NoError(t, err)
		b.Write(line)
		if i < len(spans)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("],\n\"rollout_files\": ")
	files := map[string]int{}
	matches, err := filepath.Glob(filepath.Join(run.captureDir, "*.spans.jsonl"))
	require.NoError(t, err)
	for _, f := range matches {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		files[filepath.Base(f)] = bytes.Count(raw, []byte("\n"))
	}
	writeGoldenJSON(t, &b, files)
	b.WriteString(",\n\"rollouts.jsonl\": [\n")
	raw, err := os.ReadFile(filepath.Join(run.captureDir, "rollouts.jsonl"))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	sort.Strings(lines)
	b.WriteString(strings.Join(lines, ",\n"))
	b.WriteString("\n],\n\"service_map.json\": ")
	raw, err = os.ReadFile(filepath.Join(run.captureDir, "service_map.json"))
	require.NoError(t, err)
	var sm map[string]any
	require.NoError(t, json.Unmarshal(raw, &sm))
	writeGoldenJSON(t, &b, sm)
	b.WriteString("\n}\n")
	return b.Bytes()
}

func writeGoldenJSON(t *testing.T, b *bytes.Buffer, v any) {
	out, err := json.MarshalIndent(v, "", " ")
	require.NoError(t, err)
	b.Write(out)
}
