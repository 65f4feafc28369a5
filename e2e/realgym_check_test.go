// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
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
		checkRealGymGenAI(t, run) // realgym_genai_test.go
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

	// A span outside every rollout has no rollout evidence and no ancestor in
	// a rollout (it would have got the id downward, design §4.2).
	lost := lostRolloutSpans(run.combined)
	known := knownRolloutLoss(m, run, lost)
	if known != "" {
		t.Logf("KNOWN PRODUCT ISSUE, see %s: %d spans left without the rollout id their ancestors have: %v", known, len(lost), lost)
	} else {
		assert.Empty(t, lost, "spans without the rollout id their ancestors or URLs give")
	}

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

	checkRealGymRecipes(t, m, run, known != "")
}

// knownRolloutLoss names the regression test of the known product issue
// that explains the spans lost in a live run, or "" when none does. Both
// depend on when each process's SDK batch arrives, so a live run shows them
// on some runs only; the replays in realgym_known_issues_test.go show them
// every time.
func knownRolloutLoss(m realGymMode, run *realGymRun, lost []string) string {
	if len(lost) == 0 || !run.live {
		return ""
	}
	if !m.serverTyped {
		// Generic instrumentation: the run passed through, or the first wave
		// of a process with no evidence of its own waited only `wait`.
		return "TestRealGymReplayStartupGap"
	}
	for _, l := range lost {
		if !strings.Contains(l, " POST /run") {
			return ""
		}
	}
	// Gym's telemetry: only /run spans (the environment server's, the
	// agent's first ASGI receives) arrived a batch before their evidence.
	return "TestRealGymReplayEnvironmentServerFirst"
}

// lostRolloutSpans lists the spans without a rollout id that have rollout
// evidence in a URL, or an ancestor in a rollout.
func lostRolloutSpans(spans []outSpan) []string {
	byID := map[string]outSpan{}
	for _, s := range spans {
		byID[s.SpanID] = s
	}
	var lost []string
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
	if m.name == "gym_telemetry" {
		assert.Contains(t, names, m.agent+" gym.rollout", "rollout %s holds gym.rollout", r)
	}
}

// checkRealGymRecipes runs the seed page's jq recipes (with *.log replaced by
// spans.jsonl) and the README's "Debug rollout" recipes as written.
func checkRealGymRecipes(t *testing.T, m realGymMode, run *realGymRun, knownLoss bool) {
	// From a trace, find the rollout.
	out, err := runCmd(t, time.Minute, nil, "bash", "-c",
		`cd "$1" && jq -r 'select(.attributes."nemo.gym.rollout.id") | .attributes."nemo.gym.rollout.id"' spans.jsonl | sort -u`, "recipe", run.captureDir)
	require.NoError(t, err, out)
	assert.Equal(t, strings.Join(run.rollouts, "\n"), strings.TrimSpace(out), "rollout ids found by the seed's recipe")

	// Verify propagation: one trace id across several service.name values.
	services, _ := seedPropagationRecipe(t, run.captureDir)
	for _, r := range run.rollouts {
		got := services[rolloutTraceID(m.runID, r)]
		for _, svc := range []string{m.env_, m.agent, m.model, m.resources} {
			if !got[svc] && knownLoss && svc == m.env_ {
				t.Logf("KNOWN PRODUCT ISSUE (above): the trace of rollout %s has no spans of %s", r, svc)
				continue
			}
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
