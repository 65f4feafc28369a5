// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The viewer of a real Gym run while it runs (issues #34 and #37, design
// §8): a run whose telemetry is off, and a rollout that stalls.

// realGymStalledAfter is the gymview extension's stalled_after in the
// stalled run: well above the time a finished rollout waits for its root to
// reach rollouts.jsonl (the SDK's batch delay and the gym processor's
// settle, 5 s each), so that only the held rollout stalls.
const realGymStalledAfter = 20 * time.Second

// TestRealGymTelemetryOff (issue #34 acceptance 2): Gym run as the README
// tells a user, Gym's telemetry asked for (NEMO_GYM_OTEL_ENABLED=1) but off
// (no nemo-lens in the venv: Gym says so only in its DEBUG log), no generic
// instrumentation, observability_enabled on so the captures are written.
// The collector warns within 60 s of the first capture line that Gym's
// telemetry is off, naming the causes and the fix, and the viewer lists the
// run's rollouts from their captures under the banner.
func TestRealGymTelemetryOff(t *testing.T) {
	venv := realGymVenv(t)
	chromiumPath(t)
	m := realGymMode{name: "telemetry_off", runID: "realgymoff1", uninstrumented: true,
		env: []string{"NEMO_GYM_OTEL_ENABLED=1", "NEMO_GYM_OTEL_RUN_ID=realgymoff1"}}
	live := &realGymLive{telemetryOff: true}
	run := runRealGym(t, venv, m, realGymOpts{observability: true, live: live})
	require.Len(t, run.rollouts, realGymTasks*realGymRepeats)
	_, err := os.Stat(filepath.Join(run.captureDir, "rollouts.jsonl"))
	assert.True(t, os.IsNotExist(err), "no span arrived: no rollouts.jsonl")
}

// stallWatch is the stall check of issue #37's acceptance 2, made in
// TestRealGym's run with generic OpenTelemetry instrumentation (a run of its
// own would cost CI another Gym start-up): the stub model holds the first
// model call of one rollout far past stalled_after. The viewer shows that
// rollout stalled within stalled_after + 5 s of its last sign of life (its
// seed_session call returning), waiting on the model server's
// /v1/responses; the gauge says 1; once the call is let go the rollout
// completes, the gauge says 0, and the run passes every check of
// TestRealGym. (A call held later in the episode shows as "the tool it
// asked for, or the model call after it": a tool call's spans reach the
// capture dir only when the agent's episode ends; design §8.)
func stallWatch(m realGymMode) *realGymLive {
	if m.name != stallWatchMode {
		return nil
	}
	return &realGymLive{stall: true, runID: m.runID, modelService: m.model}
}

const stallWatchMode = "generic_otel"

// TestRealGymStallWatched: one of TestRealGym's modes carries the stall
// check (a renamed mode would drop it without a word otherwise).
func TestRealGymStallWatched(t *testing.T) {
	n := 0
	for _, m := range realGymModes() {
		if stallWatch(m) != nil {
			n++
		}
	}
	require.Equal(t, 1, n, "TestRealGym modes that watch a stalled rollout (stallWatchMode %q)", stallWatchMode)
}

// realGymLive watches one real run's viewer: it adds the gymview extension's
// settings to the collector's config, makes the stub model hold a call, and
// checks the viewer while the run goes on. A nil *realGymLive does nothing.
type realGymLive struct {
	telemetryOff bool   // Gym's telemetry is off: no span is expected
	stall        bool   // the stub holds one call past stalled_after
	runID        string // the run's nemo.run.id
	modelService string // the model server's service name

	t     *testing.T
	col   *collector
	p     ports
	run   *realGymRun
	model *stubModel
	b     *browser
	done  chan struct{}
	seen  stallSeen
}

// stallSeen is what the stall watcher saw, checked on the test's goroutine.
type stallSeen struct {
	err       error
	held      time.Time // the hold began
	row       map[string]any
	idleMS    float64 // the stalled row's idle when the viewer first showed it
	pageWhere string  // Chromium's stalled row: where it was last seen
	pageWaits string  // and what it waits on
	gauge     float64
}

// config returns the collector config edit: edit, then the gymview
// extension's stalled_after.
func (l *realGymLive) config(edit func(string) string) func(string) string {
	if l == nil || !l.stall {
		return edit
	}
	return func(cfg string) string {
		if edit != nil {
			cfg = edit(cfg)
		}
		return strings.Replace(cfg, "stalled_after: 5m", "stalled_after: "+realGymStalledAfter.String(), 1)
	}
}

func (l *realGymLive) start(t *testing.T, run *realGymRun, col *collector, p ports, model *stubModel) {
	if l == nil {
		return
	}
	l.t, l.run, l.col, l.p, l.model = t, run, col, p, model
	if l.telemetryOff || hasChromium() {
		l.b = newBrowser(t, fmt.Sprintf("http://127.0.0.1:%d", p.View))
	} else {
		t.Log("no Chromium: the stalled rollout is checked through the viewer's API only")
	}
	if !l.stall {
		return
	}
	model.hold = make(chan struct{})
	model.held = make(chan struct{})
	l.done = make(chan struct{})
	go func() {
		defer close(l.done)
		defer close(model.hold) // the call goes on whatever was seen
		l.seen.err = l.watchStall()
	}()
}

// wait runs after `gym eval run`: it joins the stall watcher and checks
// what it saw, or checks the telemetry-off run.
func (l *realGymLive) wait() {
	if l == nil {
		return
	}
	if l.stall {
		<-l.done
		l.checkStall()
	}
	if l.telemetryOff {
		l.checkTelemetryOff()
	}
}

func (l *realGymLive) noSpans() bool { return l != nil && l.telemetryOff }

// watchStall runs beside `gym eval run` (on its own goroutine: it returns
// what it saw, the test's goroutine checks it).
func (l *realGymLive) watchStall() error {
	select {
	case <-l.model.held:
		l.seen.held = time.Now()
	case <-time.After(5 * time.Minute):
		return fmt.Errorf("the stub model never held a call")
	}
	// The viewer's API, polled: the first answer that lists the rollout
	// stalled on its model call.
	deadline := l.seen.held.Add(realGymStalledAfter + time.Minute)
	for l.seen.row == nil {
		if time.Now().After(deadline) {
			return fmt.Errorf("no rollout was shown stalled within %s of the hold", realGymStalledAfter+time.Minute)
		}
		time.Sleep(100 * time.Millisecond) // poll interval, not synchronization
		var page struct {
			Stalled []map[string]any `json:"stalled"`
		}
		if getJSON(fmt.Sprintf("http://127.0.0.1:%d/api/rollouts?run=%s", l.p.View, l.runID), &page) != nil {
			continue
		}
		for _, r := range page.Stalled {
			st, _ := r["stalled"].(map[string]any)
			w, _ := st["waits_on"].(map[string]any)
			if c, _ := w["call"].(string); strings.Contains(c, "/v1/responses") {
				l.seen.row, l.seen.idleMS = r, st["idle_ms"].(float64)
			}
		}
	}
	if l.b != nil {
		if err := l.watchStallPage(); err != nil {
			return err
		}
	}
	// The gauge, once the watcher's next round recorded it.
	gaugeDeadline := time.Now().Add(30 * time.Second)
	for l.seen.gauge = l.stalledGauge(); l.seen.gauge != 1 && time.Now().Before(gaugeDeadline); l.seen.gauge = l.stalledGauge() {
		time.Sleep(100 * time.Millisecond) // poll interval, not synchronization
	}
	return nil
}

// watchStallPage finds the stalled rollout on its run's page in Chromium.
func (l *realGymLive) watchStallPage() error {
	id := l.seen.row["id"].(string)
	u := fmt.Sprintf("%s/?load=stall#/run?run=%s", l.b.base.String(), l.runID)
	sel := fmt.Sprintf(`#stalled tr.stalled-row[data-id=%q]`, id)
	if err := chromedp.Do(l.b.ctx, chromedp.Navigate(u)); err != nil {
		return err
	}
	if _, err := chromedp.Run(l.b.ctx, chromedp.Poll[bool](`!!document.querySelector('`+sel+`')`, chromedp.WithPollingTimeout(45*time.Second))); err != nil {
		return fmt.Errorf("Chromium: the stalled row of %s: %w", id, err)
	}
	var err error
	if l.seen.pageWhere, err = chromedp.Run(l.b.ctx, chromedp.Evaluate[string](`document.querySelector('`+sel+` td.seen').textContent`)); err != nil {
		return err
	}
	if l.seen.pageWaits, err = chromedp.Run(l.b.ctx, chromedp.Evaluate[string](`document.querySelector('`+sel+` td.waits').textContent`)); err != nil {
		return err
	}
	if png, err := chromedp.Run(l.b.ctx, chromedp.CaptureScreenshot()); err == nil {
		_ = os.WriteFile(filepath.Join(l.run.dir, "viewer-stalled.png"), png, 0o644)
	}
	return nil
}

func (l *realGymLive) stalledGauge() float64 {
	v, _ := scrapeMetric(l.t, l.p.Metrics, "otelcol_extension_gymview_stalled_rollouts", fmt.Sprintf(`nemo_run_id="%s"`, l.runID))
	return v
}

func (l *realGymLive) checkStall() {
	t, s := l.t, l.seen
	require.NoError(t, s.err)
	t.Logf("stalled %v: shown with idle %.1f s (stalled_after %s); where %q, waits on %q", s.row["id"], s.idleMS/1000, realGymStalledAfter, s.pageWhere, s.pageWaits)
	assert.LessOrEqual(t, s.idleMS, float64((realGymStalledAfter + 5*time.Second).Milliseconds()),
		"shown stalled within stalled_after + 5 s of its last sign of life")
	assert.GreaterOrEqual(t, s.idleMS, float64(realGymStalledAfter.Milliseconds()))
	st := s.row["stalled"].(map[string]any)
	waits, seen := st["waits_on"].(map[string]any), st["seen"].(map[string]any)
	assert.Equal(t, l.modelService, waits["server"], "waits on the model server")
	assert.Equal(t, "POST /v1/responses", waits["call"])
	assert.Contains(t, seen["call"], "/seed_session", "last seen: its seed_session call returning")
	if l.b != nil {
		assert.Equal(t, l.modelService+": POST /v1/responses", s.pageWaits, "Chromium shows the same")
		assert.Contains(t, s.pageWhere, "/seed_session")
	}
	assert.Equal(t, 1.0, s.gauge, "otelcol_extension_gymview_stalled_rollouts of the run")
	// Let go, the rollout completes: the gauge says 0, the log said it once.
	pollUntil(t, time.Minute, "the stalled gauge back to 0", func() bool { return l.stalledGauge() == 0 })
	assert.Equal(t, 1, strings.Count(l.col.stderr.String(), "Rollout stalled"), "each stall logged once")
	if l.b != nil {
		l.b.clean()
	}
}

// hasChromium: the stall is checked in Chromium when it is there (always
// under CI, where a missing Chromium fails the browser tests).
func hasChromium() bool {
	if os.Getenv(requireChromium) != "" || os.Getenv("CI") != "" {
		return true
	}
	for _, name := range []string{os.Getenv("CHROMIUM_BIN"), "chromium", "chromium-browser"} {
		if _, err := exec.LookPath(name); name != "" && err == nil {
			return true
		}
	}
	return false
}

// checkTelemetryOff: the warning within 60 s of the first capture line,
// then the viewer, in Chromium.
func (l *realGymLive) checkTelemetryOff() {
	t := l.t
	first := firstCaptureLine(t, l.run.captureDir)
	var warned time.Time
	pollUntil(t, 90*time.Second, "the telemetry-off warning", func() bool {
		warned = logTime(l.col.stderr.String(), "Gym's telemetry is off")
		return !warned.IsZero()
	})
	t.Logf("first capture line %s, warning %s: %.1f s later", first.Format(time.RFC3339Nano), warned.Format(time.RFC3339Nano), warned.Sub(first).Seconds())
	assert.LessOrEqual(t, warned.Sub(first), 60*time.Second, "the warning within 60 s of the first capture line")
	log := l.col.stderr.String()
	for _, s := range []string{"nemo-lens 0.1.0", "did not inherit the telemetry environment", "otelcol-gym instrument -- gym"} {
		assert.Contains(t, log, s)
	}
	assert.Equal(t, 1, strings.Count(log, "Gym's telemetry is off"), "warned once")
	// Each rollout counted once, when its capture file had been without
	// spans for 30 s.
	pollUntil(t, time.Minute, "every rollout counted without spans", func() bool {
		v, _ := scrapeMetric(t, l.p.Metrics, "otelcol_extension_gymview_rollouts_without_spans")
		return v >= float64(len(l.run.rollouts))
	})
	v, _ := scrapeMetric(t, l.p.Metrics, "otelcol_extension_gymview_rollouts_without_spans")
	assert.Equal(t, float64(len(l.run.rollouts)), v, "each rollout counted once")

	b := l.b
	b.open("/", `document.getElementById('no-spans-banner') && document.querySelector('#runs tbody tr[data-run]')`)
	assert.Contains(t, evalJS[string](b, `document.getElementById('no-spans-banner').textContent`),
		fmt.Sprintf("%d rollouts have model-call captures but no spans: Gym's telemetry is off", len(l.run.rollouts)))
	b.click(`#runs tbody tr[data-run] td.id a`)
	b.wait(fmt.Sprintf(`document.body.dataset.page === 'run' && document.querySelectorAll('#rollouts tbody tr.capture-only').length === %d`, len(l.run.rollouts)))
	ids := evalJS[[]string](b, `Array.from(document.querySelectorAll('#rollouts tbody tr.capture-only')).map((r) => r.dataset.id)`)
	assert.ElementsMatch(t, l.run.rollouts, ids, "every rollout Gym ran, listed from its capture")
	calls := evalJS[[]int](b, `Array.from(document.querySelectorAll('#rollouts tbody tr.capture-only td:nth-child(7)')).map((c) => +c.textContent)`)
	for i, n := range calls {
		assert.Equal(t, 2, n, "%s: a tool call and a final answer", ids[i])
	}
	assert.Contains(t, evalJS[string](b, `document.getElementById('no-spans-banner').textContent`), "otelcol-gym instrument -- gym")
	b.shot(l.run.dir, "viewer-telemetry-off.png")
	b.click(`#rollouts tbody tr.capture-only td.id a`)
	b.wait(`document.body.dataset.page === 'rollout' && document.querySelectorAll('#exchange-table tbody tr').length === 2`)
	assert.True(t, evalJS[bool](b, `document.getElementById('waterfall').hidden`))
	b.clean()
}

// firstCaptureLine is when the run's first model exchange completed.
func firstCaptureLine(t *testing.T, dir string) time.Time {
	t.Helper()
	first := math.Inf(1)
	matches, err := filepath.Glob(filepath.Join(dir, "*.capture.jsonl"))
	require.NoError(t, err)
	require.NotEmpty(t, matches)
	for _, m := range matches {
		for _, l := range readJSONLines[struct {
			CompletedAt float64 `json:"completed_at"`
		}](t, m) {
			first = math.Min(first, l.CompletedAt)
		}
	}
	return time.UnixMicro(int64(first * 1e6))
}

// logTime is the timestamp of the collector's first log line that holds s
// (the console encoder starts each line with an ISO 8601 time).
func logTime(log, s string) time.Time {
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, s) {
			continue
		}
		ts, _, _ := strings.Cut(line, "\t")
		if at, err := time.Parse("2006-01-02T15:04:05.000Z0700", ts); err == nil {
			return at
		}
	}
	return time.Time{}
}

func getJSON(url string, v any) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// holdIfAsked holds the first call of the first rollout to ask (one that
// answers no tool output yet) until m.hold is closed, when the test asked
// for it (m.hold set); false when the caller gave up meanwhile.
func (m *stubModel) holdIfAsked(toolAnswered bool, r *http.Request) bool {
	if m.hold == nil || toolAnswered || !m.holding.CompareAndSwap(false, true) {
		return true
	}
	close(m.held)
	select {
	case <-m.hold:
		return true
	case <-r.Context().Done():
		return false
	}
}

// stubHold is what the stub model needs to hold a call.
type stubHold struct {
	hold, held chan struct{}
	holding    atomic.Bool
}
