// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package otelcolgym

import (
	"os"
	"regexp"
	"runtime/debug"
	"testing"
)

// TestVersionIsTheGeneratedOne ties the version this package reads to the one
// ocb wrote into cmd/otelcol-gym/main.go (internal/distribution checks that
// main.go is what ocb generates from the same manifest).
func TestVersionIsTheGeneratedOne(t *testing.T) {
	main, err := os.ReadFile("cmd/otelcol-gym/main.go")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*Version:\s*"([^"]*)",$`).FindSubmatch(main)
	if m == nil {
		t.Fatal("cmd/otelcol-gym/main.go: no BuildInfo Version line")
	}
	if string(m[1]) != Version {
		t.Errorf("main.go says version %q, builder-config.yaml %q: run make generate", m[1], Version)
	}
	// A PEP 440 release the wheels can carry as it is.
	if !regexp.MustCompile(`^[0-9]+(\.[0-9]+)*$`).MatchString(Version) {
		t.Errorf("dist.version %q is not a plain release number (N.N.N)", Version)
	}
}

func TestManifestVersionErrors(t *testing.T) {
	for _, manifest := range []string{"dist:\n  name: x\n", "dist: [", ""} {
		if v, err := manifestVersion([]byte(manifest)); err == nil {
			t.Errorf("manifestVersion(%q) = %q, want an error", manifest, v)
		}
	}
}

func TestVersionLine(t *testing.T) {
	settings := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	rev := "38a3253c0ffee00000000000000000000000beef"
	for _, tc := range []struct {
		name string
		info *debug.BuildInfo
		want string
	}{
		{"clean", &debug.BuildInfo{GoVersion: "go1.26.8", Settings: settings("GOOS", "linux", "GOARCH", "arm64", "vcs.revision", rev, "vcs.modified", "false")},
			"otelcol-gym version " + Version + " (commit " + rev + ", go1.26.8 linux/arm64)"},
		{"modified", &debug.BuildInfo{GoVersion: "go1.26.8", Settings: settings("GOOS", "darwin", "GOARCH", "amd64", "vcs.revision", rev, "vcs.modified", "true")},
			"otelcol-gym version " + Version + " (commit " + rev + "-modified, go1.26.8 darwin/amd64)"},
		{"no git", &debug.BuildInfo{GoVersion: "go1.26.8", Settings: settings("GOOS", "linux", "GOARCH", "amd64")},
			"otelcol-gym version " + Version + " (commit unknown, go1.26.8 linux/amd64)"},
		{"no build info", nil, "otelcol-gym version " + Version + " (commit unknown)"},
	} {
		if got := VersionLine("otelcol-gym", tc.info); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
	// The Makefile's stamp wins over go build's.
	commit = "c0ffee-modified"
	defer func() { commit = "" }()
	if got, want := Commit(&debug.BuildInfo{Settings: settings("vcs.revision", rev)}), "c0ffee-modified"; got != want {
		t.Errorf("Commit with the Makefile's stamp = %q, want %q", got, want)
	}
}

func TestAsksVersion(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"otelcol-gym", "--version"}, true},
		{[]string{"otelcol-gym", "-v"}, true},
		{[]string{"otelcol-gym", "--config", "c.yaml", "--version"}, true},
		{[]string{"otelcol-gym", "--version=true"}, true},
		{[]string{"otelcol-gym"}, false},
		{[]string{"otelcol-gym", "--config", "c.yaml"}, false},
		{[]string{"otelcol-gym", "view", "--version"}, false},
		{[]string{"otelcol-gym", "instrument", "--", "gym", "-v"}, false},
		{[]string{"otelcol-gym", "--set", "x=1", "--", "-v"}, false},
	} {
		if got := AsksVersion(tc.args); got != tc.want {
			t.Errorf("AsksVersion(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}
