// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package distribution

import (
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var (
	// makeFuzzLine is a line of the Makefile's fuzz target: the target's
	// name and the package it is run in.
	makeFuzzLine = regexp.MustCompile(`-fuzz '\^(Fuzz\w+)\$\$' .* (\./\S+)\s*$`)
	// fuzzFunc is the declaration of a fuzz target.
	fuzzFunc = regexp.MustCompile(`(?m)^func (Fuzz\w+)\(\w+ \*testing\.F\)`)
)

// TestMakeFuzzRunsEveryTarget: `make fuzz` runs every fuzz target of the
// repository, each in the package that declares it. go test -fuzz with a
// pattern that matches nothing in the package passes without fuzzing, so a
// target moved to another package would stop being fuzzed in silence (as
// FuzzDecodeBlob did when the journal became its own package).
func TestMakeFuzzRunsEveryTarget(t *testing.T) {
	mk, err := os.ReadFile(filepath.Join(repoRoot, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]string{} // target → package dir, as the Makefile runs it
	for _, line := range strings.Split(string(mk), "\n") {
		m := makeFuzzLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if dir, dup := listed[m[1]]; dup {
			t.Errorf("the Makefile runs %s twice (%s, %s)", m[1], dir, m[2])
		}
		listed[m[1]] = filepath.Clean(m[2])
	}
	declared := map[string]string{} // target → package dir that declares it
	err = filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != repoRoot && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		dir, err := filepath.Rel(repoRoot, filepath.Dir(path))
		if err != nil {
			return err
		}
		for _, m := range fuzzFunc.FindAllStringSubmatch(string(src), -1) {
			declared[m[1]] = dir
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(declared) < 10 {
		t.Fatalf("found %d fuzz targets in the repository, fewer than it has", len(declared))
	}
	for _, name := range slices.Sorted(maps.Keys(declared)) {
		switch dir, ok := listed[name]; {
		case !ok:
			t.Errorf("%s (%s) is not in the Makefile's fuzz target", name, declared[name])
		case dir != declared[name]:
			t.Errorf("the Makefile fuzzes %s in ./%s; it is declared in ./%s", name, dir, declared[name])
		}
	}
	for _, name := range slices.Sorted(maps.Keys(listed)) {
		if _, ok := declared[name]; !ok {
			t.Errorf("the Makefile fuzzes %s, which no package declares", name)
		}
	}
}
