// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// markdownFile is one .md file of the repository: its path from the root,
// its headings' anchors and its links, outside code.
type markdownFile struct {
	path    string
	lines   []string
	anchors map[string]bool
	links   []string
	tables  []table
}

var (
	headingLine = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	linkRef     = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	inlineCode  = regexp.MustCompile("`[^`]*`")
	inlineLink  = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// walkRepo calls fn with the path from the repository root (slash-separated)
// and the text of every file whose extension is in exts, outside build
// outputs and the directories named in skip.
func walkRepo(t *testing.T, exts, skip []string, fn func(rel, text string)) {
	t.Helper()
	root := ".."
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if slices.Contains([]string{".git", "bin", "node_modules", "out"}, d.Name()) || slices.Contains(skip, d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !slices.Contains(exts, filepath.Ext(path)) {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		fn(filepath.ToSlash(rel), string(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// readMarkdown reads every .md file of the repository but test data.
func readMarkdown(t *testing.T) map[string]*markdownFile {
	t.Helper()
	files := map[string]*markdownFile{}
	walkRepo(t, []string{".md"}, []string{"testdata"}, func(rel, text string) {
		files[rel] = parseMarkdown(rel, text)
	})
	return files
}

func parseMarkdown(path, text string) *markdownFile {
	f := &markdownFile{path: path, lines: strings.Split(strings.TrimSuffix(text, "\n"), "\n"), anchors: map[string]bool{}}
	seen := map[string]int{}
	inFence := false
	var rows []string
	for _, line := range append(f.lines, "") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		if strings.HasPrefix(line, "|") {
			rows = append(rows, line)
		} else if len(rows) > 0 {
			f.tables = append(f.tables, parseTable(path, rows))
			rows = nil
		}
		if m := headingLine.FindStringSubmatch(line); m != nil {
			slug := anchorOf(m[2])
			if n := seen[slug]; n > 0 {
				f.anchors[slug+"-"+strconv.Itoa(n)] = true
			} else {
				f.anchors[slug] = true
			}
			seen[slug]++
		}
		for _, m := range linkRef.FindAllStringSubmatch(inlineCode.ReplaceAllString(line, ""), -1) {
			f.links = append(f.links, m[1])
		}
	}
	return f
}

// anchorOf is the anchor GitHub gives a heading: its text, lowercased,
// without punctuation (backticks, §, dots, colons, arrows, ...), spaces
// turned into hyphens.
func anchorOf(heading string) string {
	heading = inlineLink.ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.Is(unicode.Mn, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestLinksResolve: every relative link of every Markdown file names a file
// or directory that exists, and an anchor its heading has, so that a section
// that moves takes its links with it.
func TestLinksResolve(t *testing.T) {
	files := readMarkdown(t)
	for _, f := range files {
		for _, link := range f.links {
			if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
				continue
			}
			target, anchor, _ := strings.Cut(link, "#")
			path := f.path
			if target != "" {
				path = filepath.ToSlash(filepath.Join(filepath.Dir(f.path), target))
				if _, err := os.Stat(filepath.Join("..", path)); err != nil {
					t.Errorf("%s links to %s, which does not exist", f.path, link)
					continue
				}
			}
			if anchor == "" {
				continue
			}
			to, ok := files[path]
			if !ok {
				continue // an anchor into a source file (a line) is not checked
			}
			if !to.anchors[anchor] {
				t.Errorf("%s links to %s: %s has no heading with anchor #%s", f.path, link, path, anchor)
			}
		}
	}
}

func TestAnchorOf(t *testing.T) {
	for heading, want := range map[string]string{
		"§4.3 One trace per rollout":                    "43-one-trace-per-rollout",
		"§9 Scale: agents → a pool of gateways":         "9-scale-agents--a-pool-of-gateways",
		"Real NeMo Gym end to end: `make test-realgym`": "real-nemo-gym-end-to-end-make-test-realgym",
		"Debug rollout `12-3`":                          "debug-rollout-12-3",
		"`combined_spans`: all or rest":                 "combined_spans-all-or-rest",
	} {
		if got := anchorOf(heading); got != want {
			t.Errorf("anchorOf(%q) = %q, want %q", heading, got, want)
		}
	}
}

// table is a Markdown table: its header and rows, cells trimmed.
type table struct {
	path   string
	header []string
	rows   [][]string
}

func parseTable(path string, lines []string) table {
	t := table{path: path}
	for i, line := range lines {
		if i == 1 && strings.Trim(line, "|-: ") == "" {
			continue // the delimiter row
		}
		// A cell may hold an escaped pipe.
		cells := strings.Split(strings.ReplaceAll(strings.Trim(strings.TrimSpace(line), "|"), `\|`, "\x00"), "|")
		for j := range cells {
			cells[j] = strings.TrimSpace(strings.ReplaceAll(cells[j], "\x00", "|"))
		}
		if i == 0 {
			t.header = cells
		} else {
			t.rows = append(t.rows, cells)
		}
	}
	return t
}

// settings returns a configuration table's rows as "key = default", the key
// being every cell before the default column; nil for any other table.
func (t table) settings() []string {
	col := slices.IndexFunc(t.header, func(h string) bool { return strings.EqualFold(h, "default") })
	if col < 1 {
		return nil
	}
	var out []string
	for _, row := range t.rows {
		if len(row) > col {
			out = append(out, strings.Join(row[:col], " · ")+" = "+row[col])
		}
	}
	return out
}

// duplicatedTables returns, for each pair of configuration tables that share
// at least half the settings of the smaller one (and at least two), the two
// tables. Components share a few keys with the same defaults (rollout_attribute,
// service_attributes, capture_dir); a table written twice shares nearly all.
func duplicatedTables(tables []table) [][2]table {
	var dups [][2]table
	for i, a := range tables {
		sa := a.settings()
		for _, b := range tables[i+1:] {
			sb := b.settings()
			if len(sa) == 0 || len(sb) == 0 {
				continue
			}
			shared := 0
			for _, s := range sa {
				if slices.Contains(sb, s) {
					shared++
				}
			}
			if shared >= 2 && 2*shared >= min(len(sa), len(sb)) {
				dups = append(dups, [2]table{a, b})
			}
		}
	}
	return dups
}

// TestConfigTablesAppearOnce: a configuration table (one with a "default"
// column) is written once in the repository, in the README of what it
// configures, and never in the root README: config.go's doc comments say the
// same for the code, a second table only drifts from the first.
func TestConfigTablesAppearOnce(t *testing.T) {
	var tables []table
	for _, f := range readMarkdown(t) {
		for _, tb := range f.tables {
			if tb.settings() == nil {
				continue
			}
			if f.path == "README.md" {
				t.Errorf("README.md has a configuration table (%s): it belongs in the component's README", strings.Join(tb.header, " | "))
			}
			tables = append(tables, tb)
		}
	}
	if len(tables) < 6 {
		t.Fatalf("found %d configuration tables; the components' READMEs have at least 6", len(tables))
	}
	for _, d := range duplicatedTables(tables) {
		t.Errorf("the configuration table of %s (%s) is written again in %s", d[0].path, d[0].rows[0][0], d[1].path)
	}
}

// TestDuplicatedTablesFindsACopy: the check above finds a table copied with
// its meanings reworded, and not two components that share a few keys.
func TestDuplicatedTablesFindsACopy(t *testing.T) {
	component := parseMarkdown("processor/gymprocessor/README.md", "| key | default |\n|---|---|\n"+
		"| `settle` | `5s` |\n| `wait` | `30s` |\n| `rollout_wait` | `2h` |\n| `rollout_attribute` | `nemo.gym.rollout.id` |\n").tables[0]
	copied := parseMarkdown("README.md", "| key | default | meaning |\n|---|---|---|\n"+
		"| `settle` | `5s` | delay before an upward decision |\n| `wait` | `30s` | longest wait |\n| `rollout_wait` | `2h` | for the parent |\n").tables[0]
	other := parseMarkdown("processor/gymcaptureprocessor/README.md", "| key | default | meaning |\n|---|---|---|\n"+
		"| `capture_wait` | `1s` | |\n| `poll_interval` | `100ms` | |\n| `rollout_attribute` | `nemo.gym.rollout.id` | |\n| `max_rollouts` | `4096` | |\n").tables[0]
	if got := duplicatedTables([]table{component, copied}); len(got) != 1 {
		t.Errorf("a copied table: %d duplicates found, want 1", len(got))
	}
	if got := duplicatedTables([]table{component, other}); len(got) != 0 {
		t.Errorf("two components sharing one key: %d duplicates found, want 0", len(got))
	}
}

// movedFromTheReadme are the places the root README's former sections live
// now; its first screen links each.
var movedFromTheReadme = []string{
	"e2e/README.md",       // the real-Gym tests
	"docs/development.md", // build, lint, ocb, the components, long runs
	"config/README.md",    // deployment shapes, their variables, the embedded default
	"docs/scaling.md",     // scaling out
	"bench/README.md",     // performance
	"SECURITY.md",         // security
	"docs/design.md#choices-made-where-the-rules-above-are-silent",
	"docs/viewer.md",       // the viewer's pages
	"cmd/gymsim/README.md", // gymsim with the collector
	"processor/gymcaptureprocessor/README.md#what-a-model-call-shows-in-a-backend", // GenAI
	"connector/gymgenaiconnector/README.md#the-metrics-in-prometheus",
	"processor/gymprocessor/README.md#configuration", // the config tables
	"processor/gymcaptureprocessor/README.md#configuration",
	"exporter/gymspansexporter/README.md#configuration",
	"connector/gymgenaiconnector/README.md#configuration",
	"extension/gymviewextension/README.md#configuration",
}

// TestReadmeFirstScreen: the root README is one screen where a user starts
// (what it is, tracing a Gym run, the clone path, what lands in the
// capture dir, the viewer, links), and links every section that moved out.
func TestReadmeFirstScreen(t *testing.T) {
	readme := readMarkdown(t)["README.md"]
	if n := len(readme.lines); n > 150 {
		t.Errorf("README.md has %d lines; its first screen is at most 150: move what is not where a user starts beside what it describes", n)
	}
	for _, section := range []string{"trace-your-gym-run", "from-a-clone", "what-lands-in-the-capture-dir", "the-rollout-viewer"} {
		if !readme.anchors[section] {
			t.Errorf("README.md has no section #%s", section)
		}
	}
	for _, moved := range movedFromTheReadme {
		if !slices.ContainsFunc(readme.links, func(l string) bool { return l == moved || strings.HasPrefix(l, moved+"#") }) {
			t.Errorf("README.md does not link %s", moved)
		}
	}
}
