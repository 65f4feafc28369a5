// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// TestReadmeComponentsTableIsWhatTheBinaryPrints: docs/development.md's table of
// components names, kind by kind and in order, what `otelcol-gym components`
// prints.
func TestReadmeComponentsTableIsWhatTheBinaryPrints(t *testing.T) {
	out, err := runCmd(t, time.Minute, nil, collectorBinary(t), "components")
	require.NoError(t, err, out)
	var printed map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(out), &printed))
	want := map[string][]string{}
	for kind, v := range printed {
		list, ok := v.([]any)
		if !ok {
			continue
		}
		want[kind] = []string{}
		for _, c := range list {
			m, _ := c.(map[string]any)
			name, _ := m["name"].(string)
			if name == "" {
				name, _ = m["scheme"].(string) // providers
			}
			want[kind] = append(want[kind], name)
		}
	}

	readme, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "development.md"))
	require.NoError(t, err)
	_, table, found := strings.Cut(string(readme), "What `bin/otelcol-gym components` prints:")
	require.True(t, found, "docs/development.md: the components table's lead-in is missing")
	row := regexp.MustCompile(`(?m)^\| ([a-z]+) \| (.*) \|$`)
	name := regexp.MustCompile("`([a-z_]+)`")
	got := map[string][]string{}
	for _, m := range row.FindAllStringSubmatch(strings.SplitN(table, "\n\n", 3)[1], -1) {
		if m[1] == "kind" {
			continue // the header
		}
		got[m[1]] = []string{}
		for _, n := range name.FindAllStringSubmatch(m[2], -1) {
			got[m[1]] = append(got[m[1]], n[1])
		}
	}
	for kind, names := range want {
		if !slices.Equal(got[kind], names) {
			t.Errorf("docs/development.md %s = %q, the binary prints %q", kind, got[kind], names)
		}
	}
	for kind := range got {
		if _, ok := want[kind]; !ok {
			t.Errorf("docs/development.md lists %s, which the binary does not print", kind)
		}
	}
}
