// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

// Package otelcolgym holds the version of the distribution (design §3). The
// version is written in one place, dist.version of builder-config.yaml: ocb
// writes it into cmd/otelcol-gym/main.go, this package reads it from the
// embedded manifest for `otelcol-gym --version` and for the wheels and
// archives of `make wheel` and `make dist` (internal/release), and the
// commit comes from the build information go build stamps into every binary
// built in a git checkout (vcs.revision, vcs.time, vcs.modified).
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

// Commit is what go build stamped about the source a binary was built from:
// the revision, the commit's time (RFC 3339, UTC) and whether the work tree
// had changes. Revision is empty when the binary was built outside a git
// checkout (or with -buildvcs=false).
type Commit struct {
	Revision string
	Time     string
	Modified bool
}

// CommitOf reads the vcs.* settings of a binary's build information.
func CommitOf(info *debug.BuildInfo) Commit {
	var c Commit
	if info == nil {
		return c
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			c.Revision = s.Value
		case "vcs.time":
			c.Time = s.Value
		case "vcs.modified":
			c.Modified = s.Value == "true"
		}
	}
	return c
}

// String is the commit as `--version` prints it: the revision, with
// "-modified" when the work tree had changes.
func (c Commit) String() string {
	switch {
	case c.Revision == "":
		return "unknown (built outside a git checkout)"
	case c.Modified:
		return c.Revision + "-modified"
	default:
		return c.Revision
	}
}

// VersionLine is what `<command> --version` prints: the collector's own
// "<command> version <Version>" followed by the commit and the Go release
// and platform it was built with.
func VersionLine(command string, info *debug.BuildInfo) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s version %s (commit %s", command, Version, CommitOf(info))
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
