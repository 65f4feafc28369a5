// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// checkRealGym checks one real run's outputs against issue #17's acceptance 2.
func checkRealGym(t *testing.T, m realGymMode, run *realGymRun) {
	byID := map[string]outSpan{}
	synthetic := 0
	for _, s := range run.combined {
		_, dup := byID[s.SpanID]
		require.False(t, dup, "span %s (%s) twice in spans.jsonl", s.SpanID, s.Name)
		byID[s.SpanID] = s
		if s.synthetic() {
			synthetic++
		}
	}
	// Spans accepted by the receiver = spans written (the synthesized CLIENT
	// spans of design §4.4 aside).
	assert.EqualValues(t, run.accepted, len(run.combined)-synthetic,
		"otelcol_receiver_accepted_spans = lines of spans.jsonl less the %d synthesized", synthetic)

	inRollout := map[string][]outSpan{}
	for _, s := range run.combined {
		if r := s.str("nemo.gym.rollout.id"); r != "" {
			inRollout[r] = append(inRollout[r], s)
		}
	}
	assert.ElementsMatch(t, run.rollouts, keys(inRollout), "the rollouts that have spans are the rollouts Gym ran")
	if run.live {
		checkRealGymGenAI(t, run)  // realgym_genai_test.go
		checkRealGymWhy(t, m, run) // realgym_why_test.go
	}

	for _, r := range run.rollouts {
		if run.live {
			assert.FileExists(t, filepath.Join(run.captureDir, r+".capture.jsonl"), "Gym's capture of %s", r)
		}
		path := filepath.Join(run.captureDir, r+".spans.jsonl")
		if !assert.FileExists(t, path, "spans of %s beside its capture", r) {
			continue
		}
		spans := readJSONLines[outSpan](t, path)
		want := rolloutTraceID(m.runID, r)
		var ids, combinedIDs []string
		for _, s := range spans {
			assert.Equal(t, r, s.str("nemo.gym.rollout.id"), "span %s (%s) in %s.spans.jsonl", s.SpanID, s.Name, r)
			assert.Equal(t, want, s.TraceID, "span %s (%s) of %s is in the rollout's trace T'", s.SpanID, s.Name, r)
			ids = append(ids, s.SpanID)
		}
		for _, s := range inRollout[r] {
			combinedIDs = append(combinedIDs, s.SpanID)
		}
		assert.ElementsMatch(t, combinedIDs, ids, "%s.spans.jsonl holds exactly the spans of %s", r, r)
		checkRolloutShape(t, m, r, spans, run.exchanges[r])
	}

	// A span outside every rollout has no rollout evidence, no ancestor in a
	// rollout (it would have got the id downward, design §4.2), and not one
	// rollout below it (upward).
	assert.Empty(t, lostRolloutSpans(run.combined), "spans without the rollout id their URLs, ancestors or descendants give")

	// rollouts.jsonl: one line per rollout.
	lines := rolloutsFileIDs(filepath.Join(run.captureDir, "rollouts.jsonl"))
	assert.ElementsMatch(t, run.rollouts, keys(lines), "rollouts.jsonl names every rollout Gym ran, and no other")
	for r, n := range lines {
		assert.Equal(t, 1, n, "lines of rollout %s in rollouts.jsonl", r)
	}

	// service_map.json: the agent's edges, and the caller's edges above it.
	edges := serviceMapEdges(t, filepath.Join(run.captureDir, "service_map.json"), m.runID)
	want := [][2]string{{m.agent, m.model}, {m.agent, m.resources}, {m.env_, m.agent}}
	if m.driverTraced {
		want = append(want, [2]string{m.driver, m.env_})
	}
	for _, e := range want {
		assert.Contains(t, edges, e, "service-map edge %s → %s (edges: %v)", e[0], e[1], edges)
	}

	checkRealGymRecipes(t, m, run)
	checkRealGymTimeSplit(t, m, run) // realgym_timesplit_test.go
	checkRealGymReplayed(t, run)     // realgym_replaycmd_test.go
}

// lostRolloutSpans lists the spans without a rollout id that have rollout
// evidence in a URL, an ancestor in a rollout, or descendants with rollout
// ids that all name one rollout (job spans aside). Parents are followed by
// span id across traces (the split keeps every parent id but a cut root's).
func lostRolloutSpans(spans []outSpan) []string {
	byID := map[string]outSpan{}
	for _, s := range spans {
		byID[s.SpanID] = s
	}
	var lost []string
	below := map[string]map[string]bool{} // span id → rollout ids of its descendants
	for _, s := range spans {
		r := s.str("nemo.gym.rollout.id")
		if r == "" {
			continue
		}
		for p, hops := byID[s.ParentSpanID], 0; p.SpanID != "" && hops < 64; p, hops = byID[p.ParentSpanID], hops+1 {
			if below[p.SpanID] == nil {
				below[p.SpanID] = map[string]bool{}
			}
			below[p.SpanID][r] = true
		}
	}
	for id, rs := range below {
		s := byID[id]
		if s.str("nemo.gym.rollout.id") == "" && len(rs) == 1 && s.Name != "gym.job" {
			lost = append(lost, fmt.Sprintf("%s (%s %s above spans of rollout %v only)", s.SpanID, s.service(), s.Name, keys(rs)))
		}
	}
	for _, s := range spans {
		if s.str("nemo.gym.rollout.id") != "" {
			continue
		}
		for _, k := range []string{"url.path", "http.target", "url.full", "http.url"} {
			if strings.Contains(s.str(k), "/ng-rollout/") {
				lost = append(lost, fmt.Sprintf("%s (%s %s: %s in %s)", s.SpanID, s.service(), s.Name, s.str(k), k))
			}
		}
		for p, hops := byID[s.ParentSpanID], 0; p.SpanID != "" && hops < 64; p, hops = byID[p.ParentSpanID], hops+1 {
			if r := p.str("nemo.gym.rollout.id"); r != "" {
				lost = append(lost, fmt.Sprintf("%s (%s %s under %s %s of rollout %s)", s.SpanID, s.service(), s.Name, p.SpanID, p.Name, r))
				break
			}
		}
	}
	sort.Strings(lost)
	return lost
}

// leakedContextRollouts maps each rollout whose root was cut from a parent in
// another rollout (link type parent to a span of that rollout) to the other
// rollout: the sender's trace context leaked from one rollout into the next,
// so the rollout's own callers are not above it.
func leakedContextRollouts(spans []outSpan) map[string]string {
	rolloutOf := map[string]string{}
	for _, s := range spans {
		rolloutOf[s.SpanID] = s.str("nemo.gym.rollout.id")
	}
	leaked := map[string]string{}
	for _, s := range spans {
		r := s.str("nemo.gym.rollout.id")
		if r == "" || s.ParentSpanID != "" {
			continue
		}
		for _, l := range s.Links {
			if l.linkType() != "parent" {
				continue
			}
			if _, id := l.ids(); rolloutOf[id] != "" && rolloutOf[id] != r {
				leaked[r] = rolloutOf[id]
			}
		}
	}
	return leaked
}

// checkRolloutShape checks that a rollout's file holds what Gym did for it:
// one model-server request per exchange in its capture file (the request's
// SERVER span, found by its URL), the agent's /run, and with Gym's own
// telemetry its gym.rollout span.
func checkRolloutShape(t *testing.T, m realGymMode, r string, spans []outSpan, captured int) {
	modelRequests := 0
	var names []string
	for _, s := range spans {
		names = append(names, s.service()+" "+s.Name)
		if s.service() != m.model {
			continue
		}
		for _, k := range []string{"url.path", "http.target"} {
			if strings.HasSuffix(s.str(k), "/v1/responses") {
				modelRequests++
			}
		}
	}
	assert.Equal(t, captured, modelRequests, "rollout %s: model-server requests in its spans = model exchanges in its capture (%v)", r, names)
	assert.Contains(t, names, m.agent+" POST /run", "rollout %s holds the agent's POST /run", r)
	if m.ownTelemetry {
		assert.Contains(t, names, m.agent+" gym.rollout", "rollout %s holds gym.rollout", r)
	}
}

// checkRealGymRecipes runs the seed page's jq recipes (with *.log replaced by
// spans.jsonl) and the README's "Debug rollout" recipes as written.
func checkRealGymRecipes(t *testing.T, m realGymMode, run *realGymRun) {
	// From a trace, find the rollout.
	out, err := runCmd(t, time.Minute, nil, "bash", "-c",
		`cd "$1" && jq -r 'select(.attributes."nemo.gym.rollout.id") | .attributes."nemo.gym.rollout.id"' spans.jsonl | sort -u`, "recipe", run.captureDir)
	require.NoError(t, err, out)
	assert.Equal(t, strings.Join(run.rollouts, "\n"), strings.TrimSpace(out), "rollout ids found by the seed's recipe")

	// Verify propagation: one trace id across several service.name values.
	// A rollout whose agent took another rollout's context (design §4.2,
	// leaked trace context) has no callers in its trace: the environment
	// server's and the driver's spans above it sit in a trace of their own
	// that nothing of the rollout is below.
	services, _ := seedPropagationRecipe(t, run.captureDir)
	leaked := leakedContextRollouts(run.combined)
	for _, r := range run.rollouts {
		got := services[rolloutTraceID(m.runID, r)]
		want := []string{m.env_, m.agent, m.model, m.resources}
		if from, ok := leaked[r]; ok {
			t.Logf("rollout %s: its agent's POST /run was a child of a span of rollout %s in Gym's trace context; its callers' spans are in no rollout", r, from)
			want = want[1:]
		}
		for _, svc := range want {
			assert.True(t, got[svc], "the trace of rollout %s has spans of %s (it has %v)", r, svc, got)
		}
	}

	if !run.live {
		return // a replay has no capture files
	}
	// The README's "Debug rollout 12-3", for the first rollout.
	r := run.rollouts[0]
	out, err = runCmd(t, time.Minute, []string{"NEMO_GYM_CAPTURE_DIR=" + run.captureDir, "R=" + r}, "bash", "-c", `
set -e
ls $NEMO_GYM_CAPTURE_DIR/$R.*
jq -r '[.trace_id, .resource.attributes."service.name", .kind, .name] | @tsv' $NEMO_GYM_CAPTURE_DIR/$R.spans.jsonl | cut -f1 | sort -u
grep '"rollout_id":"'$R'"' $NEMO_GYM_CAPTURE_DIR/rollouts.jsonl | jq -r .trace_id`)
	require.NoError(t, err, out)
	tid := rolloutTraceID(m.runID, r)
	assert.Equal(t, []string{
		filepath.Join(run.captureDir, r+".capture.jsonl"), filepath.Join(run.captureDir, r+".spans.jsonl"), tid, tid,
	}, strings.Fields(out), "the README's Debug-rollout recipes on %s", r)
}

func serviceMapEdges(t *testing.T, path, runID string) [][2]string {
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var sm struct {
		Edges []struct {
			Run    string `json:"run"`
			Client string `json:"client"`
			Server string `json:"server"`
		} `json:"edges"`
	}
	require.NoError(t, json.Unmarshal(b, &sm))
	var out [][2]string
	for _, e := range sm.Edges {
		if e.Run == runID {
			out = append(out, [2]string{e.Client, e.Server})
		}
	}
	return out
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// serverRequest reports whether s is a server's span of an incoming request:
// SERVER, or INTERNAL with a request target, which the ASGI instrumentation
// makes it when a finished request's context is still current in the
// process (design §4.2, leaked trace context; modelcall.ServerRequest). A
// real Gym run under generic instrumentation sent one agent POST /run so,
// of ten, which a count of SERVER spans alone waited a minute for in vain.
func serverRequest(s outSpan) bool {
	return s.Kind == "SpanKind.SERVER" || (s.Kind == "SpanKind.INTERNAL" && s.str("http.target")+s.str("url.path") != "")
}

// checkPassedThroughSoon checks a run with observability off: every span
// the collector accepted is on disk within 10 s of the run's end, with the
// collector still running and holding nothing. Gym's own processes send
// their last spans on their batch processors' schedule, which is not the
// collector's to keep: the 10 s are counted from the later of the run's end
// and the last span's arrival (the poll at which the receiver's count last
// rose), and the run's spans are known to be all there by their structure
// (every model call's SERVER span and every agent POST /run), for which Gym
// gets up to a minute.
func checkPassedThroughSoon(t *testing.T, p ports, run *realGymRun, rollouts int) {
	t.Helper()
	var pending, accepted, lastAccepted float64
	var spans []outSpan
	modelPosts, runs := 0, 0
	ended := time.Now()
	lastArrival := ended
	poll := func() bool {
		pending, _ = scrapeMetric(t, p.Metrics, "otelcol_processor_gym_pending_spans")
		accepted, _ = scrapeMetric(t, p.Metrics, "otelcol_receiver_accepted_spans")
		if accepted > lastAccepted {
			lastAccepted, lastArrival = accepted, time.Now()
		}
		spans = readJSONLinesIfAny(t, filepath.Join(run.captureDir, "spans.jsonl"))
		modelPosts, runs = 0, 0
		for _, s := range spans {
			if !serverRequest(s) {
				continue
			}
			if strings.HasSuffix(s.str("http.target")+s.str("url.path"), "/v1/responses") {
				modelPosts++
			}
			if s.Name == "POST /run" && strings.HasSuffix(s.service(), "simple_agent") {
				runs++
			}
		}
		return pending == 0 && accepted > 0 && float64(len(spans)) == accepted && modelPosts >= 2*rollouts && runs >= rollouts
	}
	ok := waitFor(time.Minute, poll)
	onDisk := time.Now()
	t.Logf("observability off: %d spans on disk %s after the run's end, %s after the last arrival %s after the run's end (accepted %d, pending %d; model-server POSTs %d, agent POST /run %d)",
		len(spans), onDisk.Sub(ended).Round(100*time.Millisecond), onDisk.Sub(lastArrival).Round(100*time.Millisecond),
		lastArrival.Sub(ended).Round(100*time.Millisecond), int(accepted), int(pending), modelPosts, runs)
	if !ok {
		// What the run sent, by service, kind and name: which span the
		// condition above waited for in vain.
		shapes := map[string]int{}
		for _, s := range spans {
			shapes[s.service()+" "+s.Kind+" "+s.Name]++
		}
		t.Logf("the run's spans by service, kind and name: %v", shapes)
	}
	require.True(t, ok, "every span of the run on disk within a minute of the run's end")
	assert.LessOrEqual(t, onDisk.Sub(lastArrival), 10*time.Second, "every span on disk within 10 s of its arrival after the run's end")
	for _, s := range spans {
		assert.Empty(t, s.str("nemo.gym.rollout.id"), "%s %s: observability off, no rollout id", s.service(), s.Name)
	}
	run.accepted, run.combined = accepted, spans
}

// readJSONLinesIfAny reads the whole lines of a file another process is
// appending to: none when it does not exist yet, and not a last line still
// without its newline.
func readJSONLinesIfAny(t *testing.T, path string) []outSpan {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	var out []outSpan
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			break
		}
		var s outSpan
		require.NoError(t, json.Unmarshal(b[:i], &s), "%s: %s", path, b[:i])
		out = append(out, s)
		b = b[i+1:]
	}
	return out
}
