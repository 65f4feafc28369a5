// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package timesplit

import (
	"bufio"
	"compress/gzip"
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
)

var update = flag.Bool("update", false, "rewrite testdata/*.jsonl from the recorded real-Gym runs")

// expectedSpan is what the golden of a recorded real-Gym run says the gym
// processor made of a span (../../testdata/real_gym_*/collector_expected.json).
type expectedSpan struct {
	SpanID  string         `json:"span_id"`
	Parent  string         `json:"parent_span_id"`
	Rollout string         `json:"rollout"`
	Attrs   map[string]any `json:"attrs"`
}

// TestRealGymRecordings splits every rollout of the recorded real-Gym runs,
// both telemetry modes (Gym's own spans; generic FastAPI/aiohttp spans), as
// the exporter sees them: the spans as Gym sent them, with what the gym
// processor decided (rollout, parent, peer.service, the root), in the order
// they arrived, each root last (the processor holds a root for settle,
// design §4.8). The golden (testdata/<run>.jsonl, -update rewrites it) was
// checked against the traces by hand (design §4.8 shows one); every rollout
// of these runs made two model calls, a tool call and a verify, so each has
// time in each of those.
func TestRealGymRecordings(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("..", "..", "testdata", "real_gym_*"))
	require.NoError(t, err)
	require.NotEmpty(t, dirs)
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			got := splitRecording(t, dir)
			path := filepath.Join("testdata", filepath.Base(dir)+".jsonl")
			if *update {
				require.NoError(t, os.WriteFile(path, got, 0o600))
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, string(want), string(got), "the splits of %s (-update rewrites them)", dir)
		})
	}
}

// splitRecording returns one line per rollout of the recorded run in dir,
// sorted: {"rollout_id":..., "time_split_ms":{...}}.
func splitRecording(t *testing.T, dir string) []byte {
	var golden struct {
		Spans []expectedSpan `json:"spans"`
	}
	raw, err := os.ReadFile(filepath.Join(dir, "collector_expected.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &golden))
	decided := map[string]expectedSpan{}
	for _, s := range golden.Spans {
		decided[s.SpanID] = s
	}

	types := map[string]string{}
	typeOf := func(service string) string { return types[service] }
	tr := NewTracker(1 << 20)
	type root struct {
		key Key
		f   Span
	}
	var roots []root
	for _, td := range readRequests(t, dir) {
		for i := 0; i < td.ResourceSpans().Len(); i++ {
			rs := td.ResourceSpans().At(i)
			p := Process{Service: str(rs.Resource().Attributes(), "service.name"),
				ServerType: str(rs.Resource().Attributes(), gymconv.ServerTypeAttribute), TypeOf: typeOf}
			if p.ServerType != "" {
				types[p.Service] = p.ServerType
			}
			for j := 0; j < rs.ScopeSpans().Len(); j++ {
				spans := rs.ScopeSpans().At(j).Spans()
				for k := 0; k < spans.Len(); k++ {
					span := spans.At(k)
					d, ok := decided[span.SpanID().String()]
					require.True(t, ok, "span %s is in the golden", span.SpanID())
					if d.Rollout == "" {
						continue
					}
					applyDecision(t, span, d)
					key, f := Key{"run", d.Rollout}, Facts(span, p)
					tr.Add(key, f)
					if d.Attrs[gymconv.RolloutRootAttribute] == true {
						roots = append(roots, root{key, f})
					}
				}
			}
		}
	}
	var lines []string
	for _, r := range roots {
		split, o := tr.Finish(r.key, r.f)
		require.Equal(t, Computed, o, "rollout %s", r.key[1])
		checkSplit(t, r.f, split)
		for _, c := range []Category{Model, Tools, Verify, Agent} {
			assert.Positive(t, split[c], "%s of rollout %s: %v", c, r.key[1], split)
		}
		lines = append(lines, `{"rollout_id":"`+r.key[1]+`","`+Field+`":`+string(split.AppendJSON(nil))+"}\n")
	}
	sort.Strings(lines)
	var out []byte
	for _, l := range lines {
		out = append(out, l...)
	}
	return out
}

// applyDecision gives span the parent and peer.service the gym processor
// gave it.
func applyDecision(t *testing.T, span ptrace.Span, d expectedSpan) {
	var parent pcommon.SpanID
	if d.Parent != "" {
		b, err := hex.DecodeString(d.Parent)
		require.NoError(t, err)
		copy(parent[:], b)
	}
	span.SetParentSpanID(parent)
	if peer, ok := d.Attrs["peer.service"].(string); ok {
		span.Attributes().PutStr("peer.service", peer)
	}
}

func readRequests(t testing.TB, dir string) []ptrace.Traces {
	f, err := os.Open(filepath.Join(dir, "requests.jsonl.gz"))
	require.NoError(t, err)
	defer f.Close()
	zr, err := gzip.NewReader(f)
	require.NoError(t, err)
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 64<<20)
	var out []ptrace.Traces
	for sc.Scan() {
		td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(sc.Bytes())
		require.NoError(t, err)
		out = append(out, td)
	}
	require.NoError(t, sc.Err())
	return out
}

func str(m pcommon.Map, k string) string {
	if v, ok := m.Get(k); ok {
		return v.AsString()
	}
	return ""
}
