// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	otelcolgym "github.com/otelcol-gym/otelcol-gym"
)

// The checks here read what release wrote as an installer or a user would,
// independently of how wheel.go and archive.go wrote it. TestHostWheel runs
// them on the host's wheel in `make test`, TestDist on all of `make dist`.

// repoDocs are the repository's LICENSE and README.md.
func repoDocs(t *testing.T) docs {
	t.Helper()
	license, err := os.ReadFile(filepath.Join("..", "..", "LICENSE"))
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	return docs{license: license, readme: readme}
}

// wheelPlatform is the platform a wheel's file name is for.
func wheelPlatform(name string) (platform, error) {
	prefix := pythonFileName + "-" + otelcolgym.Version + "-py3-none-"
	tag, ok := strings.CutPrefix(name, prefix)
	tag, ok2 := strings.CutSuffix(tag, ".whl")
	if !ok || !ok2 {
		return platform{}, fmt.Errorf("%s is not %s<platform>.whl", name, prefix)
	}
	for _, p := range platforms {
		switch {
		case p.goos == "linux" && tag == p.wheelPlatformTag([2]int{}):
			return p, nil
		case p.goos == "darwin" && strings.HasPrefix(tag, "macosx_") && strings.HasSuffix(tag, "_"+map[string]string{"amd64": "x86_64", "arm64": "arm64"}[p.goarch]):
			return p, nil
		}
	}
	return platform{}, fmt.Errorf("%s: platform tag %q is none of otelcol-gym's", name, tag)
}

// checkWheel checks a wheel file as pip reads it and returns the binary it
// installs: the file name's tags are the WHEEL file's and say the binary's
// platform; the entries are sorted (RECORD last), all with one time; RECORD
// lists every other entry once with its SHA-256 and size; the binary is an
// executable under .data/scripts/ that passes checkBinary.
func checkWheel(name string, data []byte, d docs) ([]byte, platform, error) {
	p, err := wheelPlatform(name)
	if err != nil {
		return nil, p, err
	}
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, p, fmt.Errorf("%s: %w", name, err)
	}
	base := pythonFileName + "-" + otelcolgym.Version
	script := base + ".data/scripts/otelcol-gym"
	info := base + ".dist-info/"
	wantNames := []string{script, info + "METADATA", info + "WHEEL", info + "licenses/LICENSE", info + "RECORD"}
	contents := map[string][]byte{}
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
		if !f.Modified.Equal(zr.File[0].Modified) {
			return nil, p, fmt.Errorf("%s: %s has time %v, %s %v", name, f.Name, f.Modified, zr.File[0].Name, zr.File[0].Modified)
		}
		wantMode := fs.FileMode(0o644)
		if f.Name == script {
			wantMode = 0o755
		}
		if f.Mode() != wantMode {
			return nil, p, fmt.Errorf("%s: %s has mode %v, want %v", name, f.Name, f.Mode(), wantMode)
		}
		rc, err := f.Open()
		if err != nil {
			return nil, p, err
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return nil, p, fmt.Errorf("%s: %s: %w", name, f.Name, err)
		}
		contents[f.Name] = b
	}
	if !slices.Equal(names, wantNames) {
		return nil, p, fmt.Errorf("%s holds %q, want %q", name, names, wantNames)
	}

	tag := strings.TrimSuffix(strings.TrimPrefix(name, base+"-py3-none-"), ".whl")
	var wantWheel strings.Builder
	wantWheel.WriteString("Wheel-Version: 1.0\nGenerator: otelcol-gym internal/release\nRoot-Is-Purelib: false\n")
	for _, pt := range strings.Split(tag, ".") {
		wantWheel.WriteString("Tag: py3-none-" + pt + "\n")
	}
	if got := string(contents[info+"WHEEL"]); got != wantWheel.String() {
		return nil, p, fmt.Errorf("%s: WHEEL is\n%s\nwant (the file name's tags)\n%s", name, got, wantWheel.String())
	}
	meta := string(contents[info+"METADATA"])
	for _, line := range []string{"Metadata-Version: 2.4", "Name: otelcol-gym", "Version: " + otelcolgym.Version, "License-Expression: Apache-2.0", "License-File: LICENSE"} {
		if !slices.Contains(strings.Split(meta, "\n"), line) {
			return nil, p, fmt.Errorf("%s: METADATA has no line %q:\n%s", name, line, meta)
		}
	}
	if !bytes.Equal(contents[info+"licenses/LICENSE"], d.license) {
		return nil, p, fmt.Errorf("%s: licenses/LICENSE is not the repository's LICENSE", name)
	}

	var recorded []string
	for _, line := range strings.Split(strings.TrimSuffix(string(contents[info+"RECORD"]), "\n"), "\n") {
		fields := strings.Split(line, ",")
		if len(fields) != 3 {
			return nil, p, fmt.Errorf("%s: RECORD line %q is not path,hash,size", name, line)
		}
		recorded = append(recorded, fields[0])
		if fields[0] == info+"RECORD" {
			if fields[1] != "" || fields[2] != "" {
				return nil, p, fmt.Errorf("%s: RECORD's own line %q has a hash", name, line)
			}
			continue
		}
		b, ok := contents[fields[0]]
		if !ok {
			return nil, p, fmt.Errorf("%s: RECORD lists %s, which it does not hold", name, fields[0])
		}
		sum := sha256.Sum256(b)
		if want := "sha256=" + base64.RawURLEncoding.EncodeToString(sum[:]); fields[1] != want {
			return nil, p, fmt.Errorf("%s: RECORD says %s of %s, its content has %s", name, fields[1], fields[0], want)
		}
		if size, err := strconv.Atoi(fields[2]); err != nil || size != len(b) {
			return nil, p, fmt.Errorf("%s: RECORD says %s is %s bytes, it has %d", name, fields[0], fields[2], len(b))
		}
	}
	if !slices.Equal(recorded, wantNames) {
		return nil, p, fmt.Errorf("%s: RECORD lists %q, want every entry once: %q", name, recorded, wantNames)
	}

	bin := contents[script]
	bi, err := checkBinary(bin, p)
	if err != nil {
		return nil, p, fmt.Errorf("%s: %s: %w", name, script, err)
	}
	if want := p.wheelPlatformTag(bi.minMacOS); tag != want {
		return nil, p, fmt.Errorf("%s: platform tag %s, its binary wants %s", name, tag, want)
	}
	return bin, p, nil
}

// checkArchive checks a release archive of p: LICENSE, README.md and the
// binary, flat and sorted, owned by 0:0 with one time, a gzip header without
// name or time, and returns the binary.
func checkArchive(name string, data []byte, p platform, d docs) ([]byte, error) {
	if want := p.archiveName(otelcolgym.Version); name != want {
		return nil, fmt.Errorf("archive %s, want %s", name, want)
	}
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if gz.Name != "" || !gz.ModTime.IsZero() {
		return nil, fmt.Errorf("%s: gzip header has name %q, time %v; want neither", name, gz.Name, gz.ModTime)
	}
	tr := tar.NewReader(gz)
	want := map[string][]byte{"LICENSE": d.license, "README.md": d.readme}
	var names []string
	var bin []byte
	var first *tar.Header
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if first == nil {
			first = h
		}
		names = append(names, h.Name)
		wantMode := int64(0o644)
		if h.Name == binaryName {
			wantMode = 0o755
		}
		if h.Typeflag != tar.TypeReg || h.Mode != wantMode || h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" || !h.ModTime.Equal(first.ModTime) {
			return nil, fmt.Errorf("%s: %s is type %c mode %o owner %d:%d (%q:%q) time %v; want a regular file, mode %o, 0:0, no names, time %v",
				name, h.Name, h.Typeflag, h.Mode, h.Uid, h.Gid, h.Uname, h.Gname, h.ModTime, wantMode, first.ModTime)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		if h.Name == binaryName {
			bin = b
		} else if !bytes.Equal(b, want[h.Name]) {
			return nil, fmt.Errorf("%s: %s is not the repository's", name, h.Name)
		}
	}
	if wantNames := []string{"LICENSE", "README.md", binaryName}; !slices.Equal(names, wantNames) {
		return nil, fmt.Errorf("%s holds %q, want %q", name, names, wantNames)
	}
	if _, err := checkBinary(bin, p); err != nil {
		return nil, fmt.Errorf("%s: %s: %w", name, binaryName, err)
	}
	return bin, nil
}

// checkDist checks a directory release wrote with -archives -sums: SHA256SUMS
// lists exactly a wheel and an archive per platform of want, with their
// hashes; both hold the same binary, which passes checkBinary; and packaging
// that binary again, with the time the wheel's entries have, gives the same
// bytes. It returns the binaries.
func checkDist(dir string, want []platform, d docs) (map[platform][]byte, error) {
	sums, err := readSums(dir)
	if err != nil {
		return nil, err
	}
	wheels := map[platform][]byte{}
	wheelNames := map[platform]string{}
	archives := map[platform]string{}
	for name, sum := range sums {
		got, err := fileSHA256(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		if got != sum {
			return nil, fmt.Errorf("%s: SHA-256 %s, %s says %s", name, got, sumsName, sum)
		}
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		if strings.HasSuffix(name, ".whl") {
			bin, p, err := checkWheel(name, data, d)
			if err != nil {
				return nil, err
			}
			if wheels[p] != nil {
				return nil, fmt.Errorf("%s lists two wheels for %s", sumsName, p)
			}
			wheels[p], wheelNames[p] = bin, name
			continue
		}
		found := false
		for _, p := range want {
			if name == p.archiveName(otelcolgym.Version) {
				archives[p], found = name, true
			}
		}
		if !found {
			return nil, fmt.Errorf("%s lists %s, neither a wheel nor an archive of %v", sumsName, name, want)
		}
	}
	for _, p := range want {
		if wheels[p] == nil || archives[p] == "" {
			return nil, fmt.Errorf("%s: no wheel or no archive for %s", sumsName, p)
		}
		data, err := os.ReadFile(filepath.Join(dir, archives[p]))
		if err != nil {
			return nil, err
		}
		bin, err := checkArchive(archives[p], data, p, d)
		if err != nil {
			return nil, err
		}
		if !bytes.Equal(bin, wheels[p]) {
			return nil, fmt.Errorf("%s and its wheel hold different binaries", archives[p])
		}
		wheel, err := os.ReadFile(filepath.Join(dir, wheelNames[p]))
		if err != nil {
			return nil, err
		}
		zr, err := zip.NewReader(bytes.NewReader(wheel), int64(len(wheel)))
		if err != nil {
			return nil, err
		}
		again, _, err := makeArtifacts(bin, p, d, zr.File[0].Modified, true)
		if err != nil {
			return nil, err
		}
		if again.wheelName != wheelNames[p] || !bytes.Equal(wheel, again.wheel) || !bytes.Equal(data, again.archive) {
			return nil, fmt.Errorf("%s: packaging its binary again gives other bytes than %s and %s", p, again.wheelName, archives[p])
		}
	}
	if len(sums) != 2*len(want) {
		return nil, fmt.Errorf("%s lists %d files, want %d (a wheel and an archive for each of %v)", sumsName, len(sums), 2*len(want), want)
	}
	return wheels, nil
}
