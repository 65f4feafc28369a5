// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	otelcolgym "github.com/otelcol-gym/otelcol-gym"
)

// build is a built binary and the platform it was built for.
type build struct {
	path     string
	platform platform
}

// docs are the repository's files that ship beside the binary.
type docs struct {
	license, readme []byte
}

// artifacts are what is packaged from one binary.
type artifacts struct {
	wheelName, archiveName string
	wheel, archive         []byte // archive is nil unless asked for
}

// makeArtifacts checks bin, a binary for p, and packages it: its wheel and,
// when withArchive, its archive, every file carrying the time t.
func makeArtifacts(bin []byte, p platform, d docs, t time.Time, withArchive bool) (artifacts, binaryInfo, error) {
	info, err := checkBinary(bin, p)
	if err != nil {
		return artifacts{}, info, err
	}
	t = zipTime(t)
	w := wheel{
		version:     otelcolgym.Version,
		platformTag: p.wheelPlatformTag(info.minMacOS),
		binary:      bin,
		license:     d.license,
		modified:    t,
	}
	var a artifacts
	var buf bytes.Buffer
	if err := w.write(&buf); err != nil {
		return a, info, err
	}
	a.wheelName, a.wheel = w.fileName(), buf.Bytes()
	if withArchive {
		var buf bytes.Buffer
		files := []archiveFile{
			{binaryName, 0o755, bin},
			{"LICENSE", 0o644, d.license},
			{"README.md", 0o644, d.readme},
		}
		if err := writeArchive(&buf, files, t); err != nil {
			return a, info, err
		}
		a.archiveName, a.archive = p.archiveName(otelcolgym.Version), buf.Bytes()
	}
	return a, info, nil
}

// sourceDate is the time every packaged file carries: $SOURCE_DATE_EPOCH
// (reproducible-builds.org's convention; the Makefile sets it to the
// commit's time), else the zip format's first time.
func sourceDate() (time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		return zipTime(time.Time{}), nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q: want seconds since 1970: %w", s, err)
	}
	return zipTime(time.Unix(n, 0)), nil
}

// writeAll packages every build into dir, every file with time t, and
// returns the names of the files written.
func writeAll(dir string, builds []build, d docs, t time.Time, withArchives bool) ([]string, error) {
	var written []string
	for _, b := range builds {
		bin, err := os.ReadFile(b.path)
		if err != nil {
			return written, err
		}
		a, _, err := makeArtifacts(bin, b.platform, d, t, withArchives)
		if err != nil {
			return written, fmt.Errorf("%s (%s): %w", b.path, b.platform, err)
		}
		if err := os.WriteFile(filepath.Join(dir, a.wheelName), a.wheel, 0o644); err != nil {
			return written, err
		}
		written = append(written, a.wheelName)
		if a.archive != nil {
			if err := os.WriteFile(filepath.Join(dir, a.archiveName), a.archive, 0o644); err != nil {
				return written, err
			}
			written = append(written, a.archiveName)
		}
	}
	return written, nil
}
