// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymview

import (
	"encoding/json"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseSplit(t *testing.T) {
	for _, tc := range []struct {
		raw              string
		present, ok      bool
		want             splitMS
		flatRolloutsLine bool // the rollouts.jsonl line holding it is read without encoding/json
	}{
		{raw: ``, present: false, ok: true, flatRolloutsLine: true},
		{raw: `null`, present: false, ok: true, flatRolloutsLine: true},
		{raw: `{"model": 1234.567, "tools": 0.0, "verify": 12.5, "agent": 80.25, "queue": 3.1, "other": 0}`, present: true, ok: true,
			want: splitMS{1234.567, 0, 12.5, 80.25, 3.1, 0}, flatRolloutsLine: true},
		{raw: `{"other":1e3,"queue":2,"agent":3,"verify":4,"tools":5,"model":6,"future":7}`, present: true, ok: true,
			want: splitMS{6, 5, 4, 3, 2, 1000}, flatRolloutsLine: true},
		{raw: `{"mod\u0065l":1,"tools":0,"verify":0,"agent":0,"queue":0,"other":0}`, present: true, ok: true, want: splitMS{1}},
		{raw: `{"model":1,"tools":0,"verify":0,"agent":0,"queue":0}`, present: true, ok: false, flatRolloutsLine: true},
		{raw: `{"model":-1,"tools":0,"verify":0,"agent":0,"queue":0,"other":0}`, present: true, ok: false, flatRolloutsLine: true},
		{raw: `{"model":"1","tools":0,"verify":0,"agent":0,"queue":0,"other":0}`, present: true, ok: false, flatRolloutsLine: true},
		{raw: `{"model":1e999,"tools":0,"verify":0,"agent":0,"queue":0,"other":0}`, present: true, ok: false, flatRolloutsLine: true},
		{raw: `{"model":null,"tools":0,"verify":0,"agent":0,"queue":0,"other":0}`, present: true, ok: false, flatRolloutsLine: true},
		{raw: `[1,2,3,4,5,6]`, present: true, ok: false},
		{raw: `{"model":{"a":1}}`, present: true, ok: false},
	} {
		got, present, ok := parseSplit(json.RawMessage(tc.raw))
		assert.Equal(t, tc.present, present, tc.raw)
		assert.Equal(t, tc.ok, ok, tc.raw)
		if ok && present {
			assert.Equal(t, tc.want, got, tc.raw)
		}
		if tc.raw == "" {
			continue
		}
		// The whole rollouts.jsonl line: the split is its raw text, the
		// rest as before; gymspans' lines stay on the fast path.
		line := `{"rollout_id":"0-1","run_id":"r","time_split_ms":` + tc.raw + `,"status":"OK"}`
		var l rolloutLine
		assert.Equal(t, tc.flatRolloutsLine, decodeFlat([]byte(line), l.set), "decodeFlat %s", line)
		pl, lineOK := parseRolloutLine([]byte(line))
		require.True(t, lineOK, "a bad split is no bad line: %s", line)
		assert.Equal(t, "0-1", pl.RolloutID)
		assert.Equal(t, tc.raw, string(pl.TimeSplitMS))
	}
}

// TestRolloutSplitOfSeveralRoots: a rollout with several rollouts.jsonl
// lines shows the split of its longest root; a line without one, or with a
// malformed one, takes nothing away (the malformed one is counted).
func TestRolloutSplitOfSeveralRoots(t *testing.T) {
	dir := t.TempDir()
	line := func(start, end string, split string) string {
		s := `{"rollout_id":"0-0","run_id":"r","root_span_id":"` + start + `","start_time":"2026-08-21T12:00:` + start + `Z","end_time":"2026-08-21T12:00:` + end + `Z","status":"OK"`
		if split != "" {
			s += `,"time_split_ms":` + split
		}
		return s + "}\n"
	}
	split := func(model float64) string {
		b, _ := json.Marshal(splitMS{model, 1, 2, 3, 4, 5})
		return string(b)
	}
	appendFile(t, filepath.Join(dir, "rollouts.jsonl"),
		line("01.000000", "02.000000", split(1000))+ // 1 s
			line("03.000000", "06.000000", split(3000))+ // 3 s: the longest
			line("07.000000", "08.000000", split(999))+
			line("09.000000", "20.000000", "")+ // 11 s, no split
			line("10.000000", "30.000000", `{"model":"x"}`))
	ix := newRolloutIndex(newCaptureDir(dir), 0)
	require.NoError(t, ix.refresh())
	r := ix.byKey[rolloutKey{"r", "0-0"}]
	require.NotNil(t, r.Split)
	assert.Equal(t, 3000.0, r.Split.ms[0])
	assert.Equal(t, 5, r.Roots)
	assert.Equal(t, 1, ix.badSplits)
	assert.Equal(t, 0, ix.malformed)
}

func TestNearestRank(t *testing.T) {
	for _, tc := range []struct {
		values        []float64
		p50, p90, max float64
	}{
		{values: []float64{7}, p50: 7, p90: 7, max: 7},
		{values: []float64{1, 2}, p50: 1, p90: 2, max: 2},
		{values: []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, p50: 5, p90: 9, max: 10},
		{values: []float64{3, 1, 2, 10, 4, 5, 6, 7, 8, 9, 11}, p50: 6, p90: 10, max: 11},
	} {
		v := slices.Clone(tc.values)
		slices.Sort(v)
		assert.Equal(t, tc.p50, nearestRank(v, 0.5), "%v", tc.values)
		assert.Equal(t, tc.p90, nearestRank(v, 0.9), "%v", tc.values)
		assert.Equal(t, tc.max, nearestRank(v, 1), "%v", tc.values)
	}
}

// TestSplitStatsProperty: on random runs, each category's p50 and p90 are
// values of the category with at least half (nine tenths) of the
// rollouts at or below them and fewer below; max is the largest; the
// shares sum to 1; rollouts without a split are left out.
func TestSplitStatsProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		n := 1 + rng.IntN(60)
		var rows []*rollout
		var cols [numCategories][]float64
		for i := range n {
			r := &rollout{ID: string(rune('a' + i%26))}
			if rng.IntN(5) > 0 {
				var ms splitMS
				for c := range ms {
					ms[c] = float64(rng.IntN(50)) / 4 // ties happen
					cols[c] = append(cols[c], ms[c])
				}
				r.Split = &rolloutSplit{ms: ms}
			}
			rows = append(rows, r)
		}
		s := computeSplitStats("r", rows)
		require.Equal(t, n, s.Finished)
		require.Equal(t, len(cols[0]), s.WithSplit)
		if s.WithSplit == 0 {
			assert.Empty(t, s.Categories)
			continue
		}
		shares := 0.0
		for c, st := range s.Categories {
			assert.Equal(t, splitCategories[c], st.Name)
			assert.Equal(t, slices.Max(cols[c]), st.MaxMS)
			for _, q := range []struct {
				p float64
				v float64
			}{{0.5, st.P50MS}, {0.9, st.P90MS}} {
				atOrBelow, below := 0, 0
				for _, v := range cols[c] {
					if v <= q.v {
						atOrBelow++
					}
					if v < q.v {
						below++
					}
				}
				assert.Contains(t, cols[c], q.v)
				assert.GreaterOrEqual(t, float64(atOrBelow), q.p*float64(len(cols[c])))
				assert.Less(t, float64(below), q.p*float64(len(cols[c])))
			}
			shares += st.Share
		}
		if s.Categories[0].TotalMS+s.Categories[1].TotalMS+s.Categories[2].TotalMS+s.Categories[3].TotalMS+s.Categories[4].TotalMS+s.Categories[5].TotalMS > 0 {
			assert.InDelta(t, 1, shares, 1e-9)
		}
	}
}
