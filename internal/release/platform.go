// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"strings"
)

// platform is a Go target that otelcol-gym ships for.
type platform struct {
	goos, goarch string
}

// platforms are the targets of `make dist` (design §3).
var platforms = []platform{
	{"linux", "amd64"},
	{"linux", "arm64"},
	{"darwin", "amd64"},
	{"darwin", "arm64"},
}

func parsePlatform(s string) (platform, error) {
	goos, goarch, _ := strings.Cut(s, "/")
	p := platform{goos, goarch}
	for _, q := range platforms {
		if p == q {
			return p, nil
		}
	}
	return platform{}, fmt.Errorf("platform %q: otelcol-gym ships for linux/amd64, linux/arm64, darwin/amd64 and darwin/arm64", s)
}

func (p platform) String() string { return p.goos + "/" + p.goarch }

// wheelPlatformTag is the wheel's platform tag for a binary of p (compressed:
// tags joined by "."). Linux binaries are static (CGO_ENABLED=0), so they
// run on any glibc and are tagged with the oldest manylinux that installers
// still take, as ruff and uv tag theirs; a macOS binary is tagged with the
// oldest macOS its Mach-O header says it runs on (minMacOS, Go's own minimum,
// e.g. 12.0 for Go 1.26), so pip never installs it where it cannot start.
func (p platform) wheelPlatformTag(minMacOS [2]int) string {
	switch p.goos {
	case "linux":
		arch := map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[p.goarch]
		return "manylinux_2_17_" + arch + ".manylinux2014_" + arch
	default: // darwin
		arch := map[string]string{"amd64": "x86_64", "arm64": "arm64"}[p.goarch]
		major, minor := minMacOS[0], minMacOS[1]
		if major >= 11 && minor != 0 {
			// From macOS 11 on, installers know only N_0 tags: N.M needs N+1.
			major, minor = major+1, 0
		}
		return fmt.Sprintf("macosx_%d_%d_%s", major, minor, arch)
	}
}

// archiveName is the release archive of version for p.
func (p platform) archiveName(version string) string {
	return fmt.Sprintf("otelcol-gym_%s_%s_%s.tar.gz", version, p.goos, p.goarch)
}
