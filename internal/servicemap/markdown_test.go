// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package servicemap

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hostileNames try to break out of a Mermaid label, line, code fence or
// table cell, or to smuggle HTML, entities, directives or bidi tricks.
var hostileNames = []string{
	`he said "hi"`,
	"line1\nline2",
	"cr\rlf",
	"tab\there",
	"```",
	"`code`",
	"<script>alert(1)</script>",
	"a|b",
	"--> n1",
	"end",
	"%%{init: {'theme':'dark'}}%%",
	"#quot;",
	"&lt;&amp;",
	"[link](javascript:x)",
	"bad\xff\xfeutf8",
	"line\u2028sep",
	"bidi\u202eevil",
	"zero\u200bwidth",
	"émoji 🚀",
	`back\slash`,
	"*bold* _it_ ~s~ $m$",
	strings.Repeat("long", 50),
	"}{)(][",
	"nul\x00byte",
}

// Grammar of the Mermaid block we write. Label text is between quotes and
// must not hold a quote, pipe, backtick, angle bracket, percent, control
// character, or a '#' that is not an entity code.
var (
	reFlowchart = regexp.MustCompile(`^flowchart LR$`)
	reSubgraph  = regexp.MustCompile(`^  subgraph r([0-9]+)\["([^"]*)"\]$`)
	reNode      = regexp.MustCompile(`^    n([0-9]+)\["([^"]*)"\]$`)
	reEnd       = regexp.MustCompile(`^  end$`)
	reEdge      = regexp.MustCompile(`^  n([0-9]+) -->\|"([^"]*)"\| n([0-9]+)$`)
	reEntity    = regexp.MustCompile(`#[0-9]+;`)
)

func checkLabel(t testing.TB, label string) {
	t.Helper()
	text := reEntity.ReplaceAllString(strings.ReplaceAll(label, "<br/>", ""), "")
	assert.False(t, strings.ContainsAny(text, "\"|`<>$%#&\\"), "label %q holds syntax", label)
	for _, r := range text {
		assert.True(t, unicode.IsGraphic(r), "label %q holds %U", label, r)
	}
}

// checkMarkdown checks the structure of service_map.md whatever the names:
// one fenced Mermaid block of well-formed lines, nodes n1..nk defined once
// each, edges between defined nodes, and a table with one row of 8 cells
// per edge.
func checkMarkdown(t testing.TB, md []byte, edges int) {
	t.Helper()
	require.True(t, utf8.Valid(md), "valid UTF-8")
	lines := strings.Split(strings.TrimSuffix(string(md), "\n"), "\n")
	var fences []int
	for i, l := range lines {
		if strings.HasPrefix(l, "```") {
			fences = append(fences, i)
		}
		for _, r := range l {
			require.True(t, unicode.IsGraphic(r), "line %d holds %U: %q", i, r, l)
		}
	}
	require.Len(t, fences, 2, "exactly one fenced block")
	require.Equal(t, "```mermaid", lines[fences[0]])
	require.Equal(t, "```", lines[fences[1]])

	nodes := map[string]bool{}
	drawn := 0
	subgraphs := 0
	for _, l := range lines[fences[0]+1 : fences[1]] {
		switch {
		case reFlowchart.MatchString(l), reEnd.MatchString(l):
		case reSubgraph.MatchString(l):
			m := reSubgraph.FindStringSubmatch(l)
			subgraphs++
			assert.Equal(t, fmt.Sprint(subgraphs), m[1], "subgraph ids r1..rm in order")
			checkLabel(t, m[2])
		case reNode.MatchString(l):
			m := reNode.FindStringSubmatch(l)
			assert.False(t, nodes[m[1]], "node n%s defined twice", m[1])
			nodes[m[1]] = true
			assert.Equal(t, fmt.Sprint(len(nodes)), m[1], "node ids n1..nk in order")
			checkLabel(t, m[2])
		case reEdge.MatchString(l):
			m := reEdge.FindStringSubmatch(l)
			assert.True(t, nodes[m[1]] && nodes[m[3]], "edge between undefined nodes: %q", l)
			checkLabel(t, m[2])
			drawn++
		default:
			t.Fatalf("not a line of our Mermaid grammar: %q", l)
		}
	}
	assert.Equal(t, min(edges, maxDiagramEdges), drawn, "edges drawn")

	rows := 0
	for _, l := range lines[fences[1]+1:] {
		if !strings.HasPrefix(l, "| ") {
			continue
		}
		rows++
		cells := splitRow(l)
		require.Len(t, cells, 8, "row %q", l)
	}
	assert.Equal(t, edges+2, rows, "header, separator and one row per edge")
}

// splitRow splits a GFM table row at pipes not escaped by a backslash.
func splitRow(l string) []string {
	var cells []string
	var cur strings.Builder
	for i := 1; i < len(l); i++ { // skip the leading pipe
		switch {
		case l[i] == '\\' && i+1 < len(l):
			cur.WriteByte(l[i])
			cur.WriteByte(l[i+1])
			i++
		case l[i] == '|':
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(l[i])
		}
	}
	return cells
}

func TestMermaidText(t *testing.T) {
	for in, want := range map[string]string{
		"agent":           "agent",
		`a"b`:             "a#34;b",
		"a\nb":            "a\uFFFDb",
		"<b>":             "#60;b#62;",
		"x|y":             "x#124;y",
		"`":               "#96;",
		"#34;":            "#35;34;",
		"50%":             "50#37;",
		"bad\xff":         "bad\uFFFD",
		"host:8000/v1":    "host:8000/v1",
		"a\u2028b\u202ec": "a\uFFFDb\uFFFDc",
	} {
		assert.Equal(t, want, mermaidText(in), "%q", in)
	}
	long := mermaidText(strings.Repeat("x", maxLabelRunes+10))
	assert.Equal(t, strings.Repeat("x", maxLabelRunes)+"…", long)
	assert.Equal(t, strings.Repeat("é", maxLabelRunes), mermaidText(strings.Repeat("é", maxLabelRunes)), "exactly at the bound: not cut")
}

func TestMarkdownCell(t *testing.T) {
	for in, want := range map[string]string{
		"simple_agent": `simple\_agent`,
		"a|b":          `a\|b`,
		"<i>":          `\<i\>`,
		"x\ny":         "x\uFFFDy",
		`a\|b`:         `a\\\|b`,
		"host:8000":    "host:8000",
	} {
		assert.Equal(t, want, markdownCell(in), "%q", in)
	}
}

func TestDrawingIsBounded(t *testing.T) {
	dir := t.TempDir()
	m := newTestMap(t, dir, Options{})
	const n = maxDiagramEdges + 7
	for i := range n {
		m.Observe(Edge{Run: "r", Client: "agent", Server: fmt.Sprintf("s%04d", i), Latency: time.Millisecond})
	}
	require.NoError(t, m.Flush())
	md, err := os.ReadFile(filepath.Join(dir, "service_map.md"))
	require.NoError(t, err)
	checkMarkdown(t, md, n)
	assert.Contains(t, string(md), fmt.Sprintf("The drawing shows the first %d of %d edges", maxDiagramEdges, n))
}

// FuzzServiceNames: whatever the names, the JSON is valid and reads back
// with the names (invalid UTF-8 replaced), a second writer's read-merge-write
// keeps it so, and the Markdown is well formed. In memory, so the fuzzer
// runs fast; the file path is the same code (TestGoldenHostileNames).
func FuzzServiceNames(f *testing.F) {
	for i, name := range hostileNames {
		f.Add(name, hostileNames[(i+1)%len(hostileNames)], "model")
	}
	f.Add("", "agent", "agent")
	f.Fuzz(func(t *testing.T, run, client, server string) {
		m := newTestMap(t, "unused", Options{})
		m.Observe(Edge{Run: run, Client: client, Server: server, Latency: time.Millisecond})
		m.Observe(Edge{Run: run, Client: "agent", Server: server, Latency: 2 * time.Millisecond})
		m.Observe(Edge{Run: "r", Client: client, Server: "model", Latency: 3 * time.Millisecond, Error: true})
		want := map[edgeKey]bool{}
		for _, k := range []edgeKey{{run, client, server}, {run, "agent", server}, {"r", client, "model"}} {
			k = edgeKey{validUTF8(k.run), validUTF8(k.client), validUTF8(k.server)}
			if k.client != "" && k.server != "" && k.client != k.server {
				want[k] = true
			}
		}
		require.Len(t, m.delta, len(want))

		data := encodeTable(m.delta)
		require.True(t, json.Valid(data), "valid JSON:\n%s", data)
		onDisk, err := decodeTable(data, m.opts.MaxBins)
		require.NoError(t, err)
		require.Equal(t, tableState(m.delta), tableState(onDisk), "reads back")

		// Another writer adds its delta to what it read.
		onDisk.merge(m.delta)
		data = encodeTable(onDisk)
		require.True(t, json.Valid(data))
		again, err := decodeTable(data, m.opts.MaxBins)
		require.NoError(t, err)
		for k, e := range m.delta {
			require.Equal(t, 2*e.calls, again[k].calls)
		}
		checkMarkdown(t, encodeMarkdown(again, "service_map.json"), len(want))
	})
}
