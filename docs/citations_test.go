// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

// Package docs holds the project's design document, design.md; this test
// keeps the citations of it honest.
package docs

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// sections is design.md's numbering. Files cite it as "design §N", so a
// number never changes meaning: new sections are added, none renumbered.
var sections = []string{"1", "2", "3", "4", "4.1", "4.2", "4.3", "4.4", "4.5", "4.6", "4.7", "4.8", "5", "5.1", "5.2", "6", "7", "8", "9", "10"}

// checkedExtensions are the files whose citations must point into
// design.md rather than at documents a user of the repository does not have.
var checkedExtensions = []string{".go", ".md", ".yaml", ".yml", ".sh"}

var (
	heading  = regexp.MustCompile(`(?m)^#{2,3} §(\d+(?:\.\d+)?) `)
	citation = regexp.MustCompile(`design(?:\.md)?\]?(?:\([^)]*\))?((?:[ ,/–-]*(?:and )?§\d+(?:\.\d+)?)+)`)
	number   = regexp.MustCompile(`§(\d+(?:\.\d+)?)`)
	anyTag   = regexp.MustCompile(`§(\d+(?:\.\d+)*)`)
	foreign  = regexp.MustCompile(`SPEC §|shared/reference|reference/[a-z-]+\.md`)
)

func TestDesignKeepsItsNumbering(t *testing.T) {
	b, err := os.ReadFile("design.md")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range heading.FindAllStringSubmatch(string(b), -1) {
		got = append(got, m[1])
	}
	if !slices.Equal(got, sections) {
		t.Errorf("design.md's sections are %q, want %q", got, sections)
	}
}

// TestCitationsPointIntoDesign: every "design §N" in the repository names a
// section of design.md, and no checked file cites the SPEC or the team's
// reference notes.
func TestCitationsPointIntoDesign(t *testing.T) {
	walkRepo(t, checkedExtensions, nil, func(rel, text string) {
		for _, m := range citation.FindAllStringSubmatch(text, -1) {
			for _, n := range number.FindAllStringSubmatch(m[1], -1) {
				if !slices.Contains(sections, n[1]) {
					t.Errorf("%s cites design §%s, which design.md does not have (%q)", rel, n[1], strings.TrimSpace(m[0]))
				}
			}
		}
		// Every § of a file outside design.md refers to design.md, also a
		// bare one that continues a citation ("§4.1 and §4.2", "(§4.4)").
		if rel != "design.md" && !strings.HasSuffix(rel, "citations_test.go") {
			for _, n := range anyTag.FindAllStringSubmatch(text, -1) {
				if !slices.Contains(sections, n[1]) {
					t.Errorf("%s has §%s, which design.md does not have", rel, n[1])
				}
			}
		}
		if !strings.HasSuffix(rel, "citations_test.go") {
			for _, m := range foreign.FindAllString(text, -1) {
				t.Errorf("%s cites %q, which a user of the repository does not have: cite design §N", rel, m)
			}
		}
	})
}
