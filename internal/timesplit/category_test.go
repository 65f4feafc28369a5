// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package timesplit

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAppendJSON(t *testing.T) {
	s := Split{1_234_567_000, 0, 12_500_000, 80_250_000, 3_100_000, 999}
	got := string(s.AppendJSON(nil))
	assert.Equal(t, `{"model":1234.567,"tools":0,"verify":12.5,"agent":80.25,"queue":3.1,"other":0.001}`, got)
	var m map[string]float64
	require.NoError(t, json.Unmarshal([]byte(got), &m))
	assert.Len(t, m, int(Categories))
}

// TestMicros: the parts in microseconds sum to the duration rounded, each
// within a microsecond of its exact value.
func TestMicros(t *testing.T) {
	for _, tc := range []struct {
		s    Split
		want [Categories]int64
	}{
		{Split{1500, 1500, 1500, 1500, 1500, 1500}, [Categories]int64{2, 2, 2, 1, 1, 1}}, // 9 µs
		{Split{999, 1, 0, 0, 0, 0}, [Categories]int64{1, 0, 0, 0, 0, 0}},
		{Split{400, 400, 0, 0, 0, 0}, [Categories]int64{1, 0, 0, 0, 0, 0}}, // 0.8 µs → 1
		{Split{400, 0, 0, 0, 0, 0}, [Categories]int64{0, 0, 0, 0, 0, 0}},
		{Split{2_000_000, 0, 0, 0, 0, 7}, [Categories]int64{2000, 0, 0, 0, 0, 0}},
	} {
		assert.Equal(t, tc.want, tc.s.Micros(), "%v", tc.s)
	}
	assert.Equal(t, "queue", Queue.String())
}
