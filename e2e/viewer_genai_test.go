// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-gym/otelcol-gym/internal/modelcall"
)

// checkViewerTokens (design §4.7, §8): each rollout page lists its model
// exchanges' input and output tokens beside latency and TTFT, and the run
// page sums the run's tokens (from the GenAI metrics) to the captures' sums.
func checkViewerTokens(t *testing.T, b *browser, dir string, ids []string) {
	t.Helper()
	var wantIn, wantOut int64
	for i, id := range ids {
		var in, out []string
		eachFileLine(t, filepath.Join(dir, id+".capture.jsonl"), func(line []byte) {
			l, ok := modelcall.ParseLine(line)
			require.True(t, ok)
			in, out = append(in, tokenCell(l.InputTokens)), append(out, tokenCell(l.OutputTokens))
			if l.InputTokens != nil {
				wantIn += *l.InputTokens
				wantOut += *l.OutputTokens
			}
		})
		if i >= 4 {
			continue // the sums need every file; four pages show the cells
		}
		b.open("/rollout?run="+viewerRunID+"&id="+id, `document.getElementById('main').dataset.rendered`)
		assert.Equal(t, in, evalJS[[]string](b, `Array.from(document.querySelectorAll('#exchange-table tbody td.tokens-in'), (c) => c.textContent)`), "rollout %s: input tokens", id)
		assert.Equal(t, out, evalJS[[]string](b, `Array.from(document.querySelectorAll('#exchange-table tbody td.tokens-out'), (c) => c.textContent)`), "rollout %s: output tokens", id)
	}
	require.Positive(t, wantIn, "gymsim's captures carry usage")
	b.open("/run?run="+viewerRunID, `document.getElementById('main').dataset.loaded`)
	got := evalJS[string](b, `document.getElementById('sum-tokens') ? document.getElementById('sum-tokens').textContent : ''`)
	assert.Equal(t, fmt.Sprintf("tokens %s in / %s out", commas(wantIn), commas(wantOut)), got)
	assert.True(t, strings.HasPrefix(evalJS[string](b, `document.getElementById('sum-ttft').textContent`), "TTFT mean "))
}

func tokenCell(v *int64) string {
	if v == nil {
		return "–"
	}
	return commas(*v)
}

// commas is n as the viewer's fmtInt writes it (en-US grouping).
func commas(n int64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
