// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymtest // import "github.com/otelcol-gym/otelcol-gym/internal/gymtest"

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// FuzzSeeds reads the entries of a Go fuzz corpus directory that hold one
// []byte each ("go test fuzz v1\n[]byte(\"...\")\n"), in name order, so one
// committed corpus can seed the fuzz targets of several packages (f.Add).
func FuzzSeeds(dir string) ([][]byte, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range ents {
		if e.Type().IsRegular() {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	var out [][]byte
	for _, n := range names {
		raw, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			return nil, err
		}
		body, ok := strings.CutPrefix(string(raw), "go test fuzz v1\n")
		body = strings.TrimSpace(body)
		if !ok || !strings.HasPrefix(body, "[]byte(") || !strings.HasSuffix(body, ")") || strings.Contains(body, "\n") {
			return nil, fmt.Errorf("%s: not a corpus entry of one []byte", n)
		}
		s, err := strconv.Unquote(body[len("[]byte(") : len(body)-1])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		out = append(out, []byte(s))
	}
	return out, nil
}
