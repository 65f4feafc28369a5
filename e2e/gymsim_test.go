// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The gymsim suite runs the built collector on free loopback ports with the
// gym processor and the gymspans exporter (testdata/gymsim_collector.yaml),
// drives it with gymsim as a NeMo Gym run of four processes, stops it, and
// checks every output file against gymsim's truth (each span id with the
// rollout design §4.2 says it belongs to) and against what design §4 and §5
// promise for the case.

const gymsimRunID = "e2erun0001"

// gymsimCase is one run of gymsim against a fresh collector.
type gymsimCase struct {
	name string
	args []string // gymsim flags on top of the common ones
	// Collector settings of the gym processor.
	wait, settle string
	// What the case's span groups and switches imply.
	observability bool // rollout ids exist
	job           bool // gym.job exists
	httpClient    bool // CLIENT spans and traceparent exist
	// services is the number of services each rollout spans.
	services int
	// onDiskWithin, when set, is how soon after gymsim's end every span must
	// be in spans.jsonl, checked before the collector is stopped.
	onDiskWithin time.Duration
}

func gymsimCases() []gymsimCase {
	return []gymsimCase{
		{name: "default", args: []string{"--preset=default"}, observability: true, job: true, httpClient: true, services: 4},
		{name: "per_rollout", args: []string{"--preset=per_rollout", "--protocol=http"}, observability: true, httpClient: true, services: 4},
		{name: "all", args: []string{"--preset=all", "--tool-calls=2"}, observability: true, job: true, httpClient: true, services: 4},
		// Without http_client no traceparent is sent: the orchestrator's only
		// span is gym.job, every SERVER span starts a trace of its own.
		{name: "http_client_off", args: []string{"--span-groups=default,-http_client"}, observability: true, job: true, services: 3},
		// With the shipped defaults (wait 30s, settle 5s), Gym's first spans
		// show that observability is off: nothing waits for ids that will not
		// come, so every span is on disk within seconds of the run's end.
		{name: "observability_off", args: []string{"--observability=false"}, wait: "30s", settle: "5s", job: true, httpClient: true, onDiskWithin: 10 * time.Second},
		// A cold model server: the first wave's model calls end after 4 s,
		// past wait (2 s) and settle (1 s), so the run shows no rollout
		// evidence until then (design §4.2); every span still learns its rollout.
		{
			name: "first_evidence_after_wait", wait: "2s", settle: "1s",
			args:          []string{"--rollouts=16", "--concurrency=8", "--cold-start=4s"},
			observability: true, job: true, httpClient: true, services: 4,
		},
		// Every rollout lasts longer than wait; its early spans (the agent's
		// POST /run http receive) still learn their rollout.
		{
			name: "rollouts_longer_than_wait", wait: "3s", settle: "500ms",
			args:          []string{"--rollouts=12", "--concurrency=12", "--rollout-duration=5s", "--model-calls=10", "--protocol=http"},
			observability: true, job: true, httpClient: true, services: 4,
		},
	}
}

func TestGymsimEndToEnd(t *testing.T) {
	for _, tc := range gymsimCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			run := runGymsimAgainstCollector(t, tc)
			checkGymsimRun(t, tc, run)
		})
	}
}

// TestGymsimSeedRecipes runs the seed page's jq recipes, with *.log replaced
// by spans.jsonl, on the default preset's output (acceptance 3).
func TestGymsimSeedRecipes(t *testing.T) {
	if _, err := exec.LookPath("jq"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("jq is not installed (CI installs it in .ci/run)")
		}
		t.Skip("jq is not installed: apt-get install -y jq")
	}
	tc := gymsimCases()[0]
	run := runGymsimAgainstCollector(t, tc)
	rollouts := run.rolloutIDs()

	// From a trace, find the rollout.
	out, err := runCmd(t, time.Minute, nil, "bash", "-c",
		`cd "$1" && jq -r 'select(.attributes."nemo.gym.rollout.id") | .attributes."nemo.gym.rollout.id"' spans.jsonl`, "recipe", run.dir)
	require.NoError(t, err, out)
	found := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		found[line]++
	}
	require.Len(t, found, len(rollouts), "rollout ids found by the recipe")
	for _, r := range rollouts {
		assert.Equal(t, len(run.truthByRollout[r]), found[r], "spans of rollout %s found by the recipe", r)
		// From a rollout ID, find its captured model calls.
		assert.FileExists(t, filepath.Join(run.dir, r+".capture.jsonl"))
	}

	// Verify propagation: one trace id across several service.name values.
	services, rows := seedPropagationRecipe(t, run.dir)
	assert.Equal(t, len(run.truth), rows, "one row per span")
	for _, r := range rollouts {
		tid := rolloutTraceID(gymsimRunID, r)
		assert.Len(t, services[tid], 4, "service.name values in the trace of rollout %s", r)
	}
}

// seedPropagationRecipe runs the seed page's "Verify propagation" recipe as
// written (with *.log replaced by spans.jsonl) in dir and returns the
// service.name values it shows for each trace id, and its rows.
func seedPropagationRecipe(t *testing.T, dir string) (map[string]map[string]bool, int) {
	out, err := runCmd(t, time.Minute, nil, "bash", "-c",
		`cd "$1" && cat spans.jsonl | grep '"trace_id"' | jq -r '[.trace_id, .resource.attributes."service.name", .kind, .name] | @tsv' | sort`, "recipe", dir)
	require.NoError(t, err, out)
	services := map[string]map[string]bool{}
	rows := 0
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Split(line, "\t")
		require.Len(t, f, 4, "row %q", line)
		if services[f[0]] == nil {
			services[f[0]] = map[string]bool{}
		}
		services[f[0]][f[1]] = true
		rows++
	}
	return services, rows
}

// gymsimRun is what one case produced.
type gymsimRun struct {
	dir            string
	truth          []truthSpan
	truthByID      map[string]truthSpan
	truthByRollout map[string][]truthSpan
	combined       []outSpan
	gymsimOutput   string
	// runID is the run's nemo.run.id ("": gymsimRunID); pathTemplate names
	// its rollout files ("": {rollout_id}.spans.jsonl). Runs that share a
	// capture dir set both.
	runID, pathTemplate string
}

// run is the run's id.
func (r *gymsimRun) run() string {
	if r.runID == "" {
		return gymsimRunID
	}
	return r.runID
}

// rolloutFile is the path of rollout's file.
func (r *gymsimRun) rolloutFile(rollout string) string {
	tmpl := r.pathTemplate
	if tmpl == "" {
		tmpl = "{rollout_id}.spans.jsonl"
	}
	return filepath.Join(r.dir, strings.NewReplacer("{rollout_id}", rollout, "{run_id}", r.run()).Replace(tmpl))
}

func (r *gymsimRun) rolloutIDs() []string {
	ids := make([]string, 0, len(r.truthByRollout))
	for id := range r.truthByRollout {
		if id != "" {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

type truthSpan struct {
	SpanID    string `json:"span_id"`
	TraceID   string `json:"trace_id"`
	Service   string `json:"service"`
	Name      string `json:"name"`
	Kind      string `json:"kind"`
	RolloutID string `json:"rollout_id"`
}

// outSpan is the part of a gymspans console line (design §5.2) the suite reads.
type outSpan struct {
	Name         string         `json:"name"`
	Kind         string         `json:"kind"`
	TraceID      string         `json:"trace_id"`
	SpanID       string         `json:"span_id"`
	ParentSpanID string         `json:"parent_span_id"`
	Attributes   map[string]any `json:"attributes"`
	Links        []outLink      `json:"links"`
	Resource     struct {
		Attributes map[string]any `json:"attributes"`
	} `json:"resource"`
}

type outLink struct {
	Context struct {
		TraceID string `json:"trace_id"`
		SpanID  string `json:"span_id"`
	} `json:"context"`
	Attributes map[string]any `json:"attributes"`
}

func (s outSpan) str(key string) string {
	v, _ := s.Attributes[key].(string)
	return v
}

func (s outSpan) service() string {
	v, _ := s.Resource.Attributes["service.name"].(string)
	return v
}

func (s outSpan) synthetic() bool {
	v, _ := s.Attributes["nemo.gym.synthetic"].(bool)
	return v
}

// chat reports whether s is a model call's chat span (gymcapture's, design
// §4.7), not the gym processor's service-map CLIENT span.
func (s outSpan) chat() bool {
	_, isCall := s.Attributes["nemo.gym.model_call.id"]
	return s.synthetic() && isCall
}

func (l outLink) ids() (traceID, spanID string) {
	return strings.TrimPrefix(l.Context.TraceID, "0x"), strings.TrimPrefix(l.Context.SpanID, "0x")
}

func (l outLink) linkType() string {
	v, _ := l.Attributes["nemo.gym.link.type"].(string)
	return v
}

// runGymsimAgainstCollector starts a collector for the case, runs gymsim into
// it with a truth file, stops the collector (which flushes every pending
// decision, design §4.5) and reads the outputs.
func runGymsimAgainstCollector(t *testing.T, tc gymsimCase) *gymsimRun {
	t.Helper()
	tmpl, err := os.ReadFile(filepath.Join("testdata", "gymsim_collector.yaml"))
	require.NoError(t, err)
	wait, settle := tc.wait, tc.settle
	if wait == "" {
		wait = "30s"
	}
	if settle == "" {
		settle = "1s"
	}
	dir := t.TempDir()
	captureDir := filepath.Join(dir, "captures")
	p := newPorts(t)
	cfg := strings.NewReplacer("${WAIT}", wait, "${SETTLE}", settle).Replace(p.expand(string(tmpl), captureDir))
	cfgPath := writeFile(t, dir, "collector.yaml", cfg)
	col := startCollector(t, p, nil, "--config", cfgPath)

	truthPath := filepath.Join(dir, "truth.jsonl")
	args := []string{
		"--rollouts=50", "--concurrency=8", "--run-id=" + gymsimRunID, "--retry-rate=0.1",
		"--batch-delay=200ms", "--blocking",
		"--capture-dir=" + captureDir, "--truth=" + truthPath,
	}
	args = append(args, tc.args...)
	endpoint := fmt.Sprintf("127.0.0.1:%d", p.GRPC)
	for _, a := range args {
		if a == "--protocol=http" {
			endpoint = fmt.Sprintf("127.0.0.1:%d", p.HTTP)
		}
	}
	args = append(args, "--endpoint="+endpoint)
	out, err := runCmd(t, 2*time.Minute, nil, gymsimBinary(t), args...)
	require.NoError(t, err, "gymsim %s:\n%s", strings.Join(args, " "), out)
	t.Logf("%s", strings.TrimSpace(out))
	if tc.onDiskWithin > 0 {
		waitForCombinedLines(t, filepath.Join(captureDir, "spans.jsonl"), len(readJSONLines[truthSpan](t, truthPath)), tc.onDiskWithin)
	}
	require.NoError(t, col.stop(), "collector exit")

	run := &gymsimRun{dir: captureDir, gymsimOutput: out, truthByID: map[string]truthSpan{}, truthByRollout: map[string][]truthSpan{}}
	run.truth = readJSONLines[truthSpan](t, truthPath)
	require.NotEmpty(t, run.truth)
	for _, s := range run.truth {
		_, dup := run.truthByID[s.SpanID]
		require.False(t, dup, "span id %s twice in the truth", s.SpanID)
		run.truthByID[s.SpanID] = s
		run.truthByRollout[s.RolloutID] = append(run.truthByRollout[s.RolloutID], s)
	}
	run.combined = readJSONLines[outSpan](t, filepath.Join(captureDir, "spans.jsonl"))
	return run
}

// waitForCombinedLines polls the combined file until it has want lines, and
// fails when that takes longer than within (the collector still running).
func waitForCombinedLines(t *testing.T, path string, want int, within time.Duration) {
	t.Helper()
	start := time.Now()
	var got int
	for {
		b, err := os.ReadFile(path)
		if err == nil {
			got = strings.Count(string(b), "\n")
		}
		if got >= want {
			t.Logf("all %d spans in %s %v after the run ended", want, filepath.Base(path), time.Since(start).Round(time.Millisecond))
			return
		}
		if time.Since(start) > within {
			t.Fatalf("%d of %d spans in %s %v after the run ended, before the collector was stopped", got, want, filepath.Base(path), within)
		}
		time.Sleep(100 * time.Millisecond) // polling the file the collector writes; the condition is what is tested
	}
}

func readJSONLines[T any](t *testing.T, path string) []T {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var v T
		require.NoError(t, json.Unmarshal(sc.Bytes(), &v), "%s: %s", path, sc.Text())
		out = append(out, v)
	}
	require.NoError(t, sc.Err())
	return out
}

// rolloutTraceID is T' of design §4.3 for a span with a run.
func rolloutTraceID(run, rollout string) string {
	h := sha256.New()
	h.Write([]byte("otelcol-gym/rollout/v1"))
	h.Write([]byte{0})
	h.Write([]byte(run))
	h.Write([]byte{0})
	h.Write([]byte(rollout))
	var id [16]byte
	copy(id[:], h.Sum(nil))
	if id == [16]byte{} {
		id[15] = 1
	}
	return hex.EncodeToString(id[:])
}

// syntheticSpanID is the id design §4.4 gives the CLIENT span synthesized
// above the SERVER span serverSpanID in trace traceID.
func syntheticSpanID(t *testing.T, traceID, serverSpanID string) string {
	tid, err := hex.DecodeString(traceID)
	require.NoError(t, err)
	sid, err := hex.DecodeString(serverSpanID)
	require.NoError(t, err)
	h := sha256.New()
	h.Write([]byte("otelcol-gym/synthetic/v1"))
	h.Write([]byte{0})
	h.Write(tid)
	h.Write(sid)
	var id [8]byte
	copy(id[:], h.Sum(nil))
	if id == [8]byte{} {
		id[7] = 1
	}
	return hex.EncodeToString(id[:])
}

func checkGymsimRun(t *testing.T, tc gymsimCase, run *gymsimRun) {
	rollouts := run.rolloutIDs()
	if tc.observability {
		require.NotEmpty(t, rollouts, "the truth names rollouts")
	} else {
		require.Empty(t, rollouts, "no rollout ids without observability")
	}

	// Every non-synthetic span arrives exactly once in the combined file, and
	// nothing else arrives but synthesized CLIENT spans and chat spans.
	byID := map[string]outSpan{}
	var synthetic []outSpan
	for _, s := range run.combined {
		if s.synthetic() && !s.chat() {
			synthetic = append(synthetic, s)
		}
		_, dup := byID[s.SpanID]
		require.False(t, dup, "span %s (%s) twice in spans.jsonl", s.SpanID, s.Name)
		byID[s.SpanID] = s
		if !s.synthetic() {
			_, known := run.truthByID[s.SpanID]
			require.True(t, known, "span %s (%s) in spans.jsonl is not one gymsim made", s.SpanID, s.Name)
		}
	}
	missing := newTally(t, "truth spans in spans.jsonl")
	same := newTally(t, "name, kind and service of each span")
	rollout := newTally(t, "nemo.gym.rollout.id = the truth's rollout (§4.2)")
	trace := newTally(t, "trace id: T' for spans of a rollout, the original for the others (§4.3)")
	for _, want := range run.truth {
		got, ok := byID[want.SpanID]
		if !missing.check(ok, "span %s %q of %s (rollout %q) missing", want.SpanID, want.Name, want.Service, want.RolloutID) {
			continue
		}
		same.check(want.Name == got.Name && "SpanKind."+want.Kind == got.Kind && want.Service == got.service(),
			"span %s: %q %s %s, want %q %s %s", want.SpanID, got.Name, got.Kind, got.service(), want.Name, want.Kind, want.Service)
		rollout.check(want.RolloutID == got.str("nemo.gym.rollout.id"),
			"span %s %q (%s): rollout %q, want %q", want.SpanID, want.Name, want.Service, got.str("nemo.gym.rollout.id"), want.RolloutID)
		wantTrace := want.TraceID
		if want.RolloutID != "" {
			wantTrace = rolloutTraceID(run.run(), want.RolloutID)
		}
		trace.check(wantTrace == got.TraceID, "span %s %q (rollout %q): trace %s, want %s", want.SpanID, want.Name, want.RolloutID, got.TraceID, wantTrace)
	}
	missing.report()
	same.report()
	rollout.report()
	trace.report()
	if t.Failed() {
		return
	}

	var job *outSpan
	for _, s := range run.truth {
		if s.Name == "gym.job" {
			j := byID[s.SpanID]
			job = &j
		}
	}
	if tc.job {
		require.NotNil(t, job, "gym.job")
		assert.Empty(t, job.ParentSpanID, "gym.job is a root")
	} else {
		require.Nil(t, job, "no gym.job in this preset")
	}

	files := map[string][]outSpan{} // rollout → its file
	rc := newRolloutChecks(t)
	for _, r := range rollouts {
		files[r] = checkRolloutFile(t, rc, tc, run, r, job)
	}
	rc.report()

	// Each rollout's tree: one root, connected, cut from the job; the job's
	// links; rollouts.jsonl; previous attempts. Without CLIENT spans the tree
	// is whole only after the service-map repair of §4.4.
	trees := func(t *testing.T) {
		roots := map[string]outSpan{} // rollout → root
		tcks := newRolloutChecks(t)
		for _, r := range rollouts {
			if root := checkRolloutTree(tcks, tc, r, files[r], job); root.SpanID != "" {
				roots[r] = root
			}
		}
		tcks.report()
		checkSynthetic(t, tc, run, synthetic, byID)
		checkJobLinks(t, tc, job, roots)
		checkRolloutsFile(t, tc, run, roots)
		checkPreviousAttempts(t, roots)
	}
	if tc.httpClient {
		trees(t)
	} else {
		t.Run("service_map_repair", trees)
	}
	t.Run("service_map", func(t *testing.T) {
		checkPeerService(t, tc, run, byID)
		checkServiceMapFile(t, run)
	})
	if !tc.observability {
		// §4.2: a run with no evidence is passed through; nothing is a rollout.
		matches, err := filepath.Glob(filepath.Join(run.dir, "*.capture.jsonl"))
		require.NoError(t, err)
		assert.Empty(t, matches, "capture files without observability")
		for _, s := range run.combined {
			assert.Equal(t, run.truthByID[s.SpanID].TraceID, s.TraceID, "span %s keeps its trace", s.SpanID)
			assert.Empty(t, s.Links, "span %s has no links", s.SpanID)
		}
	}
}

// rolloutChecks are the per-rollout checks, each tallied over all rollouts.
type rolloutChecks struct {
	file, services, trace, roots, rootKind, jobLink, capture *tally
}

func newRolloutChecks(t *testing.T) *rolloutChecks {
	return &rolloutChecks{
		file:     newTally(t, "<rollout>.spans.jsonl holds exactly the rollout's spans (§5.1)"),
		services: newTally(t, "services of each rollout"),
		trace:    newTally(t, "one trace T' per rollout, not the job's (§4.3)"),
		roots:    newTally(t, "exactly one root per rollout, every other parent in the file (§4.3)"),
		rootKind: newTally(t, "the rollout root is the span that got the rollout upward"),
		jobLink:  newTally(t, "a root cut from gym.job links to it (§4.3)"),
		capture:  newTally(t, "<rollout>.capture.jsonl beside <rollout>.spans.jsonl"),
	}
}

func (c *rolloutChecks) report() {
	for _, x := range []*tally{c.file, c.services, c.trace, c.roots, c.rootKind, c.jobLink, c.capture} {
		x.report()
	}
}

// checkRolloutFile checks <R>.spans.jsonl: exactly R's spans from all the
// case's services, next to R's capture file, in one trace T' that is not the
// job's. It returns the file's spans.
func checkRolloutFile(t *testing.T, c *rolloutChecks, tc gymsimCase, run *gymsimRun, r string, job *outSpan) []outSpan {
	t.Helper()
	path := run.rolloutFile(r)
	spans := readJSONLines[outSpan](t, path)
	_, err := os.Stat(filepath.Join(run.dir, r+".capture.jsonl"))
	c.capture.check(err == nil, "%s: %v", r, err)

	want := map[string]bool{}
	services := map[string]bool{}
	for _, s := range run.truthByRollout[r] {
		want[s.SpanID] = true
		services[s.Service] = true
	}
	c.services.check(len(services) == tc.services, "rollout %s spans %d services, want %d", r, len(services), tc.services)
	got := map[string]outSpan{}
	gotServices := map[string]bool{}
	for _, s := range spans {
		_, dup := got[s.SpanID]
		c.file.check(!dup, "span %s twice in %s", s.SpanID, path)
		got[s.SpanID] = s
		if !s.synthetic() {
			c.file.check(want[s.SpanID], "span %s %q (%s) in %s belongs to rollout %q", s.SpanID, s.Name, s.service(), path, run.truthByID[s.SpanID].RolloutID)
			gotServices[s.service()] = true
		}
	}
	for id := range want {
		_, ok := got[id]
		c.file.check(ok, "span %s %q of rollout %s missing from its file", id, run.truthByID[id].Name, r)
	}
	c.services.check(len(services) == len(gotServices), "rollout %s: %d services in its file, want %d", r, len(gotServices), len(services))

	tid := rolloutTraceID(run.run(), r)
	c.trace.check(job == nil || job.TraceID != tid, "rollout %s in the job's trace", r)
	for _, s := range spans {
		c.trace.check(tid == s.TraceID, "span %s %q of %s in trace %s, want %s", s.SpanID, s.Name, r, s.TraceID, tid)
	}
	return spans
}

// checkRolloutTree checks that a rollout's spans form one tree: exactly one
// root, the span that got the rollout upward, cut from gym.job with a link
// to it when it had one, and every other span's parent in the file. It
// returns the root.
func checkRolloutTree(c *rolloutChecks, tc gymsimCase, r string, spans []outSpan, job *outSpan) outSpan {
	got := map[string]bool{}
	for _, s := range spans {
		got[s.SpanID] = true
	}
	var roots []outSpan
	for _, s := range spans {
		if s.ParentSpanID == "" {
			roots = append(roots, s)
			continue
		}
		c.roots.check(got[s.ParentSpanID], "rollout %s: parent %s of %s %q (%s) is not in the file", r, s.ParentSpanID, s.SpanID, s.Name, s.service())
	}
	var names []string
	for _, s := range roots {
		names = append(names, fmt.Sprintf("%s %q (%s)", s.SpanID, s.Name, s.service()))
	}
	if !c.roots.check(len(roots) == 1, "rollout %s has %d roots: %s", r, len(roots), strings.Join(names, ", ")) {
		return outSpan{}
	}
	root := roots[0]

	// The root is the span that got R upward: the orchestrator's CLIENT call
	// to /run, or without CLIENT spans the agent's POST /run.
	if tc.httpClient {
		c.rootKind.check(root.Name == "HTTP POST" && root.Kind == "SpanKind.CLIENT" && root.service() == "nemo-gym/orchestrator",
			"root of %s is %q %s (%s)", r, root.Name, root.Kind, root.service())
	} else {
		c.rootKind.check(root.Name == "POST /run" && root.Kind == "SpanKind.SERVER", "root of %s is %q %s (%s)", r, root.Name, root.Kind, root.service())
	}
	// A root cut from gym.job links to it (link type job); others were roots.
	var jobLinks []outLink
	for _, l := range root.Links {
		if l.linkType() == "job" || l.linkType() == "parent" {
			jobLinks = append(jobLinks, l)
		}
	}
	if tc.job && tc.httpClient {
		if c.jobLink.check(len(jobLinks) == 1, "root of %s has %d job/parent links", r, len(jobLinks)) {
			ltid, lsid := jobLinks[0].ids()
			// The type is "job" when gym.job had arrived when the root was cut,
			// "parent" when it was cut before (gym.job ends after every rollout,
			// and a decision is never revisited).
			c.jobLink.check(ltid == job.TraceID && lsid == job.SpanID,
				"root of %s links to %s/%s (%s), want gym.job %s/%s", r, ltid, lsid, jobLinks[0].linkType(), job.TraceID, job.SpanID)
		}
	} else {
		c.jobLink.check(len(jobLinks) == 0, "root of %s, never cut, has %d job/parent links", r, len(jobLinks))
	}
	return root
}

// checkSynthetic checks design §4.4's repair without http_client: each
// parentless SERVER span with direct evidence gets a synthesized CLIENT parent
// whose parent is its rollout's gym.rollout, in the agent's service.
func checkSynthetic(t *testing.T, tc gymsimCase, run *gymsimRun, synthetic []outSpan, byID map[string]outSpan) {
	t.Helper()
	if tc.httpClient {
		assert.Empty(t, synthetic, "no synthesized spans when every SERVER span has its CLIENT")
		return
	}
	gymRollout := map[string]string{} // rollout → gym.rollout span id
	for _, s := range run.truth {
		if s.Name == "gym.rollout" {
			gymRollout[s.RolloutID] = s.SpanID
		}
	}
	synth := newTally(t, "synthesized CLIENT parents of parentless SERVER spans with evidence (§4.4)")
	want := 0
	for _, ts := range run.truth {
		s := byID[ts.SpanID]
		if ts.Kind != "SERVER" || ts.RolloutID == "" || s.Name == "POST /run" {
			continue
		}
		want++
		parent, ok := byID[s.ParentSpanID]
		if !synth.check(ok && parent.synthetic(), "SERVER span %s %q of %s: parent %q is not a synthesized span", s.SpanID, s.Name, ts.RolloutID, s.ParentSpanID) {
			continue
		}
		wantID := syntheticSpanID(t, s.TraceID, s.SpanID)
		synth.check(parent.Name == "HTTP POST" && parent.Kind == "SpanKind.CLIENT" && parent.SpanID == wantID &&
			parent.ParentSpanID == gymRollout[ts.RolloutID] &&
			parent.service() == "nemo-gym/example_single_tool_call_simple_agent" &&
			parent.str("nemo.gym.rollout.id") == ts.RolloutID,
			"synthesized parent of %s: %q %s id %s parent %s (%s) rollout %q; want HTTP POST CLIENT id %s parent gym.rollout %s (agent) rollout %q",
			s.SpanID, parent.Name, parent.Kind, parent.SpanID, parent.ParentSpanID, parent.service(), parent.str("nemo.gym.rollout.id"),
			wantID, gymRollout[ts.RolloutID], ts.RolloutID)
	}
	synth.report()
	assert.Len(t, synthetic, want, "one synthesized CLIENT per parentless SERVER span with evidence")
}

// checkJobLinks: the job span keeps its trace and links to the rollout roots
// cut from it, at most 128, those with the smallest T' (§4.3).
func checkJobLinks(t *testing.T, tc gymsimCase, job *outSpan, roots map[string]outSpan) {
	t.Helper()
	if job == nil {
		return
	}
	if !tc.httpClient || !tc.observability {
		assert.Empty(t, job.Links, "no rollout was cut from the job's trace")
		return
	}
	assert.EqualValues(t, len(roots), job.Attributes["nemo.gym.split.rollouts"], "nemo.gym.split.rollouts")
	var want []string
	for _, root := range roots {
		want = append(want, root.TraceID+"/"+root.SpanID)
	}
	sort.Strings(want)
	if len(want) > 128 {
		want = want[:128]
	}
	var got []string
	for _, l := range job.Links {
		tid, sid := l.ids()
		got = append(got, tid+"/"+sid)
	}
	sort.Strings(got)
	assert.Equal(t, want, got, "gym.job links to the rollout roots")
}

// checkRolloutsFile: rollouts.jsonl lists every rollout once with its trace
// and root (§5.1).
func checkRolloutsFile(t *testing.T, tc gymsimCase, run *gymsimRun, roots map[string]outSpan) {
	t.Helper()
	path := filepath.Join(run.dir, "rollouts.jsonl")
	if !tc.observability {
		b, err := os.ReadFile(path)
		if !errors.Is(err, os.ErrNotExist) {
			require.NoError(t, err)
			assert.Empty(t, strings.TrimSpace(string(b)), "rollouts.jsonl without rollouts")
		}
		return
	}
	type line struct {
		RolloutID  string `json:"rollout_id"`
		RunID      string `json:"run_id"`
		TraceID    string `json:"trace_id"`
		RootSpanID string `json:"root_span_id"`
	}
	lines := newTally(t, "rollouts.jsonl: one line per rollout with its trace and root (§5.1)")
	seen := map[string]bool{}
	for _, l := range readJSONLines[line](t, path) {
		if run.runID != "" && l.RunID != run.runID {
			continue // another run sharing the capture dir
		}
		lines.check(!seen[l.RolloutID], "rollout %s twice", l.RolloutID)
		seen[l.RolloutID] = true
		root, ok := roots[l.RolloutID]
		if !lines.check(ok, "names rollout %q, which has no single root", l.RolloutID) {
			continue
		}
		lines.check(l.RunID == run.run() && l.TraceID == root.TraceID && l.RootSpanID == root.SpanID,
			"rollout %s: run %q trace %s root %s, want %q %s %s", l.RolloutID, l.RunID, l.TraceID, l.RootSpanID, run.run(), root.TraceID, root.SpanID)
	}
	lines.report()
	assert.Len(t, seen, len(run.rolloutIDs()), "rollouts in rollouts.jsonl")
}

// checkPreviousAttempts: a re-dispatched attempt's root links to the root of
// the attempt before it (§4.3).
func checkPreviousAttempts(t *testing.T, roots map[string]outSpan) {
	t.Helper()
	prev := newTally(t, "a re-dispatched attempt's root links to the previous attempt's root (§4.3)")
	for r, root := range roots {
		i := strings.LastIndex(r, "-a")
		if i < 0 {
			continue
		}
		first, ok := roots[r[:i]]
		if !prev.check(ok, "the first attempt of %s has no single root", r) {
			continue
		}
		var links []string
		for _, l := range root.Links {
			if l.linkType() == "previous_attempt" {
				tid, sid := l.ids()
				links = append(links, tid+"/"+sid)
			}
		}
		prev.check(len(links) == 1 && links[0] == first.TraceID+"/"+first.SpanID, "root of %s links to %v, want [%s/%s]", r, links, first.TraceID, first.SpanID)
	}
	prev.report()
}

// checkPeerService: every CLIENT span gets peer.service, the service of the
// SERVER span it called, or at worst the host:port it called (§4.4); a
// CLIENT span with no SERVER span (the model server's call to its LLM, as in
// Gym) gets the host:port.
func checkPeerService(t *testing.T, tc gymsimCase, run *gymsimRun, byID map[string]outSpan) {
	t.Helper()
	child := map[string]outSpan{} // CLIENT span id → its SERVER child
	for _, s := range run.combined {
		if s.Kind == "SpanKind.SERVER" && s.ParentSpanID != "" {
			child[s.ParentSpanID] = s
		}
	}
	peers := newTally(t, "peer.service of CLIENT spans (§4.4)")
	for _, ts := range run.truth {
		if ts.Kind != "CLIENT" {
			continue
		}
		s := byID[ts.SpanID]
		peer := s.str("peer.service")
		hostPort := strings.SplitN(strings.TrimPrefix(s.str("url.full"), "http://"), "/", 2)[0]
		srv, ok := child[s.SpanID]
		if !ok {
			require.True(t, strings.HasSuffix(s.str("url.full"), "/v1/responses") && s.service() == "nemo-gym/policy_model",
				"CLIENT span %s to %s has a SERVER child", s.SpanID, s.str("url.full"))
			peers.check(peer == hostPort, "CLIENT %s to the LLM %s: peer.service %q, want %q", s.SpanID, s.str("url.full"), peer, hostPort)
			continue
		}
		peers.check(peer == srv.service() || peer == hostPort, "CLIENT %s to %s: peer.service %q, want %q (or %q)", s.SpanID, s.str("url.full"), peer, srv.service(), hostPort)
	}
	peers.report()
}

// checkServiceMapFile: service_map.json holds one edge per (client service,
// server service) pair of the run, with a call for each CLIENT span whose
// peer.service is another service (§5.1); a peer.service that is the
// host:port called counts on the edge to the service of the SERVER span it
// called (the service map folds addresses it learned from SERVER spans), so
// no edge names a host:port but one no SERVER span answered from (the
// model server's LLM); every CLIENT → SERVER hop between two services is
// among them; service_map.md draws them.
func checkServiceMapFile(t *testing.T, run *gymsimRun) {
	t.Helper()
	want := map[string]uint64{}
	hops := map[string]bool{}
	byID := map[string]outSpan{}
	child := map[string]outSpan{} // CLIENT span id → its SERVER child
	for _, s := range run.combined {
		byID[s.SpanID] = s
		if s.Kind == "SpanKind.SERVER" && s.ParentSpanID != "" {
			child[s.ParentSpanID] = s
		}
	}
	byAddress := 0
	external := map[string]bool{} // host:port of CLIENT spans that no SERVER span answered
	for _, s := range run.combined {
		peer := s.str("peer.service")
		if _, answered := child[s.SpanID]; s.Kind == "SpanKind.CLIENT" && !answered {
			external[peer] = true
		}
		if srv, ok := child[s.SpanID]; ok && peer == strings.SplitN(strings.TrimPrefix(s.str("url.full"), "http://"), "/", 2)[0] {
			peer = srv.service()
			byAddress++
		}
		if s.Kind == "SpanKind.CLIENT" && peer != "" && peer != s.service() {
			want[s.service()+" -> "+peer]++
		}
		if s.Kind != "SpanKind.SERVER" {
			continue
		}
		client, ok := byID[s.ParentSpanID]
		if ok && client.Kind == "SpanKind.CLIENT" && client.service() != s.service() {
			hops[client.service()+" -> "+s.service()] = true
		}
	}
	for hop := range hops {
		assert.Contains(t, want, hop, "the hop %s is an edge", hop)
	}
	var doc struct {
		Edges []struct {
			Run    string `json:"run"`
			Client string `json:"client"`
			Server string `json:"server"`
			Calls  uint64 `json:"calls"`
		} `json:"edges"`
	}
	b, err := os.ReadFile(filepath.Join(run.dir, "service_map.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &doc))
	got := map[string]uint64{}
	for _, e := range doc.Edges {
		if run.runID != "" && e.Run != run.runID {
			continue // another run sharing the capture dir
		}
		assert.Equal(t, run.run(), e.Run, "run of edge %s -> %s", e.Client, e.Server)
		got[e.Client+" -> "+e.Server] += e.Calls
		if !external[e.Server] {
			assert.NotRegexp(t, `^[^\s:/]+:\d+$|^\[.*\]:\d+$`, e.Server, "edge %s -> %s: a host:port left unfolded", e.Client, e.Server)
		}
	}
	assert.Equal(t, want, got, "service_map.json edges and calls")
	t.Logf("service_map.json: %d edges, %d calls named by host:port folded", len(got), byAddress)
	md, err := os.ReadFile(filepath.Join(run.dir, "service_map.md"))
	require.NoError(t, err)
	assert.Contains(t, string(md), "flowchart")
	for edge := range want {
		for _, svc := range strings.Split(edge, " -> ") {
			assert.Contains(t, string(md), strconv.Quote(svc), "service_map.md names %s", svc)
		}
	}
}

// tally collects the failures of one check over many spans and reports how
// many failed with the first few, instead of one assertion per span.
type tally struct {
	t        *testing.T
	what     string
	n, total int
	first    []string
}

func newTally(t *testing.T, what string) *tally { return &tally{t: t, what: what} }

func (c *tally) check(ok bool, format string, args ...any) bool {
	c.total++
	if !ok {
		c.n++
		if len(c.first) < 5 {
			c.first = append(c.first, fmt.Sprintf(format, args...))
		}
	}
	return ok
}

func (c *tally) report() {
	c.t.Helper()
	if c.n > 0 {
		c.t.Errorf("%s: %d of %d wrong, e.g.\n  %s", c.what, c.n, c.total, strings.Join(c.first, "\n  "))
	}
}
