// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Why a rollout went as it did (issue #37, design §8): the time split of
// each rollouts.jsonl line and Gym's output (`otelcol-gym view
// --gym-output`), shown by the viewer to headless Chromium. The
// expectations are read here from the files themselves, with
// encoding/json, independently of the viewer's readers.

var whyCategories = []string{"model", "tools", "verify", "agent", "queue", "other"}

// whyExpect is what the files say of a run's rollouts.
type whyExpect struct {
	ids       []string // rollouts of the run in rollouts.jsonl, sorted
	split     map[string][]float64
	reward    map[string]float64
	verdict   map[string]string
	failed    map[string]bool // Gym names a failure kind, or dropped the rollout
	unhealthy map[string]bool
	malformed int // rows of Gym's output files that name no rollout or are no JSON object
}

func readWhyExpect(t *testing.T, captureDir, gymDir, run string) whyExpect {
	t.Helper()
	e := whyExpect{split: map[string][]float64{}, reward: map[string]float64{}, verdict: map[string]string{}, failed: map[string]bool{}, unhealthy: map[string]bool{}}
	for _, l := range readJSONLines[struct {
		ID    string             `json:"rollout_id"`
		Run   string             `json:"run_id"`
		Split map[string]float64 `json:"time_split_ms"`
	}](t, filepath.Join(captureDir, "rollouts.jsonl")) {
		if l.Run != run {
			continue
		}
		if !slices.Contains(e.ids, l.ID) {
			e.ids = append(e.ids, l.ID)
		}
		if l.Split != nil {
			var ms []float64
			for _, c := range whyCategories {
				v, ok := l.Split[c]
				require.True(t, ok, "%s: time_split_ms without %s", l.ID, c)
				ms = append(ms, v)
			}
			e.split[l.ID] = ms
		}
	}
	sort.Strings(e.ids)
	scored := map[string]bool{}
	for _, name := range []string{"rollouts.jsonl", "rollouts_failures.jsonl"} {
		for _, row := range gymRows(t, filepath.Join(gymDir, name), &e.malformed) {
			id := gymID(row)
			if id == "" {
				e.malformed++
				continue
			}
			if name == "rollouts_failures.jsonl" {
				if !scored[id] {
					e.failed[id] = true
				}
				continue
			}
			scored[id] = true
			if r, ok := row["reward"].(float64); ok {
				e.reward[id] = r
			}
			if k, _ := row["failure_kind"].(string); k != "" {
				e.failed[id] = true
			}
		}
	}
	for _, row := range gymRows(t, filepath.Join(gymDir, "rollout_verdicts.jsonl"), &e.malformed) {
		id, _ := row["rollout_id"].(string)
		v, _ := row["verdict"].(string)
		e.verdict[id] = v
		if v == "unhealthy" {
			e.unhealthy[id] = true
		}
	}
	// Gym's rows of ids that are no rollout of the run are shown nowhere.
	for _, m := range []map[string]bool{e.failed, e.unhealthy} {
		for id := range m {
			if !slices.Contains(e.ids, id) {
				delete(m, id)
			}
		}
	}
	return e
}

// gymRows reads a JSON-lines file of Gym's output, whole rows, counting
// the lines that are no JSON object (a missing file has none).
func gymRows(t *testing.T, path string, malformed *int) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	defer f.Close()
	var rows []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var row map[string]any
		if json.Unmarshal(sc.Bytes(), &row) != nil || row == nil {
			*malformed++
			continue
		}
		rows = append(rows, row)
	}
	require.NoError(t, sc.Err())
	return rows
}

// gymID is a row's rollout id as Gym makes it: _ng_rollout_id, else
// <task>-<rollout>, then -a<k> for an attempt k > 0.
func gymID(row map[string]any) string {
	id, _ := row["_ng_rollout_id"].(string)
	if id == "" {
		task, ok1 := row["_ng_task_index"]
		rollout, ok2 := row["_ng_rollout_index"]
		if !ok1 || !ok2 {
			return ""
		}
		id = fmt.Sprintf("%v-%v", task, rollout)
	}
	if a, ok := row["_ng_attempt_index"].(float64); ok && a > 0 {
		id += fmt.Sprintf("-a%d", int(a))
	}
	return id
}

// whyRow is a row of the rollout list as the page shows it.
type whyRow struct {
	ID, Reward, Verdict, Failure string
	MS                           map[string]string
}

func whyRows(b *browser) []whyRow {
	return evalJS[[]whyRow](b, `Array.from(document.querySelectorAll('#rollouts tbody tr[data-id]'), (r) => ({
		ID: r.dataset.id, Reward: r.querySelector('td.reward').dataset.reward, Verdict: r.querySelector('td.verdict').textContent,
		Failure: r.querySelector('td.gym-failure').textContent,
		MS: Object.fromEntries(Array.from(r.querySelectorAll('td.split-col'), (c) => [c.dataset.category, c.dataset.ms]))}))`)
}

func parseMS(t *testing.T, s string) (float64, bool) {
	t.Helper()
	if s == "" {
		return 0, false
	}
	v, err := strconv.ParseFloat(s, 64)
	require.NoError(t, err)
	return v, true
}

// clickAndLoad clicks sel and waits for the page to draw again.
func clickAndLoad(b *browser, sel string) {
	b.t.Helper()
	before := evalJS[string](b, `document.getElementById('main').dataset.loaded`)
	b.click(sel)
	b.wait(`document.getElementById('main').dataset.loaded !== ` + jsString(before))
}

// checkWhyList: the run page shows every rollout's reward, verdict, Gym
// failure and split as the files say; the columns sort (rollouts without
// a value last, either way) and the filters keep exactly Gym's failed or
// unhealthy rollouts; the percentiles are the files'.
func checkWhyList(t *testing.T, b *browser, e whyExpect, run, shots string) {
	t.Helper()
	b.open("/run?run="+run+"&sort=id&order=asc&limit=1000", `document.getElementById('main').dataset.loaded`)
	require.Equal(t, []bool{true, true}, evalJS[[]bool](b, `['th.split-col', 'th.gym-col'].map((s) => getComputedStyle(document.querySelector('#rollouts ' + s)).display !== 'none')`),
		"the split and Gym's columns are shown")
	rows := whyRows(b)
	require.Len(t, rows, len(e.ids))
	for i, r := range rows {
		require.Equal(t, e.ids[i], r.ID)
		if want, ok := e.reward[r.ID]; ok {
			got, _ := parseMS(t, r.Reward)
			assert.Equal(t, want, got, "%s: reward", r.ID)
		} else {
			assert.Empty(t, r.Reward, "%s: no reward", r.ID)
		}
		assert.Equal(t, firstNonEmpty(e.verdict[r.ID], "–"), r.Verdict, "%s: verdict", r.ID)
		assert.Equal(t, e.failed[r.ID], r.Failure != "", "%s: Gym failure %q", r.ID, r.Failure)
		for c, name := range whyCategories {
			got, ok := parseMS(t, r.MS[name])
			want, has := e.split[r.ID]
			require.Equal(t, has, ok, "%s: %s shown", r.ID, name)
			if has {
				assert.Equal(t, want[c], got, "%s: %s ms", r.ID, name)
			}
		}
	}
	b.shot(shots, "why-run.png")

	// Sorting by a category, then by reward: values in order, none last.
	for _, sortBy := range []struct {
		head  string
		value func(whyRow) (float64, bool)
	}{
		{`th[data-sort="model_ms"]`, func(r whyRow) (float64, bool) { return parseMS(t, r.MS["model"]) }},
		{`th[data-sort="reward"]`, func(r whyRow) (float64, bool) { return parseMS(t, r.Reward) }},
	} {
		for click := 0; click < 2; click++ {
			clickAndLoad(b, "#rollouts "+sortBy.head)
			asc := evalJS[bool](b, `document.querySelector('#rollouts `+sortBy.head+`').classList.contains('asc')`)
			var seen []float64
			missing := false
			for _, r := range whyRows(b) {
				v, ok := sortBy.value(r)
				if !ok {
					missing = true
					continue
				}
				require.False(t, missing, "%s: a row with a value after one without", sortBy.head)
				seen = append(seen, v)
			}
			sorted := slices.IsSorted(seen)
			if !asc {
				slices.Reverse(seen)
				sorted = slices.IsSorted(seen)
			}
			assert.True(t, sorted, "%s (asc %v): %v", sortBy.head, asc, seen)
		}
	}

	// The filters, by click and by key.
	filtered := func() map[string]bool {
		got := map[string]bool{}
		for _, r := range whyRows(b) {
			got[r.ID] = true
		}
		return got
	}
	clickAndLoad(b, "#gym-failed-only")
	assert.Equal(t, e.failed, filtered(), "Gym failure only")
	clickAndLoad(b, "#gym-failed-only")
	before := evalJS[string](b, `document.getElementById('main').dataset.loaded`)
	b.key("u")
	b.wait(`document.getElementById('unhealthy-only').checked && document.getElementById('main').dataset.loaded !== ` + jsString(before))
	assert.Equal(t, e.unhealthy, filtered(), "unhealthy only")

	// p50, p90 and max of each category.
	type stat struct{ Name, P50, P90, Max string }
	stats := evalJS[[]stat](b, `Array.from(document.querySelectorAll('#split-stats tr[data-category]'), (r) => ({
		Name: r.dataset.category, P50: r.querySelector('.p50').dataset.ms, P90: r.querySelector('.p90').dataset.ms, Max: r.querySelector('.max').dataset.ms}))`)
	require.Len(t, stats, len(whyCategories))
	for c, s := range stats {
		require.Equal(t, whyCategories[c], s.Name)
		var vals []float64
		for _, ms := range e.split {
			vals = append(vals, ms[c])
		}
		slices.Sort(vals)
		rank := func(p float64) float64 { return vals[int(math.Ceil(p*float64(len(vals))))-1] }
		for _, q := range []struct {
			got  string
			want float64
		}{{s.P50, rank(0.5)}, {s.P90, rank(0.9)}, {s.Max, vals[len(vals)-1]}} {
			got, _ := parseMS(t, q.got)
			assert.Equal(t, q.want, got, "%s", s.Name)
		}
	}
	if e.malformed > 0 {
		assert.Contains(t, evalJS[string](b, `document.getElementById('gym-malformed').textContent`), fmt.Sprintf("%d malformed rows", e.malformed))
	}
	noMarkupRan(t, b, "why list")
}

// checkWhyRollouts: each rollout page shows its split as a bar (six parts,
// each its share of the split's time) and Gym's reward and verdict.
func checkWhyRollouts(t *testing.T, b *browser, e whyExpect, run, shots string) {
	t.Helper()
	for _, id := range e.ids {
		b.open("/rollout?run="+run+"&id="+id, `document.getElementById('rollout-head').children.length`)
		ms, hasSplit := e.split[id]
		if hasSplit {
			type part struct {
				Category, MS string
				Width        float64
			}
			parts := evalJS[[]part](b, `Array.from(document.querySelectorAll('#split .split-bar .part'), (p) => ({Category: p.dataset.category, MS: p.dataset.ms, Width: parseFloat(p.style.width)}))`)
			require.Len(t, parts, len(whyCategories), id)
			total := 0.0
			for _, v := range ms {
				total += v
			}
			for c, p := range parts {
				assert.Equal(t, whyCategories[c], p.Category)
				got, _ := parseMS(t, p.MS)
				assert.Equal(t, ms[c], got, "%s: %s", id, p.Category)
				assert.InDelta(t, 100*ms[c]/total, p.Width, 0.01, "%s: %s's share of the bar", id, p.Category)
			}
		} else {
			assert.Zero(t, evalJS[int](b, `document.querySelectorAll('#split .split-bar').length`), "%s: no split, no bar", id)
		}
		reward, hasReward := e.reward[id]
		got, ok := parseMS(t, evalJS[string](b, `(document.getElementById('gym-reward') || {dataset: {}}).dataset.reward || ''`))
		assert.Equal(t, hasReward, ok, "%s: reward shown", id)
		assert.Equal(t, reward, got, "%s: reward", id)
		if v := e.verdict[id]; v != "" {
			assert.Equal(t, v, evalJS[string](b, `document.querySelector('#gym-verdict .badge').textContent`), "%s: verdict", id)
		}
		if hasSplit && e.verdict[id] != "" && evalJS[int](b, `document.querySelectorAll('#waterfall .span-row').length`) > 0 {
			b.shot(shots, "why-rollout.png")
		}
		noMarkupRan(t, b, "rollout "+id)
	}
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// TestViewerWhy: on a recorded real Gym run with its split and Gym's
// output (internal/gymview/testdata/realgym_why: malformed rows, a dropped
// rollout, markup in a failure and a finding), `otelcol-gym view
// --gym-output` shows the bar, the columns and their sorts, reward and
// verdict, and the filters; nothing from the files runs.
func TestViewerWhy(t *testing.T) {
	chromiumPath(t)
	src := filepath.Join(repoRoot(t), "internal", "gymview", "testdata", "realgym_why")
	captures, gymOut := filepath.Join(src, "captures"), filepath.Join(src, "gym-output")
	const run = "realgymlens1"
	e := readWhyExpect(t, captures, gymOut, run)
	require.NotEmpty(t, e.failed)
	require.NotEmpty(t, e.unhealthy)
	require.NotZero(t, e.malformed)
	require.Less(t, len(e.split), len(e.ids), "a rollout without a split")

	v := startViewer(t, captures, "--gym-output", gymOut)
	b := newBrowser(t, v.base)
	shots := shotsDir(t)
	checkWhyList(t, b, e, run, shots)
	checkWhyRollouts(t, b, e, run, shots)

	// Markup in Gym's strings is shown as text.
	b.open("/rollout?run="+run+"&id=2-1", `document.getElementById('gym-result')`)
	text := evalJS[string](b, `document.getElementById('gym-result').innerText`)
	for _, s := range []string{`<script>alert("kind")</script>`, `<img src=x onerror=alert("reason")>`, `<script>alert("check")</script>`, `<img src=x onerror=alert("finding")>`} {
		assert.Contains(t, text, s)
	}
	noMarkupRan(t, b, "Gym's result")
	b.clean()
}
