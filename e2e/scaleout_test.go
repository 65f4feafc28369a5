// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

// Issue #28: scale-out on the collector's own engine (design §6, §9). The
// shipped config/agent.yaml load-balances three concurrent gymsim runs by
// nemo.run.id over three shipped config/gateway.yaml gateways (each with
// the gym journal in its own file_storage, all on one capture dir); the same
// spans go, through a tee in the test, to one reference gateway on a
// capture dir of its own. One pool gateway is killed with SIGKILL again and
// again mid-run and started again. At the end each run's output in the
// shared dir is the reference's: the same spans with the same T', parents
// and links, in the same per-rollout files, the same rollouts.jsonl lines
// (but error_count, below), the same service-map calls; and every span
// gymsim created is once in spans.jsonl. (The reference is a single
// gateway, which TestGymsimEndToEnd and the crash tests check against
// gymsim's truth span by span.)

// The internal metrics the test reads, in one place (their names are the
// collector's and the load balancer's own).
const (
	metricAccepted       = "otelcol_receiver_accepted_spans"
	metricSent           = "otelcol_exporter_sent_spans"
	metricQueueSize      = "otelcol_exporter_queue_size"
	metricBackendOutcome = "otelcol_loadbalancer_backend_outcome"
	metricGymDuplicates  = "otelcol_exporter_gymspans_duplicate_spans"
	metricLinksMissed    = "otelcol_processor_gym_attempt_links_missed"
)

// rejectedItems finds the span count of a failed export in the agent's log.
var rejectedItems = regexp.MustCompile(`"rejected_items": (\d+)`)

// scaleRuns are the gymsim runs, one each at a time.
var scaleRuns = []string{"scalerun-a", "scalerun-b", "scalerun-c"}

const (
	scaleKills      = 3
	scalePathPrefix = "{run_id}."
)

// scaleGateway is one config/gateway.yaml subprocess on its own ports and storage.
type scaleGateway struct {
	t   *testing.T
	p   ports
	env []string
	cfg string
	col *collector
}

func startScaleGateway(t *testing.T, env []string, captureDir, storageDir string) *scaleGateway {
	t.Helper()
	p := newPorts(t)
	g := &scaleGateway{t: t, p: p, cfg: filepath.Join(repoRoot(t), "config", "gateway.yaml"), env: append(slices.Clone(env),
		"NEMO_GYM_CAPTURE_DIR="+captureDir,
		"OTELCOL_GYM_STORAGE_DIR="+storageDir,
		"OTELCOL_GYM_PATH_PREFIX="+scalePathPrefix,
		fmt.Sprintf("OTELCOL_GYM_GRPC_PORT=%d", p.GRPC),
		fmt.Sprintf("OTELCOL_GYM_HTTP_PORT=%d", p.HTTP),
		fmt.Sprintf("OTELCOL_GYM_HEALTH_PORT=%d", p.Health),
		fmt.Sprintf("OTELCOL_GYM_METRICS_PORT=%d", p.Metrics),
	)}
	g.start()
	return g
}

func (g *scaleGateway) start() { g.col = startCollector(g.t, g.p, g.env, "--config", g.cfg) }

func (g *scaleGateway) metric(name string, labels ...string) float64 {
	v, _ := scrapeMetric(g.t, g.p.Metrics, name, labels...)
	return v
}

// tee is an OTLP gRPC traces server that passes each request to two
// collectors and answers only once both took it, each retried until it
// does: gymsim's spans reach the agent and the reference gateway once each.
type tee struct {
	ptraceotlp.UnimplementedGRPCServer
	to   [2]ptraceotlp.GRPCClient
	addr string
}

func startTee(t *testing.T, agent, reference *grpc.ClientConn) *tee {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &tee{to: [2]ptraceotlp.GRPCClient{ptraceotlp.NewGRPCClient(agent), ptraceotlp.NewGRPCClient(reference)}, addr: l.Addr().String()}
	srv := grpc.NewServer()
	ptraceotlp.RegisterGRPCServer(srv, s)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	return s
}

func (s *tee) Export(ctx context.Context, req ptraceotlp.ExportRequest) (ptraceotlp.ExportResponse, error) {
	var wg sync.WaitGroup
	errs := make([]error, len(s.to))
	for i, c := range s.to {
		wg.Go(func() {
			for attempt := 0; ; attempt++ {
				_, errs[i] = c.Export(ctx, req)
				if errs[i] == nil || ctx.Err() != nil || attempt == 100 {
					return
				}
				time.Sleep(200 * time.Millisecond) // backoff before a retry
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return ptraceotlp.NewExportResponse(), err
		}
	}
	return ptraceotlp.NewExportResponse(), nil
}

// bearer is the gateways' bearer token as gRPC credentials.
type bearer string

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(b)}, nil
}
func (bearer) RequireTransportSecurity() bool { return true }

// scaleOutput is what one run left in a capture dir, keyed for comparison.
type scaleOutput struct {
	spans     map[string]string  // span id → trace id, from spans.jsonl
	files     map[string]string  // span id → the rollout file it is in, with its trace id
	rollouts  []string           // the run's rollouts.jsonl lines without error_count and time_split_ms, sorted
	errors    map[string]float64 // rollout id → error_count of its rollouts.jsonl line
	splits    map[string]string  // rollout id → time_split_ms of its rollouts.jsonl line, when it has one
	cutLinks  map[string]string  // span id of a cut root → its link's type, job or parent
	prevLinks map[string]string  // span id of an attempt's root → its previous_attempt link
	calls     map[string]uint64  // service-map edge → calls (and errors)
	lines     int                // the run's lines in spans.jsonl
}

// scaleSpan is the part of a gymspans line the comparison reads (decoding
// no more keeps the test fast under -race).
type scaleSpan struct {
	TraceID      string    `json:"trace_id"`
	SpanID       string    `json:"span_id"`
	ParentSpanID string    `json:"parent_span_id"`
	Links        []outLink `json:"links"`
	Resource     struct {
		Attributes struct {
			Run string `json:"nemo.run.id"`
		} `json:"attributes"`
	} `json:"resource"`
}

// readScaleOutput reads run's part of a capture dir whose combined file
// (and its backups) holds combined.
func readScaleOutput(t *testing.T, dir, run string, combined []scaleSpan) scaleOutput {
	t.Helper()
	out := scaleOutput{spans: map[string]string{}, files: map[string]string{}, calls: map[string]uint64{}, errors: map[string]float64{}, splits: map[string]string{}, cutLinks: map[string]string{}, prevLinks: map[string]string{}}
	for _, s := range combined {
		if s.Resource.Attributes.Run == run {
			key := s.TraceID + " parent " + s.ParentSpanID
			for _, l := range s.Links {
				tid, sid := l.ids()
				typ := l.linkType()
				if typ == "previous_attempt" {
					out.prevLinks[s.SpanID] = tid + "/" + sid
					continue
				}
				if typ == "job" || typ == "parent" {
					// A cut root's link says job when its parent had
					// arrived and was the job span at the cut, else parent
					// (design §4.3): the same cut, told apart by timing.
					out.cutLinks[s.SpanID] = typ
					typ = "cut"
				}
				key += " link " + typ + " " + tid + "/" + sid
			}
			out.spans[s.SpanID] = key
			out.lines++
		}
	}
	files, err := filepath.Glob(filepath.Join(dir, run+".*.spans.jsonl"))
	require.NoError(t, err)
	for _, f := range files {
		for _, s := range readJSONLines[scaleSpan](t, f) {
			_, twice := out.files[s.SpanID]
			assert.False(t, twice, "span %s twice in the rollout files", s.SpanID)
			out.files[s.SpanID] = filepath.Base(f) + " " + s.TraceID
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "rollouts.jsonl"))
	require.NoError(t, err)
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var l map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &l), line)
		if l["run_id"] != run {
			continue
		}
		id, _ := l["rollout_id"].(string)
		_, twice := out.errors[id]
		assert.False(t, twice, "rollout %s twice in rollouts.jsonl", id)
		out.errors[id], _ = l["error_count"].(float64)
		delete(l, "error_count")
		if split, ok := l["time_split_ms"]; ok {
			b, err := json.Marshal(split)
			require.NoError(t, err)
			out.splits[id] = string(b)
			delete(l, "time_split_ms")
		}
		rest, err := json.Marshal(l)
		require.NoError(t, err)
		out.rollouts = append(out.rollouts, string(rest))
	}
	slices.Sort(out.rollouts)
	var doc struct {
		Edges []struct {
			Run    string `json:"run"`
			Client string `json:"client"`
			Server string `json:"server"`
			Calls  uint64 `json:"calls"`
			Errors uint64 `json:"errors"`
		} `json:"edges"`
	}
	b, err = os.ReadFile(filepath.Join(dir, "service_map.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &doc))
	for _, e := range doc.Edges {
		if e.Run == run {
			out.calls[e.Client+" -> "+e.Server+" calls"] += e.Calls
			out.calls[e.Client+" -> "+e.Server+" errors"] += e.Errors
		}
	}
	return out
}

func TestScaleOutAgentsToGatewayPool(t *testing.T) {
	started := time.Now()
	backend := startFakeBackend(t)
	env := append(shippedEnv(t, "http://127.0.0.1:9"), "OTELCOL_GYM_BACKEND="+backend.addr)
	dir := t.TempDir()
	shared, refDir := filepath.Join(dir, "shared"), filepath.Join(dir, "reference")

	var pool []*scaleGateway
	var hostnames []string
	for i := range 3 {
		g := startScaleGateway(t, env, shared, filepath.Join(dir, fmt.Sprintf("gateway%d-state", i)))
		pool = append(pool, g)
		hostnames = append(hostnames, fmt.Sprintf("127.0.0.1:%d", g.p.GRPC))
	}
	ref := startScaleGateway(t, env, refDir, filepath.Join(dir, "reference-state"))
	agentPorts := newPorts(t)
	agent := startCollector(t, agentPorts, append(slices.Clone(env),
		"OTELCOL_GYM_GATEWAYS=["+strings.Join(hostnames, ", ")+"]",
		"OTELCOL_GYM_QUEUE_DIR="+filepath.Join(dir, "agent-queue")),
		"--config", onFreePorts(t, "agent.yaml", agentPorts))
	agentMetric := func(name string, labels ...string) float64 {
		v, _ := scrapeMetric(t, agentPorts.Metrics, name, labels...)
		return v
	}

	toAgent, err := grpc.NewClient(fmt.Sprintf("127.0.0.1:%d", agentPorts.GRPC), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = toAgent.Close() })
	toRef, err := grpc.NewClient(fmt.Sprintf("127.0.0.1:%d", ref.p.GRPC),
		grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: caPool(t, envValue(env, "OTELCOL_GYM_TLS_CA")), MinVersion: tls.VersionTLS12})),
		grpc.WithPerRPCCredentials(bearer(envValue(env, "OTELCOL_GYM_TOKEN"))))
	require.NoError(t, err)
	t.Cleanup(func() { _ = toRef.Close() })
	in := startTee(t, toAgent, toRef)

	queuePeak := sampleMetricPeak(t, agentPorts.Metrics, metricQueueSize)
	waits := map[string]func() (string, error){}
	for i, run := range scaleRuns {
		truthDir := filepath.Join(dir, run)
		require.NoError(t, os.MkdirAll(truthDir, 0o755))
		waits[run] = runGymsim(t, in.addr,
			"--rollouts=160", "--concurrency=8", "--rate=16", "--rollout-duration=500ms", "--run-id="+run, fmt.Sprintf("--seed=%d", i+1),
			"--retry-rate=0.1", "--batch-delay=200ms", "--blocking", "--truth="+filepath.Join(truthDir, "truth.jsonl"))
	}
	simDone := make(chan struct{})
	go func() {
		for _, run := range scaleRuns {
			_, _ = waits[run]()
		}
		close(simDone)
	}()

	// Mid-run, the gateway with the most spans is killed again and again;
	// each time it stays down until the agent has failed to export to it
	// (its queue then holds what that gateway did not take) or the load has
	// ended, then starts again. (gymsim writes no capture files: Gym gives
	// each run a capture dir of its own, and the runs' rollout ids are the
	// same.)
	pollUntil(t, time.Minute, "the pool to take the runs' first spans", func() bool {
		total := 0.0
		for _, g := range pool {
			total += g.metric(metricAccepted)
		}
		return total >= 1000
	})
	victim := pool[0]
	for _, g := range pool[1:] {
		if g.metric(metricAccepted) > victim.metric(metricAccepted) {
			victim = g
		}
	}
	kills := 0
	// What each life of a gateway reported before it was killed, and at the end.
	dupsDropped, linksMissed := 0.0, 0.0
	killAtRandom(simDone, scaleKills, func(int) {
		failed := agentMetric(metricBackendOutcome, `success="false"`)
		dupsDropped += victim.metric(metricGymDuplicates)
		linksMissed += victim.metric(metricLinksMissed)
		victim.col.kill()
		kills++
		pollUntil(t, 30*time.Second, "the agent to fail an export to the killed gateway", func() bool {
			select {
			case <-simDone:
				return true
			default:
				return agentMetric(metricBackendOutcome, `success="false"`) > failed
			}
		})
		victim.start()
	})
	<-simDone
	loaded := time.Now()
	for _, run := range scaleRuns {
		out, err := waits[run]()
		t.Logf("gymsim %s: %s", run, out)
		require.NoError(t, err, "gymsim %s", run)
	}
	require.Positive(t, kills, "the load ended before the first kill; make it longer")

	pollUntil(t, 2*time.Minute, "the agent's queue to drain", func() bool {
		acc, q := agentMetric(metricAccepted), agentMetric(metricQueueSize)
		return acc > 0 && q == 0 && agentMetric(metricSent) >= acc
	})
	queued := queuePeak.finish()
	failedExports := agentMetric(metricBackendOutcome, `success="false"`)
	// The spans of each failed export, which the queue sent again: the
	// per-gateway exporters' own counters are not exported (load_balancing
	// gives them a no-op meter), their failure log lines count them.
	resent := 0
	for _, m := range rejectedItems.FindAllStringSubmatch(agent.stderr.String(), -1) {
		n, err := strconv.Atoi(m[1])
		require.NoError(t, err)
		resent += n
	}

	// Spans of a process without nemo.run.id route by trace id (design §6):
	// 40 traces spread over the pool (all 40 on one gateway of three has
	// the odds 3^-39 for random trace ids).
	before := make([]float64, len(pool))
	for i, g := range pool {
		before[i] = g.metric(metricAccepted)
	}
	const runless = 40
	sendRunless(t, agentPorts.GRPC, runless)
	var deltas []float64
	pollUntil(t, time.Minute, "the run-less spans at the pool", func() bool {
		deltas = deltas[:0]
		sum := 0.0
		for i, g := range pool {
			deltas = append(deltas, g.metric(metricAccepted)-before[i])
			sum += deltas[len(deltas)-1]
		}
		return sum >= runless
	})
	assert.NotContains(t, deltas, float64(runless), "the %d run-less spans of %d traces each went to one gateway, not by trace id: %v", runless, runless, deltas)
	assert.Equal(t, float64(runless), deltas[0]+deltas[1]+deltas[2], "each run-less span reached the pool once: %v", deltas)
	agentAccepted, agentSent := agentMetric(metricAccepted), agentMetric(metricSent)

	drained := time.Now()
	for _, g := range pool {
		dupsDropped += g.metric(metricGymDuplicates)
		linksMissed += g.metric(metricLinksMissed)
		require.NoError(t, g.col.stop(), "pool gateway exit")
	}
	require.NoError(t, ref.col.stop(), "reference gateway exit")
	require.NoError(t, agent.stop(), "agent exit")

	stopped := time.Now()
	pooled, reference := combinedLines[scaleSpan](t, shared), combinedLines[scaleSpan](t, refDir)
	spans, rollouts, errorCountsApart, cutLinksApart, linksLost, splitsMissing := 0, 0, 0, 0, 0, 0
	for _, run := range scaleRuns {
		t.Run(run, func(t *testing.T) {
			got, want := readScaleOutput(t, shared, run, pooled), readScaleOutput(t, refDir, run, reference)
			spans += len(got.spans)
			rollouts += len(got.rollouts)
			// By gymsim's truth: every span it created was acknowledged
			// (the tee answered only once the agent and the reference had
			// it) and is in spans.jsonl once.
			assert.Empty(t, readUnacked(t, filepath.Join(dir, run)), "spans gymsim could not export")
			truth := truthIDs(t, filepath.Join(dir, run, "truth.jsonl"))
			missing := 0
			for id := range truth {
				if _, ok := got.spans[id]; !ok {
					missing++
				}
			}
			assert.Zero(t, missing, "spans of gymsim's truth not in spans.jsonl")
			assert.Len(t, got.spans, len(truth), "spans in spans.jsonl that gymsim did not make")
			assert.Equal(t, len(got.spans), got.lines, "spans written twice in spans.jsonl")
			assert.Equal(t, len(want.spans), want.lines, "spans written twice in the reference's spans.jsonl")
			// Against one gateway fed the same spans.
			assert.Equal(t, want.spans, got.spans, "the same spans with the same trace ids, parents and links as through one gateway")
			assert.Equal(t, want.files, got.files, "the same spans in the same rollout files with the same T'")
			assert.Equal(t, want.rollouts, got.rollouts, "the same rollouts.jsonl lines (but error_count and time_split_ms)")
			// time_split_ms is written by the exporter process that consumed
			// every span of the rollout up to its root (design §4.8): a rollout
			// in flight across a kill has none in the pool's output (the line
			// completed by recovery, or a rollout whose first spans the killed
			// process wrote). Where the pool has one, it is the reference's.
			assert.Len(t, want.splits, len(want.rollouts), "every rollout of the reference (never killed) has its split")
			for id, split := range got.splits {
				assert.Equal(t, want.splits[id], split, "rollout %s: the same time_split_ms as through one gateway", id)
			}
			splitsMissing += len(got.rollouts) - len(got.splits)
			// error_count counts the rollout's ERROR spans this exporter
			// process consumed up to its root (gymspans' count table is per
			// process; spans after the root are not reflected): a kill, or
			// an error span reaching one gateway after the root and the
			// other before it, sets the two apart. Counted, not compared.
			for id, n := range want.errors {
				if got.errors[id] != n {
					errorCountsApart++
				}
			}
			assert.Equal(t, want.calls, got.calls, "the same service-map calls")
			// A re-dispatched attempt's root links to its previous
			// attempt's root as through one gateway, or (counted by the
			// gateway that let it go, as the crash tests allow) not at all.
			for id, l := range got.prevLinks {
				assert.Equal(t, want.prevLinks[id], l, "previous_attempt link of %s", id)
			}
			for id := range want.prevLinks {
				if _, ok := got.prevLinks[id]; !ok {
					linksLost++
				}
			}
			for id, typ := range want.cutLinks {
				if got.cutLinks[id] != typ {
					cutLinksApart++
				}
			}
		})
	}
	assert.LessOrEqual(t, float64(linksLost), linksMissed, "previous_attempt links lost beyond those the gateways reported")
	t.Logf("scale-out: %d spans and %d rollouts in 3 runs over 3 gateways (and %d run-less spans), %d kills of one gateway; agent: %.0f spans in, %.0f out, %.0f failed exports (%d spans) re-sent from its queue, at most %.0f spans queued; %.0f duplicates dropped by the gateways' gymspans; %d rollouts.jsonl lines with another error_count than the reference's, %d without time_split_ms (in flight across a kill); %d cut roots linked as job in one output and parent in the other; %d previous_attempt links lost (%.0f reported by the gateways); %v (start and load %v, drain %v, stop %v, compare %v)",
		spans, rollouts, runless, kills, agentAccepted, agentSent, failedExports, resent, queued, dupsDropped, errorCountsApart, splitsMissing, cutLinksApart, linksLost, linksMissed, time.Since(started).Round(time.Second),
		loaded.Sub(started).Round(time.Second), drained.Sub(loaded).Round(time.Second), stopped.Sub(drained).Round(time.Second), time.Since(stopped).Round(time.Second))
}

// sendRunless sends n spans, each its own trace, with no nemo.run.id, to the
// agent's OTLP gRPC port.
func sendRunless(t *testing.T, port, n int) {
	t.Helper()
	exp, err := otlptracegrpc.New(t.Context(), otlptracegrpc.WithInsecure(), otlptracegrpc.WithEndpoint(fmt.Sprintf("127.0.0.1:%d", port)))
	require.NoError(t, err)
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(resource.NewSchemaless(
		attribute.String("service.name", "nemo-gym/no-run"))))
	tr := tp.Tracer("e2e")
	for range n {
		_, s := tr.Start(context.Background(), "start-up")
		s.End()
	}
	require.NoError(t, tp.Shutdown(context.Background()))
}
