// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	otelcolgym "github.com/otelcol-gym/otelcol-gym"
)

// hostBinary is the binary `make build` made ($OTELCOL_GYM_BIN, which
// `make test` sets), and the host's platform.
func hostBinary(t *testing.T) (string, platform) {
	t.Helper()
	bin := os.Getenv("OTELCOL_GYM_BIN")
	if bin == "" {
		t.Skip("OTELCOL_GYM_BIN is not set: `make test` sets it to the bin/otelcol-gym that `make build` made")
	}
	p, err := parsePlatform(runtime.GOOS + "/" + runtime.GOARCH)
	if err != nil {
		t.Skipf("no wheel for this host: %v", err)
	}
	return bin, p
}

// TestHostWheel packages the binary `make build` made as `make wheel` does,
// with its archive and SHA256SUMS, checks them as an installer reads them,
// packages the binary again and requires the same bytes, and installs the
// wheel with pip into a fresh venv, whose otelcol-gym must say the version
// and the binary's commit.
func TestHostWheel(t *testing.T) {
	bin, host := hostBinary(t)
	dir := t.TempDir()
	var stdout bytes.Buffer
	if err := run([]string{"-out", dir, "-root", filepath.Join("..", ".."), "-archives", "-sums", bin + "=" + host.String()}, &stdout); err != nil {
		t.Fatal(err)
	}
	binaries, err := checkDist(dir, []platform{host}, repoDocs(t))
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(binaries[host], want) {
		t.Fatalf("the wheel's binary is not %s", bin)
	}
	wheels, _ := filepath.Glob(filepath.Join(dir, "*.whl"))
	if len(wheels) != 1 || !strings.Contains(stdout.String(), wheels[0]) {
		t.Fatalf("release wrote %q and printed\n%s", wheels, stdout.String())
	}

	t.Run("pip install", func(t *testing.T) {
		python, err := exec.LookPath("python3")
		if err != nil {
			t.Skip("no python3 on PATH")
		}
		venv := filepath.Join(t.TempDir(), "venv")
		command(t, python, "-m", "venv", venv)
		command(t, filepath.Join(venv, "bin", "python"), "-m", "pip", "install", "--no-index", "--no-deps", "--disable-pip-version-check", wheels[0])
		got := strings.TrimSpace(command(t, filepath.Join(venv, "bin", "otelcol-gym"), "--version"))
		if want := strings.TrimSpace(command(t, bin, "--version")); got != want {
			t.Errorf("the venv's otelcol-gym --version says\n%s\n%s says\n%s", got, bin, want)
		}
		want := "otelcol-gym version " + otelcolgym.Version + " (commit "
		if head, err := exec.Command("git", "-C", filepath.Join("..", ".."), "rev-parse", "HEAD").Output(); err == nil {
			want += strings.TrimSpace(string(head)) // -modified may follow, on a changed tree
		}
		if !strings.HasPrefix(got, want) {
			t.Errorf("the venv's otelcol-gym --version says\n%s\nwant it to start with\n%s", got, want)
		}
	})
}

// TestHostBinaryRebuilds builds the collector once more as `make build`
// does, into another directory, and requires the bytes of the binary
// `make build` made: the same commit gives the same binary.
func TestHostBinaryRebuilds(t *testing.T) {
	bin, _ := hostBinary(t)
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	dir := t.TempDir()
	command(t, "make", "--no-print-directory", "-C", filepath.Join("..", ".."), "collector", "BIN="+dir)
	again, err := os.ReadFile(filepath.Join(dir, "otelcol-gym"))
	if err != nil {
		t.Fatal(err)
	}
	first, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first, again) {
		t.Errorf("make collector gives other bytes than %s: the build is not reproducible (or the tree changed since)", bin)
	}
}

// TestDist checks what `make dist` wrote ($OTELCOL_GYM_DIST, which
// `make dist` sets): every platform's wheel and archive, SHA256SUMS, and when
// $OTELCOL_GYM_BIN is set, that the host's binary there is the one
// `make build` made in another build of the same commit.
func TestDist(t *testing.T) {
	dir := os.Getenv("OTELCOL_GYM_DIST")
	if dir == "" {
		t.Skip("OTELCOL_GYM_DIST is not set: `make dist` runs this test on what it wrote")
	}
	binaries, err := checkDist(dir, platforms, repoDocs(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range platforms {
		info, err := buildinfo.Read(bytes.NewReader(binaries[p]))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d bytes, %s", p, len(binaries[p]), info.GoVersion)
	}
	if bin := os.Getenv("OTELCOL_GYM_BIN"); bin != "" {
		host, err := parsePlatform(runtime.GOOS + "/" + runtime.GOARCH)
		if err != nil {
			t.Skip(err)
		}
		b, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, binaries[host]) {
			t.Errorf("%s and the %s binary of %s differ: two builds of the same commit are not byte-identical", bin, host, dir)
		}
	}
}

// TestCheckWheelRejects tampers with a wheel in the ways an installer would
// refuse or misinstall, and requires checkWheel to say so.
func TestCheckWheelRejects(t *testing.T) {
	d := repoDocs(t)
	w := wheel{version: otelcolgym.Version, platformTag: platforms[0].wheelPlatformTag([2]int{}), binary: []byte("\x7fELF not really"), license: d.license, modified: time.Date(2026, 12, 7, 16, 0, 0, 0, time.UTC)}
	var good bytes.Buffer
	if err := w.write(&good); err != nil {
		t.Fatal(err)
	}
	_, _, err := checkWheel(w.fileName(), good.Bytes(), d)
	if err == nil || !strings.Contains(err.Error(), "not a Go binary") {
		t.Fatalf("an untampered wheel of a fake binary: got %v, want only the binary refused", err)
	}

	rewrite := func(edit func(name string, data []byte) (string, []byte)) []byte {
		zr, err := zip.NewReader(bytes.NewReader(good.Bytes()), int64(good.Len()))
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		zw := zip.NewWriter(&out)
		for _, f := range zr.File {
			rc, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(rc)
			rc.Close()
			if err != nil {
				t.Fatal(err)
			}
			name, b := edit(f.Name, b)
			if name == "" {
				continue
			}
			h := f.FileHeader
			h.Name = name
			fw, err := zw.CreateHeader(&h)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := fw.Write(b); err != nil {
				t.Fatal(err)
			}
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		return out.Bytes()
	}
	for _, tc := range []struct {
		name, fileName, want string
		data                 []byte
	}{
		{"binary changed after RECORD", w.fileName(), "RECORD says", rewrite(func(n string, b []byte) (string, []byte) {
			if strings.HasSuffix(n, "/otelcol-gym") {
				return n, []byte("\x7fELF not really either")
			}
			return n, b
		})},
		{"LICENSE left out", w.fileName(), "holds", rewrite(func(n string, b []byte) (string, []byte) {
			if strings.HasSuffix(n, "/LICENSE") {
				return "", nil
			}
			return n, b
		})},
		{"WHEEL tags not the file name's", w.fileName(), "WHEEL is", rewrite(func(n string, b []byte) (string, []byte) {
			if strings.HasSuffix(n, "/WHEEL") {
				return n, bytes.ReplaceAll(b, []byte("x86_64"), []byte("aarch64"))
			}
			return n, b
		})},
		{"renamed for another platform", strings.ReplaceAll(w.fileName(), "x86_64", "aarch64"), "WHEEL is", good.Bytes()},
		{"not a wheel name", "otelcol_gym-0.0.1-py3-none-any.whl", "is not", good.Bytes()},
	} {
		if _, _, err := checkWheel(tc.fileName, tc.data, d); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error with %q", tc.name, err, tc.want)
		}
	}
}

// TestCheckBinaryRejects gives checkBinary the test binary itself, which is
// a Go binary but neither otelcol-gym nor built as the Makefile builds it.
func TestCheckBinaryRejects(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range platforms {
		if _, err := checkBinary(b, p); err == nil {
			t.Errorf("checkBinary(test binary, %s) accepted it", p)
		}
	}
	if _, err := checkBinary([]byte("#!/bin/sh\n"), platforms[0]); err == nil || !strings.Contains(err.Error(), "not a Go binary") {
		t.Errorf("checkBinary(a script) = %v", err)
	}
}

func TestWheelPlatformTag(t *testing.T) {
	for _, tc := range []struct {
		p     string
		minOS [2]int
		want  string
	}{
		{"linux/amd64", [2]int{}, "manylinux_2_17_x86_64.manylinux2014_x86_64"},
		{"linux/arm64", [2]int{}, "manylinux_2_17_aarch64.manylinux2014_aarch64"},
		{"darwin/amd64", [2]int{12, 0}, "macosx_12_0_x86_64"},
		{"darwin/arm64", [2]int{12, 0}, "macosx_12_0_arm64"},
		{"darwin/arm64", [2]int{11, 3}, "macosx_12_0_arm64"},
		{"darwin/amd64", [2]int{10, 15}, "macosx_10_15_x86_64"},
	} {
		p, err := parsePlatform(tc.p)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.wheelPlatformTag(tc.minOS); got != tc.want {
			t.Errorf("%s %v: %s, want %s", tc.p, tc.minOS, got, tc.want)
		}
	}
	if _, err := parsePlatform("windows/amd64"); err == nil {
		t.Error("parsePlatform(windows/amd64) accepted it")
	}
}

// TestArchiveIsReproducible writes an archive twice, its files in two orders.
func TestArchiveIsReproducible(t *testing.T) {
	files := []archiveFile{{"otelcol-gym", 0o755, []byte("bin")}, {"LICENSE", 0o644, []byte("l")}, {"README.md", 0o644, []byte("r")}}
	at := time.Date(2026, 12, 7, 16, 0, 0, 0, time.FixedZone("x", 3600))
	var a, b bytes.Buffer
	if err := writeArchive(&a, files, at); err != nil {
		t.Fatal(err)
	}
	if err := writeArchive(&b, []archiveFile{files[2], files[0], files[1]}, at.UTC()); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("the same files in another order, or the same time in another zone, give another archive")
	}
	_, err := checkArchive(platforms[0].archiveName(otelcolgym.Version), a.Bytes(), platforms[0], docs{license: []byte("l"), readme: []byte("r")})
	if err == nil || !strings.Contains(err.Error(), "otelcol-gym: not a Go binary") {
		t.Errorf("checkArchive: %v, want the layout accepted and the fake binary refused", err)
	}
}

func TestSums(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"b.whl", "a.tar.gz"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := writeSums(dir, []string{"b.whl", "a.tar.gz"}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, sumsName))
	// sha256sum's format, sorted by name.
	hexSum := func(s string) string { sum := sha256.Sum256([]byte(s)); return hex.EncodeToString(sum[:]) }
	if want := hexSum("a.tar.gz") + "  a.tar.gz\n" + hexSum("b.whl") + "  b.whl\n"; string(b) != want {
		t.Errorf("SHA256SUMS:\n%s\nwant\n%s", b, want)
	}
	sums, err := readSums(dir)
	if err != nil || len(sums) != 2 {
		t.Fatalf("readSums: %v %v", sums, err)
	}
	for name, sum := range sums {
		if got, _ := fileSHA256(filepath.Join(dir, name)); got != sum {
			t.Errorf("%s: %s, file has %s", name, sum, got)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, sumsName), []byte("abc  ../x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readSums(dir); err == nil {
		t.Error("readSums accepted a malformed line")
	}
}

func command(t *testing.T, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out)
}
