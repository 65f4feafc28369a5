// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymview

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

func sp(id, parent string, start int64) *viewSpan {
	return &viewSpan{SpanID: id, ParentID: parent, Name: id, startAbs: start, Exchange: -1}
}

func shape(spans []*viewSpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, fmt.Sprintf("%d:%s/%d", s.Depth, s.SpanID, s.Descendants))
	}
	return out
}

func TestTreeOrder(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spans []*viewSpan
		want  []string
	}{
		{
			name:  "nested by parent, children by start",
			spans: []*viewSpan{sp("c2", "r", 30), sp("g", "c1", 25), sp("r", "", 10), sp("c1", "r", 20)},
			want:  []string{"0:r/3", "1:c1/1", "2:g/0", "1:c2/0"},
		},
		{
			name:  "a missing parent makes a root",
			spans: []*viewSpan{sp("a", "gone", 5), sp("r", "", 10)},
			want:  []string{"0:a/0", "0:r/0"},
		},
		{
			name:  "a cycle does not loop and loses no span",
			spans: []*viewSpan{sp("x", "y", 1), sp("y", "x", 2), sp("r", "", 0)},
			want:  []string{"0:r/0", "0:x/1", "1:y/0"},
		},
		{
			name:  "a span that is its own parent",
			spans: []*viewSpan{sp("s", "s", 1)},
			want:  []string{"0:s/0"},
		},
		{
			name:  "a span id twice: both shown",
			spans: []*viewSpan{sp("r", "", 0), sp("d", "r", 1), sp("d", "r", 2)},
			want:  []string{"0:r/2", "1:d/0", "1:d/0"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := treeOrder(tc.spans)
			assert.Equal(t, tc.want, shape(out))
			assert.Len(t, out, len(tc.spans), "one row per span")
		})
	}
	orphans := treeOrder([]*viewSpan{sp("a", "gone", 5)})
	assert.True(t, orphans[0].Orphan)
}
