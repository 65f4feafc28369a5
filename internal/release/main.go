// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

// Command release packages built otelcol-gym binaries the way Gym's users get
// them (design §3): a Python wheel per platform that puts otelcol-gym on the
// venv's PATH, and with -archives a tar.gz per platform (binary, LICENSE,
// README.md), with -sums a SHA256SUMS of everything it wrote. `make wheel` and
// `make dist` run it:
//
//	release -out DIR [-archives] [-sums] BINARY=GOOS/GOARCH ...
//
// Every binary is checked before it is packaged (check.go: the executable
// format and architecture of its platform, CGO_ENABLED=0 and -trimpath in its
// build information, no shared library to install). The version is
// dist.version of builder-config.yaml (package otelcolgym), and every file
// written carries the time $SOURCE_DATE_EPOCH says (the Makefile sets it to
// the commit's time), so the same commit gives byte-identical wheels and
// archives.
//
// The wheel is written by wheel.go with archive/zip, not by a Python build
// backend: a wheel is a zip of the binary under <name>.data/scripts/ (which
// installers copy to the venv's bin/, as ruff's and uv's wheels do) and a
// .dist-info of three small text files and a RECORD of hashes, and writing
// it here needs no Python, no network and no second toolchain, and puts the
// entries' order and times in our hands.
package main // import "github.com/otelcol-gym/otelcol-gym/internal/release"

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "release: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	out := fs.String("out", "dist", "directory the wheels, archives and SHA256SUMS are written to")
	root := fs.String("root", ".", "the repository root, where LICENSE and README.md are")
	archives := fs.Bool("archives", false, "also write otelcol-gym_<version>_<os>_<arch>.tar.gz per binary")
	sums := fs.Bool("sums", false, "also write SHA256SUMS of every file written")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: release -out DIR [-archives] [-sums] BINARY=GOOS/GOARCH ...\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return errors.New("no BINARY=GOOS/GOARCH given")
	}
	var builds []build
	for _, a := range fs.Args() {
		path, plat, ok := strings.Cut(a, "=")
		if !ok {
			return fmt.Errorf("%q: want BINARY=GOOS/GOARCH, e.g. bin/otelcol-gym=linux/amd64", a)
		}
		p, err := parsePlatform(plat)
		if err != nil {
			return err
		}
		builds = append(builds, build{path: path, platform: p})
	}
	license, err := os.ReadFile(filepath.Join(*root, "LICENSE"))
	if err != nil {
		return err
	}
	readme, err := os.ReadFile(filepath.Join(*root, "README.md"))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	t, err := sourceDate()
	if err != nil {
		return err
	}
	written, err := writeAll(*out, builds, docs{license: license, readme: readme}, t, *archives)
	if err != nil {
		return err
	}
	if *sums {
		if err := writeSums(*out, written); err != nil {
			return err
		}
		written = append(written, sumsName)
	}
	for _, name := range written {
		fmt.Fprintln(stdout, filepath.Join(*out, name))
	}
	return nil
}
