// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymview

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// liveClock is a fake clock for the live state: the handler's now, and the
// mtimes of the files a test writes.
type liveClock struct{ t time.Time }

func (c *liveClock) now() time.Time               { return c.t }
func (c *liveClock) advance(d time.Duration)      { c.t = c.t.Add(d) }
func (c *liveClock) at(d time.Duration) time.Time { return c.t.Add(d) }

func newLiveHandler(t *testing.T, dir string, stalledAfter time.Duration, clk *liveClock) *Handler {
	t.Helper()
	h, err := New(Options{CaptureDir: dir, StalledAfter: stalledAfter})
	require.NoError(t, err)
	t.Cleanup(func() { h.Close() })
	h.now = clk.now
	return h
}

// rescan makes the next request scan the directory (the scan waits a
// second of real time otherwise).
func rescan(h *Handler) { h.scan.next = time.Time{} }

// captureLine is one Gym capture line of the responses dialect that
// completed at end; tool, when set, is the function the model called.
func captureLine(end time.Time, latency time.Duration, status int, tool string, in, out int) string {
	output := []any{map[string]any{"type": "message", "role": "assistant", "content": []any{}}}
	if tool != "" {
		output = []any{map[string]any{"type": "function_call", "name": tool, "call_id": "call_1", "arguments": "{}"}}
	}
	b, _ := json.Marshal(map[string]any{
		"model_call_id": "m", "dialect": "responses", "model_ref": map[string]any{"type": "responses_api_models", "name": "policy_model"},
		"started_at": float64(end.Add(-latency).UnixMicro()) / 1e6, "completed_at": float64(end.UnixMicro()) / 1e6,
		"latency_ms": float64(latency.Milliseconds()), "status_code": status,
		"request":  map[string]any{"model": "stub", "input": "what is the weather in sf?"},
		"response": map[string]any{"id": "resp_1", "output": output, "status": "completed", "usage": map[string]any{"input_tokens": in, "output_tokens": out}},
	})
	return string(b) + "\n"
}

// writeAt appends s to dir/name and sets the file's mtime to mtime.
func writeAt(t *testing.T, dir, name, s string, mtime time.Time) {
	t.Helper()
	appendFile(t, filepath.Join(dir, name), s)
	require.NoError(t, os.Chtimes(filepath.Join(dir, name), mtime, mtime))
}

func listOf(t *testing.T, h *Handler, run string) listPage {
	t.Helper()
	q, ok := parseListQuery(map[string][]string{"run": {run}})
	require.True(t, ok)
	return h.list(q)
}

// TestCaptureOnlyRollouts: capture files without spans are listed, from
// their capture lines alone, once they have been without spans for 30 s
// (not before: a healthy rollout's spans arrive within seconds); a rollout
// whose last exchange asked for a tool is in flight, one that answered is
// done; spans arriving later take a rollout off the list.
func TestCaptureOnlyRollouts(t *testing.T) {
	clk := &liveClock{t: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}
	dir := t.TempDir()
	h := newLiveHandler(t, dir, time.Minute, clk)

	writeAt(t, dir, "0-0.capture.jsonl", captureLine(clk.at(-2*time.Second), 800*time.Millisecond, 200, "get_weather", 11, 5)+
		captureLine(clk.t, 400*time.Millisecond, 200, "", 13, 6), clk.t)
	writeAt(t, dir, "0-1.capture.jsonl", captureLine(clk.t, 300*time.Millisecond, 200, "get_weather", 12, 7), clk.t)
	writeAt(t, dir, "1-0.capture.jsonl", captureLine(clk.t, 100*time.Millisecond, 500, "", 0, 0), clk.t)
	assert.Zero(t, listOf(t, h, "").All, "not listed while spans may still come")
	assert.Empty(t, h.runs().Runs)

	clk.advance(29 * time.Second)
	rescan(h)
	assert.Zero(t, listOf(t, h, "").All)
	clk.advance(time.Second)
	p := listOf(t, h, "")
	require.Equal(t, 3, p.All, "capture-only once 30 s without spans")
	assert.Equal(t, 3, p.NoSpans)
	assert.Equal(t, 1, p.InFlight, "0-1 asked for a tool: the agent goes on")
	assert.Equal(t, 1, p.Failed, "1-0's model call failed")
	rows := map[string]listRow{}
	for _, r := range p.Rows {
		rows[r.ID] = r
	}
	r := rows["0-0"]
	assert.True(t, r.CaptureOnly)
	assert.Equal(t, "OK", r.Status)
	assert.Equal(t, 2, r.ModelCalls)
	assert.Equal(t, -1, r.Spans)
	assert.EqualValues(t, 24, *r.InputTokens)
	assert.EqualValues(t, 11, *r.OutputTokens)
	assert.InDelta(t, 1200, *r.ModelMS, 0.01)
	assert.InDelta(t, 2800, r.DurationMS, 0.01, "from the first exchange's start to the last one's end")
	assert.True(t, rows["0-1"].InFlight)
	assert.Equal(t, "ERROR", rows["1-0"].Status)
	assert.Nil(t, rows["0-1"].Stalled, "in flight, but showed life within the threshold")

	runs := h.runs()
	require.Len(t, runs.Runs, 1)
	assert.Equal(t, "", runs.Runs[0].Run)
	assert.Equal(t, 3, runs.NoSpans)
	assert.Equal(t, 2, runs.Runs[0].Rollouts)
	assert.Equal(t, 1, runs.Runs[0].InFlight)

	// Its page: the model exchanges, no spans, no error.
	page, err := h.readRollout("0-0", "")
	require.NoError(t, err)
	assert.True(t, page.CaptureOnly)
	assert.False(t, page.InFlight)
	assert.Empty(t, page.Spans)
	require.Len(t, page.Exchanges, 2)
	assert.Equal(t, int64(0), page.Exchanges[0].Start, "times from the first exchange")
	assert.Equal(t, int64(2800*time.Millisecond), page.Duration)

	// 0-1 stays quiet past the threshold: stalled, from its capture alone.
	clk.advance(31 * time.Second)
	p = listOf(t, h, "")
	require.Len(t, p.Stalled, 1)
	st := p.Stalled[0].Stalled
	assert.Equal(t, "0-1", p.Stalled[0].ID)
	assert.InDelta(t, 61000, st.IdleMS, 0.01)
	assert.Equal(t, place{Server: "policy_model", Call: "model call 1 (status 200)", How: "its capture file's last model exchange completed then"}, st.Seen)
	assert.Equal(t, "the resources server", st.WaitsOn.Server)
	assert.Equal(t, "POST /get_weather, or the model call after it", st.WaitsOn.Call)

	// 0-1 grows: a final answer. It is done, and no longer stalled.
	writeAt(t, dir, "0-1.capture.jsonl", captureLine(clk.t, 300*time.Millisecond, 200, "", 1, 1), clk.t)
	p = listOf(t, h, "")
	assert.Empty(t, p.Stalled)
	assert.Zero(t, p.InFlight)

	// Spans of 0-0 arrive after all (a slow sender): it leaves the list.
	writeAt(t, dir, "0-0.spans.jsonl", consoleSpan("r1", "0-0", "POST", "SERVER", "nemo-gym/policy_model", clk.at(-time.Minute), clk.at(-time.Minute+time.Second), "/ng-rollout/0-0/v1/responses"), clk.t)
	rescan(h)
	p = listOf(t, h, "")
	assert.Equal(t, 2, p.All)
	assert.Equal(t, 2, h.runs().NoSpans)
}

// consoleSpan is a gymspans console line of one span of rollout id in run.
// A path that is a URL is the span's url.full, else its url.path; peer is
// its peer.service.
func consoleSpan(run, id, name, kind, service string, start, end time.Time, path string, peer ...string) string {
	attrs := map[string]any{"nemo.gym.rollout.id": id}
	switch {
	case strings.Contains(path, "://"):
		attrs["url.full"] = path
	case path != "":
		attrs["url.path"] = path
	}
	if len(peer) > 0 {
		attrs["peer.service"] = peer[0]
	}
	b, _ := json.Marshal(map[string]any{
		"name": name, "kind": "SpanKind." + kind,
		"context":    map[string]any{"trace_id": "0x" + strings.Repeat("a", 32), "span_id": fmt.Sprintf("0x%016x", end.UnixNano())},
		"parent_id":  nil,
		"start_time": start.UTC().Format(time.RFC3339Nano), "end_time": end.UTC().Format(time.RFC3339Nano),
		"status":     map[string]any{"status_code": "UNSET"},
		"attributes": attrs, "events": []any{}, "links": []any{},
		"resource":             map[string]any{"attributes": map[string]any{"service.name": service, "nemo.run.id": run}},
		"start_time_unix_nano": start.UnixNano(), "end_time_unix_nano": end.UnixNano(),
	})
	return string(b) + "\n"
}

// TestStalledRollout: a rollout in flight whose last sign of life (its
// latest span's end, its capture file's last write) is older than the
// threshold is stalled: listed first, with where it was last seen and the
// call it waits on; Watch counts it per run and reports it once; it leaves
// the count when it completes.
func TestStalledRollout(t *testing.T) {
	clk := &liveClock{t: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}
	dir := t.TempDir()
	h := newLiveHandler(t, dir, 10*time.Second, clk)
	require.Empty(t, h.Watch().Stalled, "the collector starts before the run")

	clk.advance(time.Second)
	t0 := clk.t
	writeAt(t, dir, "3-1.capture.jsonl", captureLine(t0.Add(-time.Second), time.Second, 200, "get_weather", 10, 5), t0.Add(-time.Second))
	writeAt(t, dir, "3-1.spans.jsonl",
		consoleSpan("run7", "3-1", "POST", "CLIENT", "nemo-gym/simple_agent", t0.Add(-2*time.Second), t0.Add(-time.Second),
			"http://127.0.0.1:8001/ng-rollout/3-1/v1/responses", "nemo-gym/openai_model")+
			consoleSpan("run7", "3-1", "POST", "SERVER", "nemo-gym/openai_model", t0.Add(-2*time.Second), t0.Add(-time.Second), "/ng-rollout/3-1/v1/responses")+
			consoleSpan("run7", "3-1", "POST", "SERVER", "nemo-gym/example_single_tool_call", t0.Add(-900*time.Millisecond), t0, "/ng-rollout/3-1/get_weather"), t0)
	writeAt(t, dir, "3-0.spans.jsonl", consoleSpan("run7", "3-0", "POST", "SERVER", "nemo-gym/openai_model", t0, t0, "/ng-rollout/3-0/v1/responses"), t0)
	rescan(h)
	clk.advance(9 * time.Second)
	p := listOf(t, h, "run7")
	assert.Equal(t, 2, p.InFlight)
	assert.Empty(t, p.Stalled, "9 s without a sign of life")
	rep := h.Watch()
	assert.Equal(t, 0, rep.Stalled["run7"])

	// 3-0 shows life again; 3-1 stays quiet.
	clk.advance(2 * time.Second)
	writeAt(t, dir, "3-0.spans.jsonl", consoleSpan("run7", "3-0", "POST", "SERVER", "nemo-gym/example_single_tool_call", clk.t, clk.t, "/ng-rollout/3-0/verify"), clk.t)
	p = listOf(t, h, "run7")
	require.Len(t, p.Stalled, 1)
	s := p.Stalled[0]
	assert.Equal(t, "3-1", s.ID)
	assert.Equal(t, 3, s.Spans, "its files counted")
	assert.Equal(t, float64(10000), p.StalledAfterMS)
	assert.InDelta(t, 11000, s.Stalled.IdleMS, 0.01)
	assert.Equal(t, t0.Format(time.RFC3339Nano), s.Stalled.At)
	assert.Equal(t, place{Server: "nemo-gym/example_single_tool_call", Call: "POST /ng-rollout/3-1/get_weather", How: "the latest span of its spans file ended then"}, s.Stalled.Seen)
	assert.Equal(t, "nemo-gym/openai_model", s.Stalled.WaitsOn.Server)
	assert.Equal(t, "POST /v1/responses", s.Stalled.WaitsOn.Call)
	var row listRow
	for _, r := range p.Rows {
		if r.ID == "3-1" {
			row = r
		}
	}
	assert.NotNil(t, row.Stalled, "marked in the list too")
	assert.Equal(t, 1, h.runs().Runs[0].Stalled)

	rep = h.Watch()
	assert.Equal(t, map[string]int{"run7": 1}, rep.Stalled)
	require.Len(t, rep.NewStalls, 1)
	assert.Equal(t, "nemo-gym/openai_model: POST /v1/responses", rep.NewStalls[0].Waits)
	assert.Equal(t, 11*time.Second, rep.NewStalls[0].Idle)
	rep = h.Watch()
	assert.Equal(t, map[string]int{"run7": 1}, rep.Stalled)
	assert.Empty(t, rep.NewStalls, "reported once")

	// Its page says so too.
	page, err := h.readRollout("3-1", "run7")
	require.NoError(t, err)
	require.NotNil(t, page.Stalled)
	assert.True(t, page.InFlight)

	// 3-1 completes: its root is in rollouts.jsonl.
	appendFile(t, filepath.Join(dir, "rollouts.jsonl"), rolloutsLine("run7", "3-1", "OK", 0, "01.000000"))
	rep = h.Watch()
	assert.Equal(t, map[string]int{"run7": 0}, rep.Stalled, "a run that had a stall reports 0 once it has none")
	assert.Empty(t, listOf(t, h, "run7").Stalled)
}

// TestStallOfAPastRun: Watch counts only rollouts that showed life while
// watched; the pages mark a past run's unfinished rollout stalled all the
// same (it never finished).
func TestStallOfAPastRun(t *testing.T) {
	clk := &liveClock{t: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}
	dir := t.TempDir()
	old := clk.at(-48 * time.Hour)
	writeAt(t, dir, "0-0.spans.jsonl", consoleSpan("old", "0-0", "POST /run", "SERVER", "nemo-gym/simple_agent", old, old, ""), old)
	h := newLiveHandler(t, dir, time.Minute, clk)
	rep := h.Watch()
	assert.Empty(t, rep.Stalled)
	assert.Empty(t, rep.NewStalls)
	p := listOf(t, h, "old")
	require.Len(t, p.Stalled, 1)
	assert.Contains(t, p.Stalled[0].Stalled.WaitsOn.How, "the agent's first step is a model call")

	off := newLiveHandler(t, dir, 0, clk)
	assert.Empty(t, listOf(t, off, "old").Stalled, "stalled_after 0 marks none")
}

// TestWatchTelemetryOff: Watch counts each capture-only rollout once.
func TestWatchTelemetryOff(t *testing.T) {
	clk := &liveClock{t: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}
	dir := t.TempDir()
	h := newLiveHandler(t, dir, time.Minute, clk)
	assert.Zero(t, h.Watch().NoSpansNew)
	for i := range 3 {
		writeAt(t, dir, fmt.Sprintf("%d-0.capture.jsonl", i), captureLine(clk.t, time.Second, 200, "", 1, 1), clk.t)
	}
	h.scan.next, h.scan.cost = time.Time{}, 0
	rep := h.Watch()
	assert.Zero(t, rep.NoSpansNew, "within 30 s of the first capture line")
	clk.advance(30 * time.Second)
	rep = h.Watch()
	assert.Equal(t, 3, rep.NoSpansNew)
	assert.Equal(t, 3, rep.NoSpans)
	assert.ElementsMatch(t, []string{"0-0", "1-0", "2-0"}, rep.NoSpansIDs)
	rep = h.Watch()
	assert.Zero(t, rep.NoSpansNew, "counted once")
	assert.Equal(t, 3, rep.NoSpans)
}

// TestDescribeStall: where a stalled rollout was last seen and the call it
// waits on, in Gym's agent loop, from generic and Gym-own spans.
func TestDescribeStall(t *testing.T) {
	at := func(s int) int64 { return int64(s) * int64(time.Second) }
	sp := func(name, kind, service string, end int, attrs spanKeys) *viewSpan {
		return &viewSpan{Name: name, Kind: kind, Service: service, endAbs: at(end), attrs: attrs}
	}
	path := func(p string) spanKeys { return spanKeys{URLPath: p} }
	run := sp("POST /run", "SERVER", "nemo-gym/simple_agent", 0, path("/run"))
	run.endAbs = 0
	modelSrv := sp("POST", "SERVER", "nemo-gym/openai_model", 2, path("/ng-rollout/3-1/v1/responses"))
	modelClient := sp("POST", "CLIENT", "nemo-gym/simple_agent", 2, spanKeys{URLFull: "http://127.0.0.1:9/ng-rollout/3-1/v1/responses", PeerService: "nemo-gym/openai_model"})
	selfServer := sp("POST /ng-rollout/{rollout_id}/v1/responses", "SERVER", "nemo-gym/simple_agent", 4, spanKeys{HTTPTarget: "/ng-rollout/3-1/v1/responses", HTTPRoute: "/ng-rollout/{rollout_id}/v1/responses"})
	selfClient := sp("POST", "CLIENT", "nemo-gym/simple_agent", 4, spanKeys{URLFull: "http://127.0.0.1:7/ng-rollout/3-1/v1/responses", PeerService: "nemo-gym/simple_agent"})
	toolClient := sp("POST", "CLIENT", "nemo-gym/simple_agent", 3, spanKeys{URLFull: "http://127.0.0.1:9/ng-rollout/3-1/get_weather", PeerService: "nemo-gym/example_single_tool_call"})
	recv := sp("POST http receive", "INTERNAL", "nemo-gym/openai_model", 1, spanKeys{})
	seedServer := sp("POST /ng-rollout/3-1/seed_session", "SERVER", "nemo-gym/example_single_tool_call", 1, path("/ng-rollout/3-1/seed_session"))
	seedServer.SpanID = "5eed"
	disconnect := sp("POST http receive", "INTERNAL", "nemo-gym/example_single_tool_call", 2, spanKeys{})
	disconnect.ParentID = "5eed"
	seedClient := sp("POST", "CLIENT", "nemo-gym/simple_agent", 1, spanKeys{HTTPURL: "http://127.0.0.1:9/ng-rollout/3-1/seed_session", PeerService: "nemo-gym/example_single_tool_call"})
	gymModel := sp("gym.model.responses", "INTERNAL", "nemo-gym/policy_model", 5, spanKeys{})
	verify := sp("gym.verify", "INTERNAL", "nemo-gym/example_single_tool_call", 6, spanKeys{})
	x := &exchange{Model: "policy_model", Dialect: "chat", StatusCode: 200, endAbs: at(2)}
	for _, tc := range []struct {
		name        string
		spans       []*viewSpan
		xs          []*exchange
		tools       []string
		seen, waits string
	}{
		{"no call yet, no model server known", []*viewSpan{recv}, nil, nil, "nemo-gym/openai_model: POST http receive", "the model server: POST /v1/responses"},
		{"after a tool call: the model", []*viewSpan{run, modelClient, modelSrv, recv, toolClient}, []*exchange{x}, []string{"get_weather"},
			"nemo-gym/simple_agent: POST /ng-rollout/3-1/get_weather", "nemo-gym/openai_model: POST /v1/responses"},
		{"after a model call that asked for a tool: the tool, or the model call after it", []*viewSpan{run, modelClient, modelSrv}, []*exchange{x}, []string{"get_weather"},
			"nemo-gym/simple_agent: POST /ng-rollout/3-1/v1/responses", "the resources server: POST /get_weather, or the model call after it"},
		{"held at its first model call: the model server the run's other rollouts called", []*viewSpan{run, seedClient}, nil, nil,
			"nemo-gym/simple_agent: POST /ng-rollout/3-1/seed_session", "nemo-gym/openai_model: POST /v1/responses"},
		{"an ASGI receive that ends after its response is seen as its request", []*viewSpan{run, seedClient, seedServer, disconnect}, nil, nil,
			"nemo-gym/example_single_tool_call: POST /ng-rollout/3-1/seed_session", "nemo-gym/openai_model: POST /v1/responses"},
		{"the agent's own /v1/responses is no model call", []*viewSpan{run, modelClient, toolClient, selfServer, selfClient}, nil, nil,
			"nemo-gym/simple_agent: POST /ng-rollout/{rollout_id}/v1/responses", "nemo-gym/openai_model: POST /v1/responses"},
		{"after a final answer: verify", []*viewSpan{run, toolClient, gymModel}, nil, nil,
			"nemo-gym/policy_model: gym.model.responses", "nemo-gym/example_single_tool_call: POST /verify"},
		{"after verify", []*viewSpan{run, gymModel, verify}, nil, nil,
			"nemo-gym/example_single_tool_call: gym.verify", "the end of its /run"},
		{"capture only: its model server by name, its route by dialect", nil, []*exchange{x}, nil,
			"policy_model: model call 1 (status 200)", "the resources server: POST /verify"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runModel := func() (string, string) { return "nemo-gym/openai_model", "/v1/responses" }
			if strings.HasPrefix(tc.name, "no call yet") {
				runModel = func() (string, string) { return "", "" }
			}
			seen, waits := describeStall(tc.spans, tc.xs, tc.tools, runModel)
			str := func(p place) string {
				if p.Server == "" {
					return p.Call
				}
				return p.Server + ": " + p.Call
			}
			assert.Equal(t, tc.seen, str(seen))
			assert.Equal(t, tc.waits, str(waits))
			assert.NotEmpty(t, waits.How)
		})
	}
}

func TestProbeTools(t *testing.T) {
	for line, want := range map[string][]string{
		`{"response":{"output":[{"type":"function_call","name":"get_weather"},{"type":"message"}]}}`:                  {"get_weather"},
		`{"response":{"choices":[{"message":{"tool_calls":[{"function":{"name":"a"}},{"function":{"name":"b"}}]}}]}}`: {"a", "b"},
		`{"response":{"content":[{"type":"text"},{"type":"tool_use","name":"bash"}]}}`:                                {"bash"},
		`{"response":{"output":[{"type":"message"}]}}`:                                                                nil,
	} {
		got, ok := probeTools([]byte(line))
		assert.True(t, ok, line)
		assert.Equal(t, want, got, line)
	}
	for _, bad := range []string{`not json`, `{"response":{"output":"<script>"}}`} {
		_, ok := probeTools([]byte(bad))
		assert.False(t, ok, bad)
	}
}

func TestLastLine(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("x", 300<<10)
	for name, tc := range map[string]struct {
		content string
		limit   int
		want    string
	}{
		"one":          {"a\n", 10, "a"},
		"two":          {"a\nbb\n", 10, "bb"},
		"torn tail":    {"a\nbb\ncc", 10, "bb"},
		"long last":    {"a\n" + long + "\n", 1 << 20, long},
		"over limit":   {"a\n" + long + "\n", 1 << 10, ""},
		"only a torn":  {"abc", 10, ""},
		"long, single": {long + "\n", 1 << 20, long},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "_"))
		require.NoError(t, os.WriteFile(path, []byte(tc.content), 0o600))
		f, err := os.Open(path)
		require.NoError(t, err)
		assert.Equal(t, tc.want, string(lastLine(f, int64(len(tc.content)), tc.limit)), name)
		f.Close()
	}
}

func TestMaxEndIn(t *testing.T) {
	assert.EqualValues(t, 1796115455528608000, maxEndIn([]byte(`{"name":"x","end_time_unix_nano":1796115455528608000,"scope":{}}`)))
	assert.EqualValues(t, 300, maxEndIn([]byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"endTimeUnixNano":"200"},{"endTimeUnixNano":"300"},{"endTimeUnixNano":"100"}]}]}]}`)))
	assert.Zero(t, maxEndIn([]byte(`{"end_time_unix_nano":null}`)))
	assert.Zero(t, maxEndIn([]byte(`{"end_time_unix_nano":99999999999999999999999}`)), "an overflow is no time")
}
