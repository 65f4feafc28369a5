// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

// Package otelcolgym holds the version of the distribution (design §3). The
// version is written in one place, dist.version of builder-config.yaml: ocb
// writes it into cmd/otelcol-gym/main.go, this package reads it from the
// embedded manifest for `otelcol-gym --version` and for the wheels and
// archives of `make wheel` and `make dist` (internal/release); the commit is
// stamped by the Makefile's build (commit, below).
package otelcolgym // import "github.com/otelcol-gym/otelcol-gym"

import (
	_ "embed"
	"fmt"
	"runtime/debug"
	"strings"

	"go.yaml.in/yaml/v3"
)

//go:embed builder-config.yaml
var builderConfig []byte

// Version is dist.version of builder-config.yaml, e.g. "0.1.0".
var Version = mustManifestVersion(builderConfig)

func mustManifestVersion(manifest []byte) string {
	v, err := manifestVersion(manifest)
	if err != nil {
		panic(err)
	}
	return v
}

func manifestVersion(manifest []byte) (string, error) {
	var m struct {
		Dist struct {
			Version string `yaml:"version"`
		} `yaml:"dist"`
	}
	if err := yaml.Unmarshal(manifest, &m); err != nil {
		return "", fmt.Errorf("builder-config.yaml: %w", err)
	}
	if m.Dist.Version == "" {
		return "", fmt.Errorf("builder-config.yaml: dist.version is missing")
	}
	return m.Dist.Version, nil
}

// commit is the commit the binary was built from, as the Makefile's build
// sets it (-ldflags -X): git's HEAD, with "-modified" when the work tree had
// changes. The Makefile stamps it itself because go build's own stamp
// (vcs.revision) is missing from a build in a git worktree or with
// -buildvcs=false.
var commit string

// Commit is the commit a binary was built from: the Makefile's stamp, else
// go build's (vcs.revision, "-modified" when vcs.modified), else "unknown".
func Commit(info *debug.BuildInfo) string {
	if commit != "" {
		return commit
	}
	var rev, modified string
	if info != nil {
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					modified = "-modified"
				}
			}
		}
	}
	if rev == "" {
		return "unknown"
	}
	return rev + modified
}

// VersionLine is what `<command> --version` prints: the collector's own
// "<command> version <Version>" followed by the commit and the Go release
// and platform it was built with.
func VersionLine(command string, info *debug.BuildInfo) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s version %s (commit %s", command, Version, Commit(info))
	if info != nil {
		var goos, goarch string
		for _, s := range info.Settings {
			switch s.Key {
			case "GOOS":
				goos = s.Value
			case "GOARCH":
				goarch = s.Value
			}
		}
		fmt.Fprintf(&b, ", %s %s/%s", info.GoVersion, goos, goarch)
	}
	b.WriteString(")")
	return b.String()
}

// AsksVersion reports whether args (os.Args) ask the collector itself for its
// version: no subcommand comes first, and -v or --version is among them, as
// the collector's command line takes them.
func AsksVersion(args []string) bool {
	if len(args) < 2 || !strings.HasPrefix(args[1], "-") {
		return false
	}
	for _, a := range args[1:] {
		switch a {
		case "--":
			return false
		case "-v", "--version", "--version=true":
			return true
		}
	}
	return false
}
