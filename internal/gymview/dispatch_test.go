// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymview

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

func TestOfThisDispatch(t *testing.T) {
	const s = int64(time.Second)
	span := func(start, end int64) *viewSpan { return &viewSpan{startAbs: start, endAbs: end} }
	x := func(n int, start, end int64) *exchange { return &exchange{N: n, startAbs: start, endAbs: end} }
	run1 := []*viewSpan{span(100*s, 160*s), span(110*s, 150*s)}
	for _, tc := range []struct {
		name     string
		spans    []*viewSpan
		xs       []*exchange
		inFlight bool
		kept     []int
		other    int
	}{
		{"its own calls", run1, []*exchange{x(0, 111*s, 112*s), x(1, 140*s, 149*s)}, false, []int{0, 1}, 0},
		{"a later run's calls (Gym cleared the file, then appended)", run1, []*exchange{x(0, 400*s, 401*s), x(1, 402*s, 404*s)}, false, nil, 2},
		{"an earlier run's call, before Gym cleared it", run1, []*exchange{x(0, 10*s, 11*s), x(1, 120*s, 121*s)}, false, []int{1}, 1},
		{"within the slack of another process's clock", run1, []*exchange{x(0, 98*s, 99*s), x(1, 159*s, 163*s)}, false, []int{0, 1}, 0},
		{"in flight: a call may end after the last span so far", run1, []*exchange{x(0, 155*s, 300*s)}, true, []int{0}, 0},
		{"in flight: still not before the dispatch", run1, []*exchange{x(0, 10*s, 11*s)}, true, nil, 1},
		{"no span: a capture-only rollout keeps them all", nil, []*exchange{x(0, 1*s, 2*s), x(1, 900*s, 901*s)}, false, []int{0, 1}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kept, other := ofThisDispatch(tc.xs, tc.spans, tc.inFlight)
			var ns []int
			for _, k := range kept {
				ns = append(ns, k.N)
			}
			assert.Equal(t, tc.kept, ns)
			assert.Equal(t, tc.other, other)
		})
	}
}

// Gym ran rollout 0-1 again, ten minutes later, into the same capture dir:
// it cleared 0-1.capture.jsonl and its model server wrote the new run's
// calls. The first run's page shows none of them, says why, and its
// duration is its spans' own.
func TestRolloutPageLeavesOutALaterRunsCaptures(t *testing.T) {
	dir := copyDir(t, filepath.Join("testdata", "gymsim_retry_in_flight"))
	page := func() rolloutAnswer {
		h := newTestHandler(t, dir, Options{})
		rec := get(t, h, "/api/rollout?run=goldrun&id=0-1")
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		var a rolloutAnswer
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &a))
		return a
	}
	before := page()
	require.NotEmpty(t, before.Exchanges, "the first run's page shows its calls")
	require.Zero(t, before.OtherDispatchExchanges)

	path := filepath.Join(dir, "0-1.capture.jsonl")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var later []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m))
		for _, k := range []string{"started_at", "completed_at"} {
			m[k] = m[k].(float64) + 600
		}
		out, err := json.Marshal(m)
		require.NoError(t, err)
		later = append(later, string(out))
	}
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(later, "\n")+"\n"), 0o640))

	after := page()
	assert.Empty(t, after.Exchanges, "no exchange of the later run")
	assert.Equal(t, len(later), after.OtherDispatchExchanges, "each counted")
	assert.Equal(t, before.Duration, after.Duration, "the duration is the first run's")
	require.Len(t, after.Spans, len(before.Spans), "its spans as before")
	for i, s := range after.Spans {
		assert.Equal(t, before.Spans[i].SpanID, s.SpanID)
		assert.Equal(t, -1, s.Exchange, "span %s joined to no exchange", s.SpanID)
	}
}

// rolloutAnswer is what the test reads of /api/rollout.
type rolloutAnswer struct {
	Duration               int64             `json:"duration"`
	Exchanges              []json.RawMessage `json:"exchanges"`
	OtherDispatchExchanges int               `json:"other_dispatch_exchanges"`
	Spans                  []struct {
		SpanID   string `json:"span_id"`
		Exchange int    `json:"exchange"`
	} `json:"spans"`
}

// A second run with the same rollout ids in the capture dir: the runs page
// says so, with the fix, and the log says it once.
func TestRepeatedRolloutIDsAreToldOnce(t *testing.T) {
	dir := copyDir(t, filepath.Join("testdata", "gymsim_retry_in_flight"))
	core, logs := observer.New(zap.WarnLevel)
	h := newTestHandler(t, dir, Options{Logger: zap.New(core)})
	runs := func() runsPage {
		rec := get(t, h, "/api/runs")
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		var p runsPage
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &p))
		return p
	}
	assert.Empty(t, runs().RepeatedID, "one run: nothing to say")

	f, err := os.OpenFile(filepath.Join(dir, "rollouts.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"rollout_id":"0-1","run_id":"secondrun","trace_id":"0af7651916cd43dd8448eb211c80319c","root_span_id":"b7ad6b7169203331","start_time":"2026-12-01T09:30:00Z","end_time":"2026-12-01T09:30:05Z","status":"UNSET","error_count":0,"service_name":"nemo-gym/orchestrator","name":"HTTP POST"}` + "\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())

	p := runs()
	assert.Equal(t, "0-1", p.RepeatedID)
	assert.Equal(t, []string{"goldrun", "secondrun"}, p.RepeatedRuns)
	runs()
	warned := logs.FilterMessageSnippet("more than one run with the same rollout ids").All()
	require.Len(t, warned, 1, "logged once")
	assert.Contains(t, warned[0].Message, "capture dir per run")
}
